"""`inspect` and `view` name the stops, choices, logprobs and moderation extension when a cassette uses it."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_blackbox.analysis.extensions import extensions_used


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
        "reasoning",
    ],
)
def test_the_extension_is_named_only_when_used(output: dict[str, Any], expected: list[str]) -> None:
    assert names(output) == expected
