"""Provider normalizers on random and damaged wire bodies: a ``BlackboxError`` or a recordable payload.

"Recordable" means what the recorder needs: ``canonical_json`` accepts it (so it can be hashed) and
a step holding it passes the trace schema (so the cassette written from it can be read back).
Messages here may quote a short ``type``/``role`` label on purpose, so only the one-line rule of
the error contract is checked, not the marker rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_blackbox.providers import anthropic, openai_chat
from pytest_blackbox.providers.common import CallIds
from pytest_blackbox.trace.canonical import canonical_json
from pytest_blackbox.trace.errors import BlackboxError
from pytest_blackbox.trace.recorder import TraceRecorder
from pytest_blackbox.trace.schema import validate_schema

from .conftest import (
    MARKER,
    fuzz_settings,
    normalization_vectors,
    note,
    scalars,
    structural_mutant,
    texts,
    timed,
)

PROVIDERS = {"anthropic": anthropic, "openai": openai_chat}
_SIDES = {"normalize_request": "model_input", "normalize_response": "model_output"}

WIRE_KEYS = (
    "model", "messages", "role", "content", "type", "text", "id", "name", "input", "tool_use_id", "is_error",
    "system", "tools", "input_schema", "description", "strict", "stream", "max_tokens", "temperature",
    "tool_choice", "stop_reason", "stop_sequence", "usage", "citations", "container", "stop_details",
    "choices", "message", "tool_calls", "function", "arguments", "tool_call_id", "finish_reason", "refusal",
    "logprobs", "annotations", "audio", "n", "functions", "function_call", "parameters",
    "max_completion_tokens", "web_search_options", "stop", "seed",
)  # fmt: skip
WIRE_STRINGS = (
    "user", "assistant", "system", "developer", "tool", "text", "tool_use", "tool_result", "thinking",
    "redacted_thinking", "image", "function", "custom", "end_turn", "max_tokens", "refusal", "stop_sequence",
    "pause_turn", "model_context_window_exceeded", "stop", "length", "tool_calls", "content_filter", "{}",
    '{"a": 1}', "[1", "NaN", "1e999", '"x"', "call-0", MARKER, "",
)  # fmt: skip
wire_values = st.recursive(
    scalars | st.sampled_from(WIRE_STRINGS),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(WIRE_KEYS) | texts, children, max_size=5)
    ),
    max_leaves=24,
)
wire_bodies = st.dictionaries(st.sampled_from(WIRE_KEYS), wire_values, max_size=6)


#: Which vector directions hold a body for each normalizer.
_DIRECTIONS = {
    "normalize_request": ("request_to_model_input", "request_rejected"),
    "normalize_response": ("response_to_model_output", "model_output_round_trip"),
}


def seed_bodies(provider: str, side: str) -> list[Any]:
    """The vectors' wire bodies for one provider and side (round trips give synthesized responses)."""
    bodies = []
    for vector in normalization_vectors():
        if vector["provider"] != provider or vector["direction"] not in _DIRECTIONS[side]:
            continue
        if vector["direction"] == "model_output_round_trip":
            synthesize = PROVIDERS[provider].synthesize_response
            bodies.append(synthesize(vector["input"]["modelOutput"], output_index=0, model="m", timestamp=0))
        else:
            bodies.append(vector["input"])
    return bodies


def normalize(provider: str, side: str, body: Any) -> None:
    """Run one normalizer with a fresh id map and check the result against the contract."""
    function: Callable[[Any, CallIds], dict[str, Any]] = getattr(PROVIDERS[provider], side)
    try:
        payload = timed(lambda: function(body, CallIds()))
    except BlackboxError as error:
        message = str(error)
        assert message.strip() and "\n" not in message, message
        note("refused")
        return
    canonical_json(payload)
    recorder = TraceRecorder("fuzz", 0)
    recorder.append(_SIDES[side], payload, 0)  # type: ignore[arg-type]
    validate_schema(recorder.trace())
    note("normalized")


CASES = [(provider, side) for provider in PROVIDERS for side in _SIDES]


@pytest.mark.parametrize(("provider", "side"), CASES)
def test_vector_bodies_normalize(provider: str, side: str) -> None:
    bodies = seed_bodies(provider, side)
    assert bodies
    for body in bodies:
        normalize(provider, side, body)


@pytest.mark.parametrize(("provider", "side"), CASES)
@fuzz_settings(75)
@given(st.data())
def test_damaged_vector_bodies(provider: str, side: str, data: st.DataObject) -> None:
    body = data.draw(st.sampled_from(seed_bodies(provider, side)))
    for _ in range(data.draw(st.integers(1, 3))):
        body = data.draw(structural_mutant(body))
    normalize(provider, side, body)


@pytest.mark.parametrize(("provider", "side"), CASES)
@fuzz_settings(75)
@given(wire_bodies | wire_values)
def test_random_wire_bodies(provider: str, side: str, body: Any) -> None:
    normalize(provider, side, body)


@pytest.mark.parametrize(
    ("side", "body"),
    [
        ("normalize_request", {"messages": [{"role": "user", "content": [{"type": ["text"]}]}]}),
        ("normalize_response", {"content": [{"type": {"a": 1}}]}),
    ],
)
def test_anthropic_unhashable_block_type(side: str, body: Any) -> None:
    with pytest.raises(BlackboxError):
        getattr(anthropic, side)(body, CallIds())


def _deep(depth: int) -> Any:
    return json.loads("[" * depth + "]" * depth)


DEEP_BODIES = [
    ("anthropic", {"messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {"q": _deep(600)}}]}]}),
    ("openai", {"messages": [{"role": "user", "content": "hi"}], "tools": [
        {"type": "function", "function": {"name": "t", "parameters": {"q": _deep(600)}}}]}),
]  # fmt: skip


@pytest.mark.parametrize(("provider", "body"), DEEP_BODIES, ids=list(PROVIDERS))
def test_deeply_nested_json_that_json_loads_accepts(provider: str, body: Any) -> None:
    """600 levels parse with ``json.loads``; normalizing them must not raise ``RecursionError``."""
    normalize(provider, "normalize_request", body)
