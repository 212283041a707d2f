"""The built-in demo agent: a scripted tool loop that needs no API key, no network and no test file.

It shows the whole record → verify → fork → diff loop on a fresh install, and gives ``fork_run`` an
agent to continue a fork with. With a pinned clock its two scenarios reproduce the frozen cassettes
``success-tool-use`` and ``error-unknown-tool`` hash for hash. See docs/fork-demo-import.md#blackbox-demo.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..engine import to_json_value
from ..errors import BlackboxUsageError
from ..trace.canonical import canonical_json
from ..trace.model import Trace
from ..trace.payloads import max_steps_exceeded, run_completed, unknown_tool
from ..trace.recorder import TraceRecorder

__all__ = [
    "DEMO_MAX_STEPS",
    "FIXTURE_TOOL_NAMES",
    "SCENARIOS",
    "Clock",
    "DemoModel",
    "DemoScenario",
    "DemoTools",
    "FixtureTools",
    "ReactiveDemoModel",
    "ScriptedDemoModel",
    "UnknownToolError",
    "run_agent_loop",
    "run_demo",
    "wall_clock",
]

#: Model calls one run may make before it is stopped with ``max_steps_exceeded``.
DEMO_MAX_STEPS = 20

FIXTURE_TOOL_NAMES: tuple[str, ...] = ("search", "calendar", "booking")

#: Epoch milliseconds; tests pin it (``lambda: 0``) to reproduce the frozen fixtures.
Clock = Callable[[], "int | float"]


def wall_clock() -> int:
    """The real time in epoch milliseconds, as the cassette format stores it."""
    return time.time_ns() // 1_000_000


class UnknownToolError(LookupError):
    """Raised by a tool executor for a name it does not have; the loop ends the run with ``unknown_tool``."""


class DemoModel(Protocol):
    """A fake model: reads a ``model_input`` payload, returns what to do next.

    The answer is ``{"type": "final_answer", "text": …}`` or
    ``{"type": "tool_call", "toolName": …, "toolInput": …}``; the loop assigns the ``call-N`` id.
    """

    def __call__(self, model_input: dict[str, Any]) -> dict[str, Any]: ...


class DemoTools(Protocol):
    """The tools the loop may run: their names (for ``model_input.tools``) and a way to call one."""

    @property
    def names(self) -> Sequence[str]: ...

    def __call__(self, name: str, tool_input: Any) -> Any: ...


class FixtureTools:
    """``search``, ``calendar`` and ``booking``: deterministic, so every run records the same steps."""

    @property
    def names(self) -> Sequence[str]:
        return FIXTURE_TOOL_NAMES

    def __call__(self, name: str, tool_input: Any) -> Any:
        args = tool_input if isinstance(tool_input, dict) else {}
        if name == "search":
            query = args.get("query")
            return {
                "results": [
                    {"title": f'Fixture result A for "{query}"', "snippet": "First deterministic result."},
                    {"title": f'Fixture result B for "{query}"', "snippet": "Second deterministic result."},
                ]
            }
        if name == "calendar":
            return {"date": args.get("date"), "availableSlots": ["09:00", "14:00", "16:00"]}
        if name == "booking":
            date, slot = str(args.get("date")), str(args.get("time"))
            return {
                "confirmed": True,
                "reference": f"BK-{date.replace('-', '')}-{slot.replace(':', '')}",
                "name": args.get("name") or "guest",
            }
        known = ", ".join(f'"{tool}"' for tool in FIXTURE_TOOL_NAMES)
        raise UnknownToolError(f'Unknown fixture tool: "{name}". Known tools: {known}')


class ScriptedDemoModel:
    """Answers with a fixed list of outputs, one per call, whatever the input says."""

    def __init__(self, outputs: Sequence[dict[str, Any]]) -> None:
        self._outputs = [copy.deepcopy(dict(output)) for output in outputs]
        self._used = 0

    def __call__(self, model_input: dict[str, Any]) -> dict[str, Any]:
        if self._used >= len(self._outputs):
            raise BlackboxUsageError(
                f"the scripted demo model ran out after {self._used} response(s); give it one more output "
                'per model call, ending with {"type": "final_answer", "text": "…"}'
            )
        output = self._outputs[self._used]
        self._used += 1
        return copy.deepcopy(output)


class ReactiveDemoModel:
    """Answers from the latest tool result alone, always with a final answer.

    It is the model behind the command-less ``blackbox fork``: a changed tool result visibly changes
    the answer, which is the point of the demo.
    """

    def __call__(self, model_input: dict[str, Any]) -> dict[str, Any]:
        messages = model_input.get("messages")
        messages = messages if isinstance(messages, list) else []
        part = _latest_tool_result(messages)
        if part is None:
            return {"type": "final_answer", "text": _answer_without_results(messages)}
        return {"type": "final_answer", "text": _answer_from_result(part)}


def _latest_tool_result(messages: list[Any]) -> dict[str, Any] | None:
    for message in reversed(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for part in reversed(content):
            if isinstance(part, dict) and part.get("type") == "tool_result":
                return part
    return None


def _answer_without_results(messages: list[Any]) -> str:
    text = ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            text = _message_text(message.get("content"))
            break
    if not text:
        return "No tool results were available and no request text was provided; nothing to act on."
    return f'No tool results were available; responding to the request directly: "{text}".'


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(texts)
    return ""


def _answer_from_result(part: dict[str, Any]) -> str:
    tool = part.get("toolName")
    if isinstance(part.get("error"), str):
        return f"The {tool} tool call failed with error: {part['error']}. I cannot complete this request."
    result = part.get("result")
    results = result.get("results") if isinstance(result, dict) else None
    if isinstance(result, dict) and (result.get("available") is False or results == []):
        return (
            f'Based on the {tool} result, no options are available: "{_unavailable_reason(result)}". '
            "I could not complete the booking."
        )
    if isinstance(results, list) and results:
        first = results[0]
        title = first.get("title") if isinstance(first, dict) else None
        shown = title if isinstance(title, str) else canonical_json(first)
        return (
            f'Based on the {tool} result, {len(results)} option(s) are available (first: "{shown}"). '
            "Proceeding to complete the booking."
        )
    return (
        f"The {tool} tool returned an unrecognized result shape: {canonical_json(result)}. "
        "I cannot reliably act on it."
    )


def _unavailable_reason(result: dict[str, Any]) -> str:
    message = result.get("message")
    if isinstance(message, str):
        return message
    results = result.get("results")
    count = len(results) if isinstance(results, list) else 0
    available = result.get("available", _MISSING)
    shown = "undefined" if available is _MISSING else _plain(available)
    return f"available={shown}, {count} result(s)"


_MISSING = object()


def _plain(value: Any) -> str:
    """A value as a template string shows it: strings bare, everything else as JSON."""
    return value if isinstance(value, str) else canonical_json(value)


def run_agent_loop(
    recorder: TraceRecorder,
    messages: list[dict[str, Any]],
    *,
    model: DemoModel,
    tools: DemoTools,
    clock: Clock,
    max_steps: int = DEMO_MAX_STEPS,
    next_call_index: int = 0,
    system_prompt: str | None = None,
) -> str | None:
    """Run the tool loop from ``messages`` onward, appending every step to ``recorder``.

    Returns the final answer, or ``None`` when the run failed; the failure is recorded as the
    terminal ``run_failed`` step rather than raised, because the cassette is the result either way.
    ``next_call_index`` lets a fork continue the ``call-N`` numbering past its copied prefix.
    """
    history = copy.deepcopy(messages)
    definitions = [{"name": name, "description": name} for name in tools.names]
    for _ in range(max_steps):
        model_input: dict[str, Any] = {
            "messages": copy.deepcopy(history),
            "tools": copy.deepcopy(definitions),
        }
        if system_prompt is not None:
            model_input["systemPrompt"] = system_prompt
        recorder.append("model_input", model_input, clock())
        decision = _checked_decision(model(copy.deepcopy(model_input)))
        if decision["type"] == "final_answer":
            text = decision["text"]
            recorder.append("model_output", {"type": "final_answer", "text": text}, clock())
            recorder.append("metadata", run_completed(text), clock())
            return str(text)
        call = {
            "toolCallId": f"call-{next_call_index}",
            "toolName": decision["toolName"],
            "toolInput": to_json_value(decision.get("toolInput"), "a demo tool input"),
        }
        next_call_index += 1
        recorder.append("model_output", {"type": "tool_call", **copy.deepcopy(call)}, clock())
        outcome = _run_tool(recorder, call, tools, clock)
        if outcome is None:
            return None
        history.append({"role": "assistant", "content": [{"type": "tool_use", **copy.deepcopy(call)}]})
        history.append({"role": "user", "content": [{"type": "tool_result", **outcome}]})
    recorder.append("metadata", max_steps_exceeded(max_steps), clock())
    return None


def _checked_decision(decision: Any) -> dict[str, Any]:
    if isinstance(decision, dict):
        if decision.get("type") == "final_answer" and isinstance(decision.get("text"), str):
            return decision
        if decision.get("type") == "tool_call" and isinstance(decision.get("toolName"), str):
            return decision
    raise BlackboxUsageError(
        'the demo model must return {"type": "final_answer", "text": "…"} or '
        '{"type": "tool_call", "toolName": "…", "toolInput": {…}}; it returned something else'
    )


def _run_tool(
    recorder: TraceRecorder, call: dict[str, Any], tools: DemoTools, clock: Clock
) -> dict[str, Any] | None:
    """Record one tool call and its result; ``None`` when an unknown tool ended the run."""
    recorder.append("tool_call", copy.deepcopy(call), clock())
    ref = {"toolCallId": call["toolCallId"], "toolName": call["toolName"]}
    try:
        result = to_json_value(
            tools(call["toolName"], copy.deepcopy(call["toolInput"])), "a demo tool result"
        )
    except UnknownToolError as exc:
        recorder.append("tool_result", {**ref, "error": str(exc)}, clock())
        recorder.append("metadata", unknown_tool(call["toolName"], call["toolCallId"]), clock())
        return None
    except Exception as exc:  # a failing tool is data the model gets to see, not a crash of the loop
        outcome: dict[str, Any] = {**ref, "error": str(exc)}
    else:
        outcome = {**ref, "result": result}
    recorder.append("tool_result", copy.deepcopy(outcome), clock())
    return outcome


@dataclass(frozen=True)
class DemoScenario:
    """One canned run: the prompt, its default trace id and the scripted model's answers."""

    name: str
    prompt: str
    trace_id: str
    outputs: tuple[dict[str, Any], ...]
    file_name: str


SCENARIOS: dict[str, DemoScenario] = {
    "success": DemoScenario(
        name="success",
        prompt="Book a hotel for Alice this weekend.",
        trace_id="example-run-001",
        outputs=(
            {"type": "tool_call", "toolName": "search", "toolInput": {"query": "weekend hotels"}},
            {"type": "tool_call", "toolName": "calendar", "toolInput": {"date": "2024-03-15"}},
            {
                "type": "tool_call",
                "toolName": "booking",
                "toolInput": {"date": "2024-03-15", "time": "14:00", "name": "Alice"},
            },
            {"type": "final_answer", "text": "Hotel booked for Alice on 2024-03-15 at 14:00."},
        ),
        file_name="example-trace.json",
    ),
    "error": DemoScenario(
        name="error",
        prompt="Find the cheapest flight to Tokyo this weekend.",
        trace_id="example-error-run",
        outputs=({"type": "tool_call", "toolName": "flights", "toolInput": {"destination": "Tokyo"}},),
        file_name="example-error-trace.json",
    ),
}


def run_demo(scenario: str, clock: Clock = wall_clock, *, trace_id: str | None = None) -> Trace:
    """Record one demo scenario (``"success"`` or ``"error"``) and return its trace.

    ``trace_id`` overrides the scenario's id, e.g. to reproduce a fixture recorded under another name.
    """
    try:
        chosen = SCENARIOS[scenario]
    except KeyError:
        raise BlackboxUsageError(f"unknown demo scenario; choose one of: {', '.join(SCENARIOS)}") from None
    recorder = TraceRecorder(trace_id or chosen.trace_id, clock())
    run_agent_loop(
        recorder,
        [{"role": "user", "content": chosen.prompt}],
        model=ScriptedDemoModel(chosen.outputs),
        tools=FixtureTools(),
        clock=clock,
    )
    return recorder.trace()
