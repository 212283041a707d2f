"""The transcript importers on damaged transcripts: a ``TranscriptImportError`` or a verified trace.

An import that succeeds writes a cassette someone will commit and replay, so "succeeds" means the
result passes all four ``verify`` invariants, not only that no exception escaped.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.errors import TranscriptImportError
from pytest_blackbox.importers import import_chat_json, import_claude_code
from pytest_blackbox.trace.canonical import canonical_json
from pytest_blackbox.trace.io import dumps_trace, parse_trace
from tests import vector_text

from .conftest import (
    MARKER,
    TRANSCRIPTS,
    attempt,
    finite_scalars,
    fuzz_settings,
    json_values,
    mutated_text,
    note,
    scalars,
    structural_mutant,
    texts,
    timed,
)

TRACE_ID = "fuzz-import"
_ID_KEYS = ("id", "tool_use_id", "tool_call_id", "uuid")


def _plant(value: Any) -> Any:
    """Marker in every text and id (ids consistently, so calls still match their results)."""
    if isinstance(value, list):
        return [_plant(item) for item in value]
    if not isinstance(value, dict):
        return value
    planted = {key: _plant(item) for key, item in value.items()}
    for key in ("text", "content", "description"):
        if isinstance(planted.get(key), str):
            planted[key] = f"{planted[key]} {MARKER}"
    for key in _ID_KEYS:
        if isinstance(planted.get(key), str):
            planted[key] = f"{MARKER}-{planted[key]}"
    if isinstance(planted.get("input"), dict):
        planted["input"] = {**planted["input"], MARKER: MARKER}
    return planted


@cache
def planted_jsonl(name: str) -> str:
    lines = [
        json.dumps(_plant(json.loads(line))) if line.strip() else line
        for line in vector_text(name).split("\n")
    ]
    return "\n".join(lines)


@cache
def planted_chat() -> str:
    return json.dumps(_plant(json.loads(vector_text(TRANSCRIPTS["chat-json"][0]))), indent=2)


def check_import(result: Any) -> None:
    """A refusal is a clean ``TranscriptImportError``; a success is a trace that passes ``verify``."""
    if isinstance(result, BaseException):
        assert isinstance(result, TranscriptImportError), f"{type(result).__name__}: {result}"
        note("refused")
        return
    report = timed(lambda: verify_trace(result))
    assert report.ok, report.first_failure
    again = timed(lambda: parse_trace(dumps_trace(result)))
    assert canonical_json(again) == canonical_json(result)
    note(f"imported {len(result['steps'])} step(s)")


def test_planted_transcripts_still_import() -> None:
    for name in TRANSCRIPTS["claude-code"]:
        trace = import_claude_code(planted_jsonl(name), trace_id=TRACE_ID)
        assert verify_trace(trace).ok and MARKER in dumps_trace(trace)
    trace = import_chat_json(planted_chat(), trace_id=TRACE_ID)
    assert verify_trace(trace).ok and MARKER in dumps_trace(trace)


@fuzz_settings(75)
@given(st.sampled_from(TRANSCRIPTS["claude-code"]), st.data())
def test_claude_code_damaged_text(name: str, data: st.DataObject) -> None:
    text = data.draw(mutated_text(planted_jsonl(name)))
    check_import(attempt(lambda: import_claude_code(text, trace_id=TRACE_ID), TranscriptImportError))


@fuzz_settings(60)
@given(st.sampled_from(TRANSCRIPTS["claude-code"]), st.data())
def test_claude_code_damaged_line(name: str, data: st.DataObject) -> None:
    lines = planted_jsonl(name).split("\n")
    position = data.draw(st.sampled_from([i for i, line in enumerate(lines) if line.strip()]))
    lines[position] = json.dumps(data.draw(structural_mutant(json.loads(lines[position]))))
    text = "\n".join(lines)
    check_import(attempt(lambda: import_claude_code(text, trace_id=TRACE_ID), TranscriptImportError))


@fuzz_settings(100)
@given(st.data())
def test_chat_json_damaged_text(data: st.DataObject) -> None:
    text = data.draw(mutated_text(planted_chat()))
    check_import(attempt(lambda: import_chat_json(text, trace_id=TRACE_ID), TranscriptImportError))


@fuzz_settings(75)
@given(st.data(), st.booleans())
def test_chat_json_damaged_object(data: st.DataObject, as_text: bool) -> None:
    """Parsed transcripts go in as objects too; those may hold what JSON text cannot (NaN, 10**400)."""
    mutant = data.draw(structural_mutant(json.loads(planted_chat())))
    if as_text:
        text = json.dumps(mutant)
        check_import(attempt(lambda: import_chat_json(text, trace_id=TRACE_ID), TranscriptImportError))
    elif isinstance(mutant, dict):
        check_import(attempt(lambda: import_chat_json(mutant, trace_id=TRACE_ID), TranscriptImportError))


@st.composite
def chat_transcripts(draw: st.DrawFn) -> dict[str, Any]:
    """Well-formed chat transcripts with random names, arguments, results and answers."""
    stamp = draw(st.integers(0, 2**41))
    names = st.text(min_size=1, max_size=12) | st.just(MARKER)
    messages: list[dict[str, Any]] = [
        {"role": "user", "timestamp": stamp, "content": draw(texts.filter(bool))}
    ]
    for round_ in range(draw(st.integers(0, 3))):
        stamp += draw(st.integers(0, 1000))
        arguments = json.dumps(draw(json_values(finite_scalars, 6)))
        function = {"name": draw(names), "arguments": arguments}
        call = {"id": f"c{round_}", "type": "function", "function": function}
        messages.append({"role": "assistant", "timestamp": stamp, "content": None, "tool_calls": [call]})
        result = draw(texts | json_values(finite_scalars, 4).map(json.dumps))
        messages.append({"role": "tool", "timestamp": stamp, "tool_call_id": f"c{round_}", "content": result})
    messages.append({"role": "assistant", "timestamp": stamp, "content": draw(texts.filter(bool))})
    tools = [
        {"type": "function", "function": {"name": draw(names), "parameters": draw(json_values(scalars, 4))}}
    ]
    return {"tools": draw(st.just(tools) | st.none()), "messages": messages}


@fuzz_settings(50)
@given(chat_transcripts())
def test_chat_json_generated_transcripts(transcript: dict[str, Any]) -> None:
    if transcript["tools"] is None:
        del transcript["tools"]
    result = attempt(lambda: import_chat_json(transcript, trace_id=TRACE_ID), TranscriptImportError)
    check_import(result)


@pytest.mark.parametrize("name", ["msg_v2", "toolu_lookup1", "sk-ant"])
def test_a_tool_name_shaped_like_a_provider_id(name: str) -> None:
    """Tool names are structural, where provider-id patterns are flagged: refused, or a verified trace."""
    transcript = json.loads(vector_text(TRANSCRIPTS["chat-json"][0]))
    transcript["tools"][0]["function"]["name"] = name
    transcript["messages"][1]["tool_calls"][0]["function"]["name"] = name
    result = attempt(lambda: import_chat_json(transcript, trace_id=TRACE_ID), TranscriptImportError)
    if isinstance(result, BaseException):
        assert isinstance(result, TranscriptImportError)
    else:
        assert verify_trace(result).ok
