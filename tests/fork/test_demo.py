"""The built-in demo agent reproduces the frozen demo cassettes and follows its documented rules."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from pytest_blackbox.demo.agent import (
    FixtureTools,
    ReactiveDemoModel,
    ScriptedDemoModel,
    run_agent_loop,
    run_demo,
)
from pytest_blackbox.errors import BlackboxUsageError
from pytest_blackbox.trace.io import dumps_trace
from pytest_blackbox.trace.payloads import terminal_outcome, tool_call_sequence
from pytest_blackbox.trace.recorder import TraceRecorder


def pinned() -> int:
    return 0


@pytest.mark.parametrize(
    ("scenario", "fixture", "trace_id"),
    [
        ("success", "fixtures/traces/success-tool-use.v2.json", "fixture-success-tool-use"),
        ("error", "fixtures/traces/error-unknown-tool.v2.json", "fixture-error-unknown-tool"),
    ],
)
def test_scenarios_reproduce_the_frozen_cassettes(
    scenario: str,
    fixture: str,
    trace_id: str,
    vector_text: Callable[[str], str],
    expectations: dict[str, Any],
) -> None:
    trace = run_demo(scenario, pinned, trace_id=trace_id)
    expected = expectations["cassettes"][fixture]
    assert [step["hash"] for step in trace["steps"]] == expected["stepHashes"]
    assert dumps_trace(trace) == vector_text(fixture)


def test_default_ids_and_outcomes() -> None:
    success = run_demo("success", pinned)
    error = run_demo("error", pinned)
    assert (success["id"], len(success["steps"])) == ("example-run-001", 15)
    assert terminal_outcome(success).final_answer == "Hotel booked for Alice on 2024-03-15 at 14:00."
    assert tool_call_sequence(success) == ["search", "calendar", "booking"]
    assert (error["id"], len(error["steps"])) == ("example-error-run", 5)
    assert terminal_outcome(error).status == "error"
    assert terminal_outcome(error).failure_reason == "unknown_tool"
    assert error["steps"][-1]["payload"] == {
        "event": "run_failed",
        "status": "error",
        "reason": "unknown_tool",
        "toolName": "flights",
        "toolCallId": "call-0",
    }


def test_each_step_takes_its_own_clock_reading() -> None:
    ticks = itertools.count(1000)
    trace = run_demo("success", lambda: next(ticks))
    assert trace["createdAt"] == 1000
    assert [step["timestamp"] for step in trace["steps"]] == list(range(1001, 1016))


def test_unknown_scenario_is_a_usage_error() -> None:
    with pytest.raises(BlackboxUsageError, match=r"unknown demo scenario; choose one of: success, error"):
        run_demo("timeout", pinned)


def test_fixture_tools() -> None:
    tools = FixtureTools()
    assert list(tools.names) == ["search", "calendar", "booking"]
    assert tools("search", {"query": "q"}) == {
        "results": [
            {"title": 'Fixture result A for "q"', "snippet": "First deterministic result."},
            {"title": 'Fixture result B for "q"', "snippet": "Second deterministic result."},
        ]
    }
    assert tools("calendar", {"date": "2024-01-02"}) == {
        "date": "2024-01-02",
        "availableSlots": ["09:00", "14:00", "16:00"],
    }
    assert tools("booking", {"date": "2024-01-02", "time": "09:00"}) == {
        "confirmed": True,
        "reference": "BK-20240102-0900",
        "name": "guest",
    }
    with pytest.raises(LookupError) as caught:
        tools("flights", {})
    assert (
        str(caught.value) == 'Unknown fixture tool: "flights". Known tools: "search", "calendar", "booking"'
    )


def _with_result(part: dict[str, Any]) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": "Book it."},
            {
                "role": "user",
                "content": [{"type": "tool_result", "toolCallId": "call-0", "toolName": "search", **part}],
            },
        ],
        "tools": [],
    }


@pytest.mark.parametrize(
    ("part", "answer"),
    [
        (
            {"error": "boom"},
            "The search tool call failed with error: boom. I cannot complete this request.",
        ),
        (
            {"result": {"results": [], "available": False, "message": "No hotels available for that date."}},
            'Based on the search result, no options are available: "No hotels available for that date.". '
            "I could not complete the booking.",
        ),
        (
            {"result": {"available": False}},
            'Based on the search result, no options are available: "available=false, 0 result(s)". '
            "I could not complete the booking.",
        ),
        (
            {"result": {"results": []}},
            'Based on the search result, no options are available: "available=undefined, 0 result(s)". '
            "I could not complete the booking.",
        ),
        (
            {"result": {"results": [{"title": "Hotel A"}, {"title": "Hotel B"}]}},
            'Based on the search result, 2 option(s) are available (first: "Hotel A"). '
            "Proceeding to complete the booking.",
        ),
        (
            {"result": {"results": [{"name": "x", "id": 1}]}},
            'Based on the search result, 1 option(s) are available (first: "{"id":1,"name":"x"}"). '
            "Proceeding to complete the booking.",
        ),
        (
            {"result": {"slots": 3}},
            'The search tool returned an unrecognized result shape: {"slots":3}. '
            "I cannot reliably act on it.",
        ),
    ],
)
def test_reactive_model_rules(part: dict[str, Any], answer: str) -> None:
    assert ReactiveDemoModel()(_with_result(part)) == {"type": "final_answer", "text": answer}


def test_reactive_model_without_tool_results() -> None:
    model = ReactiveDemoModel()
    asked = {"messages": [{"role": "user", "content": "Hello there"}], "tools": []}
    assert (
        model(asked)["text"]
        == 'No tool results were available; responding to the request directly: "Hello there".'
    )
    silent = {"messages": [{"role": "user", "content": ""}], "tools": []}
    assert model(silent)["text"] == (
        "No tool results were available and no request text was provided; nothing to act on."
    )


def _loop(
    model: Any, *, max_steps: int = 20, tools: Any = None, system_prompt: str | None = None
) -> TraceRecorder:
    recorder = TraceRecorder("loop", 0)
    run_agent_loop(
        recorder,
        [{"role": "user", "content": "Go."}],
        model=model,
        tools=tools or FixtureTools(),
        clock=pinned,
        max_steps=max_steps,
        system_prompt=system_prompt,
    )
    return recorder


def test_max_steps_exceeded() -> None:
    search = {"type": "tool_call", "toolName": "search", "toolInput": {"query": "x"}}
    recorder = _loop(ScriptedDemoModel([search, search, search]), max_steps=2)
    steps = recorder.steps
    assert len(steps) == 9
    assert [s["payload"]["toolCallId"] for s in steps if s["type"] == "tool_call"] == ["call-0", "call-1"]
    assert steps[-1]["payload"] == {
        "event": "run_failed",
        "status": "error",
        "reason": "max_steps_exceeded",
        "maxSteps": 2,
    }


class _FlakyTools(FixtureTools):
    def __call__(self, name: str, tool_input: Any) -> Any:
        if name == "calendar":
            raise RuntimeError("calendar service is down")
        return super().__call__(name, tool_input)


def test_a_failing_known_tool_is_shown_to_the_model_and_the_run_goes_on() -> None:
    call = {"type": "tool_call", "toolName": "calendar", "toolInput": {"date": "2024-03-15"}}
    recorder = _loop(_Chain(ScriptedDemoModel([call]), ReactiveDemoModel()), tools=_FlakyTools())
    steps = recorder.steps
    assert [s["type"] for s in steps] == [
        "model_input",
        "model_output",
        "tool_call",
        "tool_result",
        "model_input",
        "model_output",
        "metadata",
    ]
    assert steps[3]["payload"] == {
        "toolCallId": "call-0",
        "toolName": "calendar",
        "error": "calendar service is down",
    }
    assert steps[6]["payload"]["result"] == (
        "The calendar tool call failed with error: calendar service is down. I cannot complete this request."
    )


class _Chain:
    """The first model's answers, then the second's."""

    def __init__(self, first: ScriptedDemoModel, then: ReactiveDemoModel) -> None:
        self.first, self.then, self.calls = first, then, 0

    def __call__(self, model_input: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        return self.first(model_input) if self.calls == 1 else self.then(model_input)


def test_system_prompt_is_recorded_after_tools() -> None:
    recorder = _loop(ScriptedDemoModel([{"type": "final_answer", "text": "ok"}]), system_prompt="Be brief.")
    assert list(recorder.steps[0]["payload"]) == ["messages", "tools", "systemPrompt"]
    assert recorder.steps[0]["payload"]["systemPrompt"] == "Be brief."


def test_scripted_model_running_out_is_a_usage_error() -> None:
    with pytest.raises(BlackboxUsageError, match=r"ran out after 0 response\(s\)"):
        _loop(ScriptedDemoModel([]))


@pytest.mark.parametrize("output", [{"type": "tool_calls", "calls": []}, {"type": "final_answer"}, "text"])
def test_a_malformed_model_output_is_a_usage_error(output: Any) -> None:
    with pytest.raises(BlackboxUsageError, match=r"the demo model must return"):
        _loop(lambda _payload: output)
