"""``BodyParser``: a request body parsed as ``json.loads`` parses it, reusing what a recent body held
byte for byte (docs/engine.md#long-conversations)."""

from __future__ import annotations

import json

import pytest

from pytest_blackbox.engine.bodies import BodyParser

TOOLS = '"tools":[{"name":"lookup","input_schema":{"type":"object"}}],"model":"m"'


def body(messages: list[str], tail: str = TOOLS) -> str:
    return '{"max_tokens":64,"messages":[' + ",".join(messages) + "]," + tail + "}"


MESSAGES = ['{"role":"user","content":"hi"}', '{"role":"assistant","content":"ok"}']


def test_the_history_and_the_fields_after_it_come_back_as_the_objects_parsed_before() -> None:
    parser = BodyParser()
    first = parser.parse(body(MESSAGES[:1]), "messages")
    second = parser.parse(body(MESSAGES), "messages")
    assert second == json.loads(body(MESSAGES))
    assert second["messages"][0] is first["messages"][0]
    assert second["tools"] is first["tools"]


@pytest.mark.parametrize(
    "tail",
    [
        '"tools":[{"name":"lookup","input_schema":{"type":"integer"}}],"model":"m"',
        TOOLS + ',"model":"again"',  # a repeated key keeps its first place and its last value
        TOOLS + ',"messages":[]',
    ],
    ids=["changed-tool", "repeated-key", "repeated-history"],
)
def test_a_different_text_after_the_history_is_parsed_again(tail: str) -> None:
    parser = BodyParser()
    first = parser.parse(body(MESSAGES[:1]), "messages")
    second = parser.parse(body(MESSAGES, tail), "messages")
    assert second == json.loads(body(MESSAGES, tail))
    assert list(second) == list(json.loads(body(MESSAGES, tail)))
    assert second["tools"] is not first["tools"]
    third = parser.parse(body([*MESSAGES, MESSAGES[0]], tail), "messages")  # the same tail again: reused
    assert third == json.loads(body([*MESSAGES, MESSAGES[0]], tail))
    assert third["tools"] is second["tools"]
