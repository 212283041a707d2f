"""describe_step wording and type labels."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_blackbox.analysis.labels import describe_step, type_label

from .conftest import read_trace


def _step(kind: str, payload: Any) -> dict[str, Any]:
    return {"type": kind, "payload": payload}


@pytest.mark.parametrize(
    ("step", "summary"),
    [
        (_step("model_input", {"messages": [{}, {}, {}], "tools": []}), "Model called with 3 message(s)"),
        (_step("model_input", {"messages": "x"}), "Model called with 0 message(s)"),
        (
            _step(
                "model_output",
                {"type": "tool_call", "toolCallId": "call-0", "toolName": "search", "toolInput": {}},
            ),
            "Model → tool_call: search",
        ),
        (
            _step("model_output", {"type": "tool_calls", "calls": [{"toolName": "a"}, {"toolName": "b"}]}),
            "Model → tool_calls: a, b",
        ),
        (
            _step(
                "model_output", {"type": "tool_calls", "calls": [{"toolName": "a"}], "text": "Let me look."}
            ),
            "Model → tool_calls: a (with text)",
        ),
        (_step("model_output", {"type": "final_answer", "text": "Paris."}), 'Model → final_answer: "Paris."'),
        (
            _step("model_output", {"type": "final_answer", "text": "word " * 20}),
            'Model → final_answer: "' + ("word " * 12)[:59] + '…"',
        ),
        (
            _step("model_output", {"type": "final_answer", "text": "two\nlines"}),
            'Model → final_answer: "two lines"',
        ),
        (_step("tool_call", {"toolCallId": "call-0", "toolName": "search"}), "Tool called: search"),
        (_step("tool_result", {"toolName": "search", "result": None}), "Tool result: search → ok"),
        (
            _step("tool_result", {"toolName": "flights", "error": "Unknown tool: flights"}),
            "Tool result: flights → ERROR: Unknown tool: flights",
        ),
        (
            _step("metadata", {"event": "run_completed", "status": "success", "result": "Done."}),
            'Run completed: "Done."',
        ),
        (
            _step("metadata", {"event": "run_failed", "status": "error", "reason": "unknown_tool"}),
            "Run failed: unknown_tool",
        ),
        (_step("metadata", {"event": "checkpoint", "n": 1}), 'Metadata: {"event":"checkpoint","n":1}'),
    ],
)
def test_describe_step(step: dict[str, Any], summary: str) -> None:
    assert describe_step(step) == summary


def test_summaries_are_masked() -> None:
    key = "sk-ant-api03-" + "s" * 30
    step = _step("tool_result", {"toolName": "auth", "error": f"rejected {key}"})
    assert describe_step(step) == "Tool result: auth → ERROR: rejected [redacted]"
    answer = _step("model_output", {"type": "final_answer", "text": "my token is tok-12345678"})
    assert describe_step(answer, ["tok-12345678"]) == 'Model → final_answer: "my token is [redacted]"'


def test_vector_timeline_wording() -> None:
    trace = read_trace("fixtures/traces/error-unknown-tool.v2.json")
    assert [describe_step(step) for step in trace["steps"]] == [
        "Model called with 1 message(s)",
        "Model → tool_call: flights",
        "Tool called: flights",
        'Tool result: flights → ERROR: Unknown fixture tool: "flights". Known tools: "search", "ca…',
        "Run failed: unknown_tool",
    ]


def test_type_label() -> None:
    assert [
        type_label(t) for t in ("model_input", "model_output", "tool_call", "tool_result", "metadata")
    ] == [
        "model input",
        "model output",
        "tool call",
        "tool result",
        "metadata",
    ]
