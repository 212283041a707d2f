"""Readers of step payloads, tolerant of every shape the format allows, and the terminal builders.

Every consumer (verify, diff, inspect, assert, replay, the session) reads tool calls and outcomes
through them, and every writer builds the terminal ``metadata`` payloads here, so each rule is in one
place. See docs/cassette-format.md#payloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .model import RunCompleted, RunFailed, ToolCallRef, Trace

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
    """How a run ended, read from its terminal payload only."""

    status: Status
    final_answer: str | None = None
    failure_reason: str | None = None

    @property
    def label(self) -> str:
        """``success``, ``incomplete`` or ``error/<reason>``, as one-line summaries show it."""
        if self.status == "error":
            return f"error/{self.failure_reason or 'unknown'}"
        return self.status


def outcome_of(terminal: Any) -> Outcome:
    """``success`` / ``error`` from a terminal ``metadata`` payload; anything else is ``incomplete``."""
    if not isinstance(terminal, dict):
        return Outcome("incomplete")
    if terminal.get("event") == "run_completed" and terminal.get("status") == "success":
        result = terminal.get("result")
        return Outcome("success", final_answer=result if isinstance(result, str) else None)
    if terminal.get("event") == "run_failed":
        reason = terminal.get("reason")
        return Outcome("error", failure_reason=reason if isinstance(reason, str) else None)
    return Outcome("incomplete")


def terminal_outcome(trace: Trace) -> Outcome:
    """How the run ended, when its last step is a terminal ``metadata`` step; else ``incomplete``."""
    steps = trace.get("steps") or []
    if not steps or steps[-1].get("type") != "metadata":
        return Outcome("incomplete")
    return outcome_of(steps[-1].get("payload"))


# -- terminal payloads -----------------------------------------------------------------------------


def run_completed(result: str) -> RunCompleted:
    """The run ended with this final answer."""
    return {"event": "run_completed", "status": "success", "result": result}


def agent_error(message: str) -> RunFailed:
    """The agent passed an error to ``finish()`` (already masked: it is written as given)."""
    return {"event": "run_failed", "status": "error", "reason": "agent_error", "message": message}


def process_exit(exit_code: int) -> RunFailed:
    """The process ended with a non-zero code before ``finish()``."""
    return {"event": "run_failed", "status": "error", "reason": "process_exit", "exitCode": exit_code}


def calls_in_flight(exit_code: int, in_flight: int) -> RunFailed:
    """The process ended while wrapped calls were running; their effects are not in the cassette."""
    return {
        "event": "run_failed",
        "status": "error",
        "reason": "calls_in_flight",
        "exitCode": exit_code,
        "inFlight": in_flight,
    }


def max_steps_exceeded(max_steps: int) -> RunFailed:
    """A tool loop gave up after ``max_steps`` model calls."""
    return {"event": "run_failed", "status": "error", "reason": "max_steps_exceeded", "maxSteps": max_steps}


def unknown_tool(tool_name: str, tool_call_id: str) -> RunFailed:
    """The model called a tool the agent does not have."""
    return {
        "event": "run_failed",
        "status": "error",
        "reason": "unknown_tool",
        "toolName": tool_name,
        "toolCallId": tool_call_id,
    }


def tool_call_sequence(trace: Trace) -> list[str]:
    """Tool names of the ``tool_call`` steps, in order (not of the results, on purpose)."""
    names: list[str] = []
    for step in trace.get("steps") or []:
        if step.get("type") == "tool_call" and isinstance(step.get("payload"), dict):
            name = step["payload"].get("toolName")
            names.append(name if isinstance(name, str) else "unknown")
    return names
