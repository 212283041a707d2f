"""Two processes recording the same cassette at once: every reader sees one complete version.

Each writer saves its own valid trace fifty times; a third process keeps loading the cassette
meanwhile. No read may ever fail or see anything but the starting cassette or one writer's
complete text, and the last save wins whole.
"""

from __future__ import annotations

from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_blackbox.trace.io import dumps_trace, load_trace, save_trace
from pytest_blackbox.trace.model import Trace
from tests.machine import scaled

from .conftest import bulky_trace, leftovers, texts_of

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext

SAVES = 50


def _write_repeatedly(trace: Trace, target: Path, start: Barrier) -> None:
    start.wait(20)
    for _ in range(SAVES):
        save_trace(trace, target)


def _poll(
    target: Path,
    expected: set[bytes],
    start: Barrier,
    writers_done: Event,
    report: Queue[tuple[int, list[str]]],
) -> None:
    """Load until the writers are done, then once more; report the read count and every bad read."""
    reads = 0
    bad: list[str] = []
    start.wait(20)
    while True:
        finished = writers_done.is_set()
        try:
            seen = dumps_trace(load_trace(target)).encode("utf-8")
        except Exception as exc:  # a partial file is a CassetteError; anything else is a bug too
            bad.append(f"read {reads}: {type(exc).__name__}: {exc}")
        else:
            if seen not in expected:
                bad.append(f"read {reads}: a verifying cassette that no process wrote")
        reads += 1
        if finished:
            break
    report.put((reads, bad))


def test_two_writers_and_a_reader(forking: ForkContext, tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    start_trace = bulky_trace("start", "o", 0.2)
    first = bulky_trace("first", "ab", 0.2)
    second = bulky_trace("second", "cd", 0.2)
    save_trace(start_trace, target)
    start = forking.Barrier(3)
    writers_done = forking.Event()
    report: Queue[tuple[int, list[str]]] = forking.Queue()
    writers = [forking.Process(target=_write_repeatedly, args=(t, target, start)) for t in (first, second)]
    reader = forking.Process(
        target=_poll, args=(target, texts_of(start_trace, first, second), start, writers_done, report)
    )
    for process in (*writers, reader):
        process.start()
    for writer in writers:
        writer.join(60)
    writers_done.set()
    reads, bad = report.get(timeout=scaled(60))
    reader.join(10)
    assert [writer.exitcode for writer in writers] == [0, 0]
    assert reader.exitcode == 0
    assert bad == []
    assert reads >= 1
    assert target.read_bytes() in texts_of(first, second)
    assert leftovers(tmp_path) == []
