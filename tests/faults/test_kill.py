"""kill -9 in the middle of ``save_trace``: the cassette is always a complete old or new version.

A writer process saves two multi-megabyte traces in turn to one path until it is killed. Half the
kills come after a random delay; the other half are aimed at the write itself (the moment its
temporary file shows up), so some of them are sure to land with a half-written file on disk.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_blackbox.trace.io import STALE_TEMP_SECONDS, load_trace, save_trace
from pytest_blackbox.trace.model import Trace
from tests.machine import scaled

from .conftest import TEMP_NAME, bulky_trace, leftovers, texts_of

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext

ROUNDS = 20


def _save_forever(first: Trace, second: Trace, path: Path) -> None:
    while True:
        save_trace(first, path)
        save_trace(second, path)


def _wait_for_temp_file(directory: Path, seen: set[str], deadline: float) -> None:
    """Return as soon as a new temporary file exists: the writer is inside a save right now."""
    while time.monotonic() < deadline:
        if any(name not in seen for name in leftovers(directory)):
            return
        time.sleep(0.001)  # the write itself lasts longer; don't starve the writer on a busy machine
    # The writer never reached a save in time (a loaded machine); the kill below still counts.


def _kill_round(forking: ForkContext, traces: tuple[Trace, Trace], target: Path, aimed: float | None) -> None:
    seen = set(leftovers(target.parent))
    writer = forking.Process(target=_save_forever, args=(*traces, target), daemon=True)
    writer.start()
    if aimed is None:
        _wait_for_temp_file(target.parent, seen, time.monotonic() + scaled(2.0))
    else:
        time.sleep(aimed)
    writer.kill()
    writer.join(scaled(10))
    assert writer.exitcode == -signal.SIGKILL  # killed, not stopped by an error of its own


def test_kill_during_save_keeps_a_complete_cassette(forking: ForkContext, tmp_path: Path) -> None:
    old = bulky_trace("old", "abc", 2)
    new = bulky_trace("new", "xyz", 2)
    expected = texts_of(old, new)
    target = tmp_path / "run.json"
    save_trace(old, target)
    pick = random.Random(3)
    for round_ in range(ROUNDS):
        delay = pick.uniform(0, 0.2) if round_ % 2 else None
        _kill_round(forking, (new, old) if round_ % 4 < 2 else (old, new), target, delay)
        state = target.read_bytes()
        complete = state in expected
        assert complete, f"round {round_}: the cassette holds {len(state)} bytes that are neither version"
        assert all(TEMP_NAME.fullmatch(name) for name in leftovers(tmp_path)), leftovers(tmp_path)
    assert load_trace(target) in (old, new)
    # Kills aimed at the write leave its temporary file: proof that some kills hit a save mid-way.
    assert leftovers(tmp_path) != []


def test_files_left_by_killed_writers_are_removed_once_stale(forking: ForkContext, tmp_path: Path) -> None:
    trace = bulky_trace("run", "abc", 2)
    target = tmp_path / "run.json"
    save_trace(trace, target)
    for _ in range(10):  # an aimed kill can still come a moment too late on a busy machine
        _kill_round(forking, (trace, trace), target, aimed=None)
        if len(leftovers(tmp_path)) >= 2:
            break
    left = leftovers(tmp_path)
    assert left != [] and all(TEMP_NAME.fullmatch(name) for name in left)
    save_trace(trace, target)
    assert leftovers(tmp_path) == left  # fresh ones may belong to a live writer: kept
    past = time.time() - STALE_TEMP_SECONDS - 60
    for name in left:
        os.utime(tmp_path / name, (past, past))
    save_trace(trace, target)
    assert leftovers(tmp_path) == []
    assert load_trace(target) == trace


def test_only_this_cassettes_own_stale_temp_files_are_removed(tmp_path: Path) -> None:
    past = time.time() - STALE_TEMP_SECONDS - 60
    kept = [
        ".other.json.0123456789ab.tmp",  # another cassette's
        "run.json.tmp",  # not the pattern save_trace writes
        ".run.json.notes.tmp",
        ".run.json.0123456789AB.tmp",
        ".run.json.0123456789ab.tmp.bak",
    ]
    for name in [".run.json.0123456789ab.tmp", *kept]:
        (tmp_path / name).write_bytes(b"{")
        os.utime(tmp_path / name, (past, past))
    (tmp_path / ".run.json.aaaaaaaaaaaa.tmp").mkdir()
    os.utime(tmp_path / ".run.json.aaaaaaaaaaaa.tmp", (past, past))
    save_trace(bulky_trace("run", "abc", 0.01), tmp_path / "run.json")
    assert leftovers(tmp_path) == sorted([*kept, ".run.json.aaaaaaaaaaaa.tmp"])
