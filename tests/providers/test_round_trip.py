"""Every provider: a synthesized response normalizes back to the recorded output it was built from.

This is what makes a replay faithful: the SDK reads the synthesized body, and the next request the
agent sends carries it back; if normalizing it did not give the recorded output, a strict replay
would diverge on its own history.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_blackbox.providers import CallIds, anthropic, gemini, openai_chat, openai_responses
from pytest_blackbox.trace.canonical import pretty_json

from .outputs import argument_inputs, neutral_outputs, object_inputs

PROVIDERS = [
    pytest.param(anthropic, object_inputs, id="anthropic"),
    pytest.param(openai_chat, argument_inputs, id="openai_chat"),
    pytest.param(openai_responses, argument_inputs, id="openai_responses"),
    pytest.param(gemini, object_inputs, id="gemini"),
]
timestamps = st.integers(0, 2**41) | st.floats(0, 2**41)


@pytest.mark.parametrize(("provider", "tool_inputs"), PROVIDERS)
@given(data=st.data())
def test_a_synthesized_response_normalizes_back_to_the_recorded_output(
    provider: ModuleType, tool_inputs: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    output = data.draw(neutral_outputs(tool_inputs), label="output")
    index = data.draw(st.integers(0, 1000), label="output_index")
    timestamp = data.draw(timestamps, label="timestamp")
    body = provider.synthesize_response(output, output_index=index, model="m", timestamp=timestamp)
    wire = json.loads(json.dumps(body))
    assert provider.normalize_response(wire, CallIds()) == output
    assert pretty_json(provider.normalize_response(wire, CallIds())) == pretty_json(output)
