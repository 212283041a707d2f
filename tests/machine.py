"""Deadlines from the machine's measured speed: every wait in the suite is ``scaled(seconds)``.

A fixed deadline written on an idle machine fails on a loaded one (a CI runner shared with other
jobs, a laptop compiling something, ``-n 2`` on two cores with inner runs of their own). So a test
states how long the wait takes on an idle machine of the project's kind, and :func:`scaled` stretches
it by how much slower a small reference workload runs right now than it does there. The factor is
measured again after :data:`REMEASURE_SECONDS`, since the load changes during a long run, and it is
never below 1: an idle fast machine keeps the deadlines as written.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time

#: The reference workload's wall time on an idle machine of the project's kind (2 cores), in seconds.
REFERENCE_SECONDS = 0.02
#: How long one measurement stands before the next call measures again.
REMEASURE_SECONDS = 30.0
_RUNS = 3

_lock = threading.Lock()
_measured: tuple[float, float] | None = None  # (when, factor)


def _workload() -> None:
    """What the suite does most: JSON in and out, and hashing (a cassette's canonical steps)."""
    steps = [
        {"index": n, "type": "model_input", "payload": {"messages": ["hello"] * 8, "n": n}} for n in range(60)
    ]
    for _ in range(100):
        text = json.dumps(steps, sort_keys=True, separators=(",", ":"))
        hashlib.sha256(json.loads(text)[0]["type"].encode() + text.encode()).hexdigest()


def _measure() -> float:
    """The workload's median wall time now, over the reference time (at least 1)."""
    times = []
    for _ in range(_RUNS):
        started = time.perf_counter()
        _workload()
        times.append(time.perf_counter() - started)
    return max(1.0, sorted(times)[_RUNS // 2] / REFERENCE_SECONDS)


def slowness() -> float:
    """How many times slower than the reference machine this one runs now (1 when idle and as fast)."""
    global _measured
    with _lock:
        now = time.monotonic()
        if _measured is None or now - _measured[0] > REMEASURE_SECONDS:
            _measured = (now, _measure())
        return _measured[1]


def scaled(seconds: float) -> float:
    """A deadline of ``seconds`` on an idle machine, stretched to the machine's speed now."""
    return seconds * slowness()
