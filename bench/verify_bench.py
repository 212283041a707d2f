"""How close ``verify`` comes to the cost of merely reading and hashing a cassette.

Builds a 100,000-step cassette with realistic payloads, then times, side by side and best of 3:

(a) ``verify_trace(path)`` end to end (read, strict parse, version, schema, hash chain, neutrality,
    replayability);
(b) the floor: read + ``json.loads`` + per step ``json.dumps(sort_keys, compact, ensure_ascii=False)``
    + SHA-256, inline, with no checks at all.

Targets: (a) ≤ 1.5x (b), and peak traced memory during (a) ≤ 3x the file size.

Run: ``python bench/verify_bench.py [--steps N] [--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import json
import os
import pstats
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
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


def best_of(runs: int, func: Callable[[str], int], path: str) -> tuple[float, float]:
    """Best wall time and best CPU time of ``runs`` runs.

    CPU time is what the ratio uses: on a shared machine, other processes stretch wall time but
    not the time this process actually spent.
    """
    walls, cpus = [], []
    for _ in range(runs):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        func(path)
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return min(walls), min(cpus)


def peak_memory(func: Callable[[str], int], path: str) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        func(path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--profile", action="store_true", help="also print where verify spends its time")
    parser.add_argument("--keep", metavar="PATH", help="build the cassette at PATH (reused if it exists)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = args.keep or os.path.join(directory, "bench.json")
        started = time.perf_counter()
        if not os.path.exists(path):
            save_trace(build_trace(args.steps), path)
        size = os.path.getsize(path)
        steps = len(json.loads(Path(path).read_text(encoding="utf-8"))["steps"])
        print(
            f"cassette: {steps:,} steps, {size / 1e6:.1f} MB (ready in {time.perf_counter() - started:.1f}s)"
        )
        floor_wall, floor_cpu = best_of(3, floor, path)
        verify_wall, verify_cpu = best_of(3, run_verify, path)
        ratio = verify_cpu / floor_cpu
        print(f"floor  (read + json.loads + dumps + sha256): {floor_cpu:.3f}s CPU, {floor_wall:.3f}s wall")
        print(f"verify (verify_trace end to end):            {verify_cpu:.3f}s CPU, {verify_wall:.3f}s wall")
        print(f"ratio: {ratio:.2f}x (target <= {TARGET_RATIO}x) {'OK' if ratio <= TARGET_RATIO else 'OVER'}")
        floor_peak, verify_peak = peak_memory(floor, path), peak_memory(run_verify, path)
        memory = verify_peak / size
        print(f"peak memory of the floor: {floor_peak / 1e6:.1f} MB = {floor_peak / size:.2f}x file size")
        print(
            f"peak memory during verify: {verify_peak / 1e6:.1f} MB = {memory:.2f}x file size "
            f"(target <= {TARGET_MEMORY}x) {'OK' if memory <= TARGET_MEMORY else 'OVER'}"
        )
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(run_verify, path)
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
