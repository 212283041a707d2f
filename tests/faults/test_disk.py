"""A disk that fills up or a write the file system refuses: a clear ``CassetteError``, no partial file.

``tests/trace/test_io.py`` already fails ``open`` (EROFS, a read-only directory), ``makedirs``,
``fsync`` and ``replace``; these tests add the failures that strike after part of the data is on
disk: ENOSPC in the middle of the write or on close, short writes, and a real file size limit
enforced by the kernel.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from multiprocessing.queues import Queue
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_blackbox.trace.errors import CassetteError
from pytest_blackbox.trace.io import dumps_trace, load_trace, save_trace
from pytest_blackbox.trace.model import Trace
from tests.machine import scaled

from .conftest import bulky_trace

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext

PREVIOUS = b"previous cassette"


def _message(target: Path, error: int) -> str:
    return f"could not write `{target}`: {os.strerror(error)}; any previous file there is unchanged"


def _fills_up_after(limit: int) -> Callable[[int, Any], int]:
    """``os.write`` that stores ``limit`` bytes for real, then finds the disk full."""
    real_write = os.write
    stored = 0

    def write(fd: int, data: Any) -> int:
        nonlocal stored
        room = limit - stored
        if room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = real_write(fd, memoryview(data)[:room])
        stored += written
        return written

    return write


def _failed_save(trace: Trace, target: Path) -> str:
    with pytest.raises(CassetteError) as caught:
        save_trace(trace, target)
    assert caught.value.path == str(target)
    return str(caught.value)


@pytest.mark.parametrize("previous", [True, False], ids=["over-a-cassette", "new-file"])
def test_disk_full_mid_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, previous: bool) -> None:
    target = tmp_path / "run.json"
    if previous:
        target.write_bytes(PREVIOUS)
    monkeypatch.setattr(os, "write", _fills_up_after(100_000))
    message = _failed_save(bulky_trace("run", "abc", 0.5), target)
    monkeypatch.undo()
    assert message == _message(target, errno.ENOSPC)
    assert os.listdir(tmp_path) == (["run.json"] if previous else [])
    if previous:
        assert target.read_bytes() == PREVIOUS


def test_disk_full_reported_on_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Some file systems (NFS, quotas with delayed allocation) only report a full disk on close."""
    target = tmp_path / "run.json"
    target.write_bytes(PREVIOUS)
    real_close = os.close

    def close(fd: int) -> None:
        real_close(fd)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "close", close)
    message = _failed_save(bulky_trace("run", "abc", 0.1), target)
    monkeypatch.undo()
    assert message == _message(target, errno.ENOSPC)
    assert os.listdir(tmp_path) == ["run.json"]
    assert target.read_bytes() == PREVIOUS


def test_short_writes_still_write_every_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    calls = 0

    def trickle(fd: int, data: Any) -> int:
        nonlocal calls
        calls += 1
        return real_write(fd, memoryview(data)[:4096])

    trace = bulky_trace("run", "abc", 0.1)
    target = tmp_path / "run.json"
    monkeypatch.setattr(os, "write", trickle)
    save_trace(trace, target)
    monkeypatch.undo()
    data = dumps_trace(trace).encode("utf-8")
    assert calls == -(-len(data) // 4096)
    assert target.read_bytes() == data


def _save_over_the_size_limit(trace: Trace, target: Path, limit: int, report: Queue[str]) -> None:
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG from write(2) instead of dying
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    try:
        save_trace(trace, target)
    except CassetteError as exc:
        report.put(str(exc))
    else:
        report.put("saved")


def test_a_real_file_size_limit_stops_the_write_half_way(forking: ForkContext, tmp_path: Path) -> None:
    """The kernel cuts the write at the limit (a real partial file), then refuses the rest."""
    target = tmp_path / "run.json"
    small = bulky_trace("small", "abc", 0.01)
    save_trace(small, target)
    report: Queue[str] = forking.Queue()
    writer = forking.Process(
        target=_save_over_the_size_limit, args=(bulky_trace("big", "xyz", 1), target, 200_000, report)
    )
    writer.start()
    message = report.get(timeout=scaled(20))
    writer.join(10)
    assert message == _message(target, errno.EFBIG)
    assert writer.exitcode == 0
    assert os.listdir(tmp_path) == ["run.json"]
    assert load_trace(target) == small
