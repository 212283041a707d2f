"""Fixtures for the trace tests: every cassette vector as a parameter."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.trace.model import Trace
from pytest_blackbox.trace.recorder import TraceRecorder
from tests import vector_json


def cassette_files() -> list[str]:
    """Every cassette vector (relative to the vectors folder), as ``expectations.json`` lists them."""
    return sorted(vector_json("expectations.json")["cassettes"])


def read_text(path: Path) -> str:
    """A vector as UTF-8 text without newline translation, as the format requires."""
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``cassette`` parametrizes a test over every cassette vector (a relative name, for readable ids)."""
    if "cassette" in metafunc.fixturenames:
        metafunc.parametrize("cassette", cassette_files())


@pytest.fixture
def cassette_path(vectors_dir: Path, cassette: str) -> Path:
    return vectors_dir / cassette


@pytest.fixture
def cassette_text(cassette_path: Path) -> str:
    return read_text(cassette_path)


#: A credential-shaped string planted in test cassettes: no error message may ever contain it.
SECRET = "sk-ant-api03-PLANTEDsecretVALUE0123456789abcdef"


def planted_trace() -> Trace:
    """A small valid trace (every payload shape a recorded agent writes) with ``SECRET`` in its data."""
    recorder = TraceRecorder("planted", 1000)
    tools = [{"name": "lookup", "description": "Look things up", "inputSchema": {"type": "object"}}]
    question = {"role": "user", "content": f"use key {SECRET}"}
    call = {"toolCallId": "call-0", "toolName": "lookup", "toolInput": {"q": SECRET}}
    recorder.append(
        "model_input",
        {
            "messages": [question],
            "tools": tools,
            "systemPrompt": "Be terse.",
            "model": "m",
            "params": {"maxTokens": 9},
        },
        1001,
    )
    recorder.append("model_output", {"type": "tool_calls", "calls": [call], "text": "Looking."}, 1002)
    recorder.append("tool_call", dict(call), 1003)
    recorder.append(
        "tool_result", {"toolCallId": "call-0", "toolName": "lookup", "result": {"a": SECRET}}, 1004
    )
    history = [
        dict(question),
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Looking."}, {"type": "tool_use", **call}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "toolCallId": "call-0", "toolName": "lookup", "result": "{}"}
            ],
        },
    ]
    recorder.append("model_input", {"messages": history, "tools": tools}, 1005)
    recorder.append("model_output", {"type": "final_answer", "text": f"done {SECRET}"}, 1006)
    recorder.append(
        "metadata", {"event": "run_completed", "status": "success", "result": f"done {SECRET}"}, 1007
    )
    return recorder.trace()


def conversation(turns: int, answers: list[Any] | None = None) -> Trace:
    """``turns`` model_input steps, each repeating the history before it and adding one message
    (``answers[n]`` as the n-th tool result's value)."""
    recorder = TraceRecorder("long", 1000)
    tools = [{"name": "lookup", "description": "Look things up", "inputSchema": {"type": "object"}}]
    history: list[Any] = [{"role": "user", "content": "start"}]
    for turn in range(turns):
        recorder.append("model_input", {"messages": copy.deepcopy(history), "tools": copy.deepcopy(tools)}, 1)
        value = answers[turn] if answers is not None else {"n": turn}
        history.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "toolCallId": f"call-{turn}",
                        "toolName": "lookup",
                        "result": value,
                    }
                ],
            }
        )
    return recorder.trace()
