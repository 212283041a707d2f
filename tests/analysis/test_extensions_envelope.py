"""`inspect` and `view` name the stops, choices, logprobs and moderation extension and the conversation
state one when a cassette uses them."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_blackbox.analysis.extensions import extensions_used

STATE = "conversation state kept by the provider"


def names(output: dict[str, Any]) -> list[str]:
    payload = {"type": "final_answer", "text": "a", **output}
    return [extension.name for extension in extensions_used([{"type": "model_output", "payload": payload}])]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ({}, []),
        ({"stop": "length"}, []),
        ({"stop": "refusal"}, []),
        ({"stop": "stopSequence", "stopSequence": "END"}, ["stops, choices, logprobs and moderation"]),
        ({"stop": "contentFilter"}, ["stops, choices, logprobs and moderation"]),
        ({"moderation": {"input": {}}}, ["stops, choices, logprobs and moderation"]),
        ({"omitted": ["candidateIndex"]}, ["stops, choices, logprobs and moderation"]),
        ({"choices": [{"type": "final_answer", "text": "b"}]}, ["stops, choices, logprobs and moderation"]),
        ({"stop": "pause"}, ["response content, provider-run tools and citations"]),
        ({"container": {"id": "container-0"}}, [STATE]),
        ({"reasoning": {"reasoning": "Hm."}}, ["reasoning from OpenAI-compatible servers"]),
    ],
    ids=[
        "plain",
        "length",
        "refusal",
        "stop-sequence",
        "content-filter",
        "moderation",
        "omitted",
        "choices",
        "pause",
        "container",
        "reasoning",
    ],
)
def test_the_extension_is_named_only_when_used(output: dict[str, Any], expected: list[str]) -> None:
    assert names(output) == expected


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"maxTokens": 5}, []),
        ({"previousResponseId": "response-1"}, [STATE]),
        ({"container": "container-0"}, [STATE]),
    ],
    ids=["plain", "previous-response", "container"],
)
def test_a_request_naming_kept_state_uses_the_extension(params: dict[str, Any], expected: list[str]) -> None:
    payload = {"messages": [], "tools": [], "params": params}
    assert [e.name for e in extensions_used([{"type": "model_input", "payload": payload}])] == expected
