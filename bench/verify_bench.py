"""How close ``verify`` comes to the cost of merely reading and hashing a cassette, and its memory.

Builds cassettes of 1,000, 10,000 and 100,000 steps with realistic payloads (a coding agent's tool
rounds), then measures, side by side in one run:

(a) ``verify_trace(path)`` end to end (read, strict parse, version, schema, hash chain, neutrality,
    replayability);
(b) the floor: read + ``json.loads`` + per step ``json.dumps(sort_keys, compact, ensure_ascii=False)``
    + SHA-256, inline, with no checks at all.

Each figure is the median of ``--repeat`` runs, each in a fresh process: CPU time (fairer than wall
time on a shared machine), the growth of the peak resident set size, and, in one more process each,
the peak of ``tracemalloc``. Targets: (a) ≤ 1.5x (b) in CPU time, and ≤ 3x the file size in memory.

Run: ``python bench/verify_bench.py [--steps 1000,10000,100000] [--repeat 5] [--keep DIR] [--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.trace.io import save_trace
from pytest_blackbox.trace.model import Trace
from pytest_blackbox.trace.recorder import TraceRecorder

TARGET_RATIO = 1.5
TARGET_MEMORY = 3.0
HISTORY_CAP = 8  # messages kept in each model_input: a realistic window, not an O(n²) file
START_MS = 1_790_672_700_350

TOOLS = [
    {
        "name": "get_telemetry",
        "description": "Read the latest telematics data points for a vehicle.",
        "inputSchema": {
            "type": "object",
            "properties": {"vehicle_id": {"type": "string"}},
            "required": ["vehicle_id"],
        },
    },
    {
        "name": "lookup_dtc",
        "description": "Look up an OBD-II trouble code.",
        "inputSchema": {"type": "object"},
    },
]


def _telemetry(round_: int) -> dict[str, Any]:
    return {
        "vehicle_id": f"VAN-{round_ % 40}",
        "data": [
            {
                "path": "Vehicle.Speed",
                "dp": {"value": 52.5 + round_ % 7 * 0.25, "ts": "2026-09-29T08:52:00Z"},
            },
            {"path": "Vehicle.Powertrain.Range", "dp": {"value": 312.75, "ts": "2026-09-29T08:52:00Z"}},
            {"path": "Vehicle.Diagnostics.DTCList", "dp": {"value": ["P0217"], "ts": "2026-09-29T08:52:00Z"}},
        ],
        "confidence": 0.93,
    }


def build_trace(steps: int) -> Trace:
    """Exactly ``steps`` steps: tool rounds of 4, run-level markers to pad, then the final answer."""
    recorder = TraceRecorder("bench-run", START_MS)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Triage every van with an open alert."}]
    clock = START_MS
    round_ = 0
    while len(recorder) + 4 <= steps - 3:
        call_id = f"call-{round_}"
        tool_input = {"vehicle_id": f"VAN-{round_ % 40}"}
        result = _telemetry(round_)
        text = f"Checking VAN-{round_ % 40}'s latest readings (round {round_})."
        payloads: list[tuple[Any, Any]] = [
            (
                "model_input",
                {"messages": messages[-HISTORY_CAP:], "tools": TOOLS, "model": "claude-haiku-4-5"},
            ),
            (
                "model_output",
                {
                    "type": "tool_calls",
                    "calls": [{"toolCallId": call_id, "toolName": "get_telemetry", "toolInput": tool_input}],
                    "text": text,
                },
            ),
            ("tool_call", {"toolCallId": call_id, "toolName": "get_telemetry", "toolInput": tool_input}),
            ("tool_result", {"toolCallId": call_id, "toolName": "get_telemetry", "result": result}),
        ]
        for kind, payload in payloads:
            clock += 37
            recorder.append(kind, payload, clock)
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": text},
                    {
                        "type": "tool_use",
                        "toolCallId": call_id,
                        "toolName": "get_telemetry",
                        "toolInput": tool_input,
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "toolCallId": call_id,
                        "toolName": "get_telemetry",
                        "result": json.dumps(result, separators=(",", ":")),
                    }
                ],
            }
        )
        round_ += 1
    while len(recorder) < steps - 3:  # pad to the exact count with run-level markers
        clock += 1
        recorder.append("metadata", {"event": "checkpoint", "round": round_}, clock)
    answer = "All vans triaged: no overheating found."
    recorder.append("model_input", {"messages": messages[-HISTORY_CAP:], "tools": TOOLS}, clock + 1)
    recorder.append("model_output", {"type": "final_answer", "text": answer}, clock + 2)
    recorder.append("metadata", {"event": "run_completed", "status": "success", "result": answer}, clock + 3)
    return recorder.trace()


def floor(path: str) -> int:
    """Read, parse and hash every step with nothing else: the least any verifier must do."""
    with open(path, encoding="utf-8") as handle:
        doc = json.loads(handle.read())
    count = 0
    for step in doc["steps"]:
        fields = {k: step[k] for k in ("index", "type", "timestamp", "payload", "prevHash")}
        text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        if hashlib.sha256(text.encode("utf-8")).hexdigest() == step["hash"]:
            count += 1
    return count


def run_verify(path: str) -> int:
    report = verify_trace(path)
    if not report.ok:
        raise SystemExit(f"the benchmark cassette did not verify: {report.to_json()}")
    return 1


JOBS: dict[str, Callable[[str], int]] = {"floor": floor, "verify": run_verify}


def _peak_rss() -> int:
    """This process's peak resident set size so far, in bytes.

    Linux keeps ``ru_maxrss`` across ``exec``, so a child of a large parent would start at the
    parent's peak; ``VmHWM`` belongs to this process image alone.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def measure(job: str, path: str, warm_up: str, traced: bool) -> dict[str, float]:
    """One measurement in this (fresh) process: CPU and wall time and peak RSS growth, or traced peak.

    Both jobs first run once on a tiny cassette, so lazy imports and compiled checks are paid
    before, not during, the measurement. The traced peak is measured in a separate process, since
    tracing slows everything down.
    """
    func = JOBS[job]
    func(warm_up)
    gc.collect()
    if traced:
        tracemalloc.start()
        func(path)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return {"traced": peak}
    rss_before = _peak_rss()
    wall, cpu = time.perf_counter(), time.process_time()
    func(path)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"cpu": cpu, "wall": wall, "rss": _peak_rss() - rss_before}


def in_fresh_process(job: str, path: str, warm_up: str, traced: bool = False) -> dict[str, float]:
    command = [sys.executable, __file__, "--measure", job, path, warm_up]
    if traced:
        command.append("--traced")
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout)
    return result


@dataclass
class Row:
    steps: int
    size: int
    floor: list[dict[str, float]]
    verify: list[dict[str, float]]
    floor_traced: float
    verify_traced: float

    def median(self, job: str, key: str) -> float:
        runs: list[dict[str, float]] = getattr(self, job)
        return statistics.median(run[key] for run in runs)

    @property
    def ratio(self) -> float:
        return statistics.median(v["cpu"] / f["cpu"] for f, v in zip(self.floor, self.verify, strict=True))


def cassette(directory: str, steps: int) -> str:
    """The benchmark cassette of ``steps`` steps in ``directory``, built once and then reused."""
    path = os.path.join(directory, f"verify-bench-{steps}.json")
    if not os.path.exists(path):
        save_trace(build_trace(steps), path)
    return path


def run_size(directory: str, steps: int, repeat: int, warm_up: str) -> Row:
    path = cassette(directory, steps)
    floor_runs, verify_runs = [], []
    for _ in range(repeat):  # interleaved, so both see the same machine load
        floor_runs.append(in_fresh_process("floor", path, warm_up))
        verify_runs.append(in_fresh_process("verify", path, warm_up))
    floor_traced = in_fresh_process("floor", path, warm_up, traced=True)["traced"]
    verify_traced = in_fresh_process("verify", path, warm_up, traced=True)["traced"]
    return Row(steps, os.path.getsize(path), floor_runs, verify_runs, floor_traced, verify_traced)


def report(rows: list[Row], repeat: int) -> None:
    print(f"median of {repeat} runs, each in a fresh process; memory as a multiple of the file size")
    print(
        f"{'steps':>8} {'file':>9} | {'floor CPU':>9} {'verify CPU':>10} {'ratio':>6} | "
        f"{'floor RSS':>9} {'verify RSS':>10} | {'floor heap':>10} {'verify heap':>11}"
    )
    for row in rows:
        size = row.size
        print(
            f"{row.steps:>8,} {size / 1e6:>7.1f}MB | {row.median('floor', 'cpu'):>8.3f}s "
            f"{row.median('verify', 'cpu'):>9.3f}s {row.ratio:>5.2f}x | "
            f"{row.median('floor', 'rss') / size:>8.2f}x {row.median('verify', 'rss') / size:>9.2f}x | "
            f"{row.floor_traced / size:>9.2f}x {row.verify_traced / size:>10.2f}x"
        )
    print(f"targets: verify CPU <= {TARGET_RATIO}x the floor, memory <= {TARGET_MEMORY}x the file size")
    for row in rows:
        memory = max(row.median("verify", "rss"), row.verify_traced) / row.size
        time_ok = "met" if row.ratio <= TARGET_RATIO else "MISSED"
        memory_ok = "met" if memory <= TARGET_MEMORY else "MISSED"
        print(f"{row.steps:>8,} steps: time {row.ratio:.2f}x {time_ok}, memory {memory:.2f}x {memory_ok}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", default="1000,10000,100000", help="comma-separated cassette sizes")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per size and job")
    parser.add_argument("--keep", metavar="DIR", help="build the cassettes in DIR (reused if they exist)")
    parser.add_argument("--profile", action="store_true", help="also print where verify spends its time")
    parser.add_argument("--measure", nargs=3, metavar=("JOB", "PATH", "WARM_UP"), help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        job, path, warm_up = args.measure
        print(json.dumps(measure(job, path, warm_up, args.traced)))
        return 0
    sizes = [int(size) for size in args.steps.split(",")]
    with tempfile.TemporaryDirectory() as scratch:
        directory = args.keep or scratch
        os.makedirs(directory, exist_ok=True)
        warm_up = cassette(directory, 10)
        rows = []
        for steps in sizes:
            started = time.perf_counter()
            rows.append(run_size(directory, steps, args.repeat, warm_up))
            print(f"{steps:,} steps measured in {time.perf_counter() - started:.0f}s", flush=True)
        report(rows, args.repeat)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(run_verify, cassette(directory, sizes[-1]))
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
