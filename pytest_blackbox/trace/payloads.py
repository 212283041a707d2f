"""Readers of step payloads, tolerant of every shape the format allows, and the terminal builders.

Every consumer (verify, diff, inspect, assert, replay, the session) reads tool calls and outcomes
through them, and every writer builds the terminal ``metadata`` payloads here, so each rule is in one
place. See docs/cassette-format.md#payloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

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


def choice_calls_of(payload: Any) -> list[ToolCallRef]:
    """Every call of a model output's choices: its own, then those of its other ``choices`` (a request
    for several), which a replay hands out too."""
    extra = payload.get("choices") if isinstance(payload, dict) else None
    return tool_calls_of(payload) + [
        call for choice in (extra if isinstance(extra, list) else []) for call in tool_calls_of(choice)
    ]


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
    return _failed("agent_error", message=message)


def process_exit(exit_code: int) -> RunFailed:
    """The process ended with a non-zero code before ``finish()``."""
    return _failed("process_exit", exitCode=exit_code)


def calls_in_flight(exit_code: int, in_flight: int) -> RunFailed:
    """The process ended while wrapped calls were running; their effects are not in the cassette."""
    return _failed("calls_in_flight", exitCode=exit_code, inFlight=in_flight)


def max_steps_exceeded(max_steps: int) -> RunFailed:
    """A tool loop gave up after ``max_steps`` model calls."""
    return _failed("max_steps_exceeded", maxSteps=max_steps)


def unknown_tool(tool_name: str, tool_call_id: str) -> RunFailed:
    """The model called a tool the agent does not have."""
    return _failed("unknown_tool", toolName=tool_name, toolCallId=tool_call_id)


def _failed(reason: str, **fields: Any) -> RunFailed:
    """A ``run_failed`` payload: its reason, then the reason's fields in the order they are written."""
    return cast("RunFailed", {"event": "run_failed", "status": "error", "reason": reason, **fields})


def tool_call_sequence(trace: Trace) -> list[str]:
    """Tool names of the ``tool_call`` steps, in order (not of the results, on purpose)."""
    names: list[str] = []
    for step in trace.get("steps") or []:
        if step.get("type") == "tool_call" and isinstance(step.get("payload"), dict):
            name = step["payload"].get("toolName")
            names.append(name if isinstance(name, str) else "unknown")
    return names


class ToolRounds:
    """Checks, one step at a time, that each tool round agrees with the ``model_output`` that opened it.

    A round is the tool steps after a model output (or before the first model call). A recording
    never writes a ``tool_result`` before its ``tool_call``, a call the output announced under
    another tool name, or a fresh id for a tool the output announced and nothing claimed; a rehashed
    edit can. Verify keeps the original Blackbox's verdict on such a file and warns; a replay refuses
    it before the agent runs. See docs/cassette-format.md#tool-rounds.
    """

    def __init__(self) -> None:
        #: The first disagreement: its step index and what is wrong.
        self.problem: tuple[int, str] | None = None
        self._announced: dict[str, tuple[str, int]] = {}
        self._opened: set[str] = set()

    def step(self, position: int, step: Any) -> None:
        """Check the step at ``position`` (after the first problem, nothing more is checked)."""
        if self.problem is not None or not isinstance(step, dict):
            return
        kind, payload = step.get("type"), step.get("payload")
        payload = payload if isinstance(payload, dict) else {}
        if kind in ("model_input", "model_output"):
            refs = tool_calls_of(payload) if kind == "model_output" else []
            self._announced = {ref["toolCallId"]: (ref["toolName"], position) for ref in refs}
            self._opened = set()
            return
        call_id = str(payload.get("toolCallId", ""))
        if kind == "tool_result" and call_id not in self._opened:
            self.problem = (position, f"its tool_result {call_id} comes before any tool_call {call_id}")
        elif kind == "tool_call":
            problem = self._call_problem(call_id, str(payload.get("toolName", "")))
            self.problem = None if problem is None else (position, problem)

    def _call_problem(self, call_id: str, name: str) -> str | None:
        self._opened.add(call_id)
        if call_id in self._announced:
            wanted, at = self._announced[call_id]
            if wanted == name:
                return None
            return (
                f"its tool_call {call_id} is named {name}, "
                f"but the model_output at step {at} announced {wanted}"
            )
        for other, (wanted, at) in self._announced.items():
            if wanted == name and other not in self._opened:
                return (
                    f"its tool_call {name} has toolCallId {call_id}, "
                    f"but the model_output at step {at} announced {other}"
                )
        return None

    @property
    def message(self) -> str | None:
        """``step 3: its tool_result call-1 comes before …`` (``None`` when every round agrees)."""
        if self.problem is None:
            return None
        return f"step {self.problem[0]}: {self.problem[1]}"

    @classmethod
    def of(cls, steps: list[Any]) -> ToolRounds:
        """The check run over every step of a trace."""
        rounds = cls()
        for position, step in enumerate(steps):
            rounds.step(position, step)
        return rounds
