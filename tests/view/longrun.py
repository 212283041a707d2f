"""A long synthetic run: thousands of sequential tool rounds, for the size and speed checks.

Each model turn sends the last few messages (a windowed history, as long-running agents do), so
the cassette stays a few megabytes while having over 10,000 steps.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_blackbox.trace.model import Trace
from pytest_blackbox.trace.recorder import TraceRecorder

TOOLS = [{"name": "fetch", "description": "Fetch one queue item.", "inputSchema": {"type": "object"}}]
WINDOW = 6


def long_run(rounds: int = 2500, *, changed_round: int | None = None, trace_id: str = "long-run") -> Trace:
    """``4 * rounds + 3`` steps; ``changed_round`` gets a different tool result (for a diff)."""
    recorder = TraceRecorder(trace_id, 1_000_000)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Work through the queue."}]
    clock = 1_000_000
    for n in range(rounds):
        call = {"toolCallId": f"call-{n}", "toolName": "fetch", "toolInput": {"item": n}}
        lines = [f"row {i} of item {n}" for i in range(12)]
        if n == changed_round:
            lines[0] = "changed row"
        result = {"item": n, "lines": lines}
        recorder.append("model_input", {"messages": history[-WINDOW:], "tools": TOOLS}, clock)
        recorder.append("model_output", {"type": "tool_call", **call}, clock + 40)
        recorder.append("tool_call", dict(call), clock + 41)
        recorder.append(
            "tool_result",
            {"toolCallId": call["toolCallId"], "toolName": "fetch", "result": result},
            clock + 45,
        )
        history.append({"role": "assistant", "content": [{"type": "tool_use", **call}]})
        history.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "toolCallId": call["toolCallId"],
                        "toolName": "fetch",
                        "result": json.dumps(result),
                    }
                ],
            }
        )
        clock += 50
    recorder.append("model_input", {"messages": history[-WINDOW:], "tools": TOOLS}, clock)
    recorder.append("model_output", {"type": "final_answer", "text": "Queue done."}, clock + 40)
    recorder.append(
        "metadata", {"event": "run_completed", "status": "success", "result": "Queue done."}, clock + 41
    )
    return recorder.trace()
