"""Readers of step payloads, tolerant of every shape the format allows.

Every consumer (verify, diff, inspect, assert, replay) reads tool calls and outcomes through them,
so the three model-output shapes are handled in one place. See docs/cassette-format.md#payloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .model import ToolCallRef, Trace

Status = Literal["success", "error", "incomplete"]


def tool_calls_of(payload: Any) -> list[ToolCallRef]:
    """Every call a model output requests: one for ``tool_call``, all for ``tool_calls``, else none."""
    if not isinstance(payload, dict):
        return []
    kind = payload.get("type")
    if kind == "tool_call":
        raw: list[Any] = [payload]
    elif kind == "tool_calls" and isinstance(payload.get("calls"), list):
        raw = payload["calls"]
    else:
        return []
    return [_call_ref(item) for item in raw]


def _call_ref(item: Any) -> ToolCallRef:
    item = item if isinstance(item, dict) else {}
    call_id = item.get("toolCallId")
    name = item.get("toolName")
    return {
        "toolCallId": call_id if isinstance(call_id, str) else "",
        "toolName": name if isinstance(name, str) else "unknown",
        "toolInput": item.get("toolInput"),
    }


def model_output_text(payload: Any) -> str | None:
    """The text of a model output, when it has one."""
    if isinstance(payload, dict) and isinstance(payload.get("text"), str):
        return str(payload["text"])
    return None


@dataclass(frozen=True)
class Outcome:
    """How a run ended, read from its last step only."""

    status: Status
    final_answer: str | None = None
    failure_reason: str | None = None


def terminal_outcome(trace: Trace) -> Outcome:
    """``success`` / ``error`` from a terminal metadata step; anything else is ``incomplete``."""
    steps = trace.get("steps") or []
    if not steps:
        return Outcome("incomplete")
    last = steps[-1]
    payload = last.get("payload")
    if last.get("type") != "metadata" or not isinstance(payload, dict):
        return Outcome("incomplete")
    if payload.get("event") == "run_completed" and payload.get("status") == "success":
        result = payload.get("result")
        return Outcome("success", final_answer=result if isinstance(result, str) else None)
    if payload.get("event") == "run_failed":
        reason = payload.get("reason")
        return Outcome("error", failure_reason=reason if isinstance(reason, str) else None)
    return Outcome("incomplete")


def tool_call_sequence(trace: Trace) -> list[str]:
    """Tool names of the ``tool_call`` steps, in order (not of the results, on purpose)."""
    names: list[str] = []
    for step in trace.get("steps") or []:
        if step.get("type") == "tool_call" and isinstance(step.get("payload"), dict):
            name = step["payload"].get("toolName")
            names.append(name if isinstance(name, str) else "unknown")
    return names
