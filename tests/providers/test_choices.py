"""Several choices per request, per protocol: a response (and a stream) of several choices records the
first as the model output and the others as its ``choices``, and a replay gives each back in order."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_blackbox.errors import BlackboxUnsupportedError
from pytest_blackbox.providers import CallIds, gemini, openai_chat
from pytest_blackbox.providers.choices import choice_outputs

CALL: Any = {"toolCallId": "call-0", "toolName": "lookup", "toolInput": {"city": "Paris"}}
OUTPUT: Any = {
    "type": "final_answer",
    "text": "Paris is sunny.",
    "choices": [
        {"type": "tool_calls", "calls": [CALL]},
        {"type": "final_answer", "text": "Cut", "stop": "length"},
    ],
}
PROTOCOLS: Any = [openai_chat, gemini]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=["chat", "gemini"])
def test_a_replayed_response_of_several_choices_records_back_as_it_was(protocol: Any) -> None:
    body = protocol.synthesize_response(OUTPUT, output_index=1, model="m", timestamp=0)
    key = "choices" if protocol is openai_chat else "candidates"
    assert [choice["index"] for choice in body[key]] == [0, 1, 2]
    assert protocol.normalize_response(body, CallIds()) == OUTPUT


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=["chat", "gemini"])
def test_a_replayed_stream_of_several_choices_collects_back_as_it_was(protocol: Any) -> None:
    events = protocol.synthesize_stream(OUTPUT, output_index=1, model="m", timestamp=0)
    collected = protocol.collect_stream(b"".join(events))
    assert protocol.normalize_response(collected, CallIds()) == OUTPUT


def test_the_response_level_moderation_stays_on_the_first_choice() -> None:
    body = openai_chat.synthesize_response(OUTPUT, output_index=1, model="m", timestamp=0)
    body["moderation"] = {"input": {"flagged": False}}
    output: Any = openai_chat.normalize_response(body, CallIds())
    assert output["moderation"] == {"input": {"flagged": False}}
    assert all("moderation" not in choice for choice in output["choices"])


def test_one_choice_is_recorded_without_choices() -> None:
    body = openai_chat.synthesize_response(choice_outputs(OUTPUT)[0], output_index=1, model="m", timestamp=0)
    assert "choices" not in openai_chat.normalize_response(body, CallIds())


def test_a_recorded_choices_that_is_not_a_list_is_refused_naming_it() -> None:
    with pytest.raises(BlackboxUnsupportedError, match=r"choices is not a non-empty list.*\(choices\)$"):
        openai_chat.synthesize_response({**OUTPUT, "choices": {}}, output_index=1, model="m", timestamp=0)
