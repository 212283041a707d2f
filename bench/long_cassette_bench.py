"""Whether the read-only commands and a replay's cassette check stay interactive on a long run's cassette.

The format stores each request's whole history, so a run's cassette grows with the square of its
length: 200 model calls of ``replay_bench.py``'s agent make a 16 MB file. This script records two such
runs against the fake provider on 127.0.0.1 (the second with one tool result changed at three
quarters of the run, so the two diverge there), then times, each in a fresh process as a user runs
it, side by side in one run:

- ``blackbox verify A``, ``blackbox view A -o FILE`` and ``blackbox diff A B``: the whole command,
  interpreter start and imports included;
- a replay's cassette check: ``load_verified`` of A, as the pytest plugin checks a cassette before
  a replayed test (the process's imports are not counted: every test of a suite shares them).

Target: each under 2 s. Each figure is the median of ``--repeat`` runs, by the CPU time of the child
(user + system: other jobs on a shared machine barely move it) and by the wall clock. A command that
fails (``diff`` exits 0 once it compared the two, diverging or not), or a ``diff`` that finds no
divergence, stops the script.

Run: ``python bench/long_cassette_bench.py [--calls 200] [--repeat 3] [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import anthropic
import machine
import replay_bench as bench

from pytest_blackbox.testing import FakeProvider

TARGET_SECONDS = 2.0

#: A replay's cassette check, alone in a fresh process: its CPU time, the imports apart.
CHECK = """
import sys, time
from pathlib import Path
from pytest_blackbox.engine.cassettes import load_verified
start = time.process_time()
report, trace = load_verified(Path(sys.argv[1]))
if trace is None:
    raise SystemExit("the cassette did not pass its check")
print(time.process_time() - start)
"""


def record(work: Path, calls: int) -> tuple[Path, Path]:
    """Two recorded runs of ``calls`` model calls; the second's tool result at 3/4 of the run differs."""
    bench._calls["n"] = calls
    changed_at = calls * 3 // 4

    def changed(n: int) -> dict[str, Any]:
        value = bench.lookup(n)
        return {**value, "title": "changed"} if n == changed_at else value

    parent, child = work / "parent.json", work / "child.json"
    with FakeProvider() as fake:
        client = anthropic.Anthropic(base_url=fake.base_url, max_retries=0)
        for path, tool in ((parent, bench.lookup), (child, changed)):
            bench.live(fake, client, path, tool)()
    return parent, child


def timed(command: list[str]) -> tuple[float, float, str]:
    """CPU seconds (user + system) and wall seconds of one child process, and what it printed."""
    cpu, start = machine.children_cpu(), time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    cpu, wall = machine.children_cpu() - cpu, time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[1:])} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return cpu, wall, done.stdout


def jobs(parent: Path, child: Path, work: Path) -> dict[str, list[str]]:
    cli = [sys.executable, "-m", "pytest_blackbox.cli"]
    return {
        "blackbox verify": [*cli, "verify", str(parent)],
        "blackbox view": [*cli, "view", str(parent), "-o", str(work / "page.html")],
        "blackbox diff": [*cli, "diff", str(parent), str(child)],
        "replay's cassette check": [sys.executable, "-c", CHECK, str(parent)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="model calls per recorded run")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each command")
    parser.add_argument("--keep", metavar="DIR", help="record the cassettes in DIR (reused if they exist)")
    args = parser.parse_args()
    if args.calls < 4:
        parser.error("--calls takes a length of at least 4 model calls")
    warnings.simplefilter("ignore")
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key-not-secret")
    print(machine.describe())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        parent, child = work / "parent.json", work / "child.json"
        if not (parent.exists() and child.exists()):
            parent, child = record(work, args.calls)
        size = parent.stat().st_size
        print(f"cassettes: {args.calls} model calls, {size:,} bytes ({size // args.calls:,} per call)")
        commands = jobs(parent, child, work)
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeat):  # the commands take turns, so a busy moment lands on all alike
            for name, command in commands.items():
                cpu, wall, printed = timed(command)
                if name == "blackbox diff" and "First divergence at index" not in printed:
                    raise SystemExit("blackbox diff found no divergence between the two runs")
                results[name].append((float(printed) if name.startswith("replay") else cpu, wall))
    print(f"median of {args.repeat} runs each, in fresh processes (target: under {TARGET_SECONDS:.0f} s):")
    for name, runs in results.items():
        cpu = statistics.median(run[0] for run in runs)
        wall = statistics.median(run[1] for run in runs)
        verdict = "ok" if cpu < TARGET_SECONDS else "MISSED"
        note = "CPU, imports apart" if name.startswith("replay") else "CPU"
        print(f"  {name:<24} {cpu:5.2f} s {note}  ({wall:5.2f} s wall, whole process)  {verdict}")
    print(f"load average at the end: {machine.load()}")


if __name__ == "__main__":
    main()
