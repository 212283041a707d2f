"""A long conversation replays strictly: a change deep in a 200-call history is still a divergence.

Each request carries the whole history, and the session parses, normalizes and compares only what is
new in it (docs/engine.md#long-conversations); these tests prove that what it reuses is keyed so a
change anywhere in the old part is caught, through the real Anthropic SDK, recorded against the fake
provider and replayed with no request reaching it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest

from pytest_blackbox import ReplayDivergenceError, blackbox
from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing import FakeProvider

CALLS = 200
TOOLS: Any = [
    {
        "name": "lookup",
        "description": "Look up one numbered item.",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    }
]

#: What the agent changes in its history before sending call ``AT``: the place, and the path named.
Mutation = Callable[[list[Any]], None]


def lookup(n: int) -> dict[str, Any]:
    return {"n": n, "title": f"item {n}", "ok": True}


def agent(client: anthropic.Anthropic, tools: dict[str, Any], mutate: Mutation | None, at: int) -> str:
    """The agent loop; before call ``at`` it applies ``mutate`` to the history it sends."""
    messages: list[Any] = [{"role": "user", "content": "Look up every item."}]
    for number in range(CALLS):
        if mutate is not None and number == at:
            mutate(messages)
        response = client.messages.create(
            model="claude-sonnet-5", max_tokens=64, messages=messages, tools=TOOLS
        )
        uses = [block for block in response.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in response.content if block.type == "text")
        messages.append({"role": "assistant", "content": [block.model_dump() for block in response.content]})
        results = [
            {
                "type": "tool_result",
                "tool_use_id": use.id,
                "content": json.dumps(tools[use.name](**use.input)),
            }
            for use in uses
        ]
        messages.append({"role": "user", "content": results})
    raise AssertionError("the agent did not finish")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One 200-call run recorded against the fake provider, through the SDK."""
    path = tmp_path_factory.mktemp("long") / "long.json"
    with FakeProvider() as fake:
        for n in range(CALLS - 1):
            fake.queue_anthropic_tool_calls([("lookup", {"n": n})], text=f"Looking up item {n}.")
        fake.queue_anthropic_text("All items found.")
        client = anthropic.Anthropic(base_url=fake.base_url, api_key="sk-ant-test", max_retries=0)
        with blackbox(mode="record", out=path) as session:
            session.finish(result=agent(client, session.tools({"lookup": lookup}), None, 0))
    return path


def _tool_result(messages: list[Any]) -> None:
    messages[8]["content"][0]["content"] = messages[8]["content"][0]["content"].replace("item 3", "item 33")


def _bool_for_int(messages: list[Any]) -> None:
    messages[3]["content"][-1]["input"] = {"n": True}  # was {"n": 1}: equal in Python, not in JSON


def _text(messages: list[Any]) -> None:
    messages[0]["content"] = "Look up every item!"


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (_tool_result, "messages[8].content[0].result"),
        (_bool_for_int, "messages[3].content[1].toolInput.n"),
        (_text, "messages[0].content"),
    ],
    ids=["tool-result", "bool-for-int", "first-message"],
)
@pytest.mark.parametrize("at", [150, CALLS - 1], ids=["call-150", "last-call"])
def test_a_change_deep_in_a_long_history_diverges_naming_it(
    recorded: Path,
    fake_provider: FakeProvider,
    sessions: Callable[..., Session],
    provider_keys: pytest.MonkeyPatch,
    mutate: Mutation,
    path: str,
    at: int,
) -> None:
    client = anthropic.Anthropic(base_url=fake_provider.base_url, max_retries=0)
    session = sessions(mode="replay", cassette=recorded)
    with pytest.raises(anthropic.BadRequestError, match=r"\[blackbox\]"):
        agent(client, session.tools({"lookup": lookup}), mutate, at)
    error = session.error
    assert isinstance(error, ReplayDivergenceError)
    assert error.path == path
    assert error.step_index == 4 * at  # call ``at``'s model_input: 4 steps per round
    assert fake_provider.requests == []
    session.discard()


def test_the_unchanged_long_history_replays(
    recorded: Path, fake_provider: FakeProvider, provider_keys: pytest.MonkeyPatch
) -> None:
    client = anthropic.Anthropic(base_url=fake_provider.base_url, max_retries=0)
    with blackbox(mode="replay", cassette=recorded) as session:
        answer = agent(client, session.tools({"lookup": lookup}), None, 0)
        session.finish(result=answer)
    assert answer == "All items found."
    assert fake_provider.requests == []


def test_a_compared_message_edited_afterwards_fails_the_replay(
    recorded: Path,
    fake_provider: FakeProvider,
    sessions: Callable[..., Session],
    provider_keys: pytest.MonkeyPatch,
) -> None:
    """Messages are compared by the text they had when first seen and reused by identity; a bug that
    edited one afterwards (what this test does by hand) would make the comparison untrustworthy, so
    the run's end checks the texts again and refuses it."""
    client = anthropic.Anthropic(base_url=fake_provider.base_url, max_retries=0)
    session = sessions(mode="replay", cassette=recorded)
    answer = agent(client, session.tools({"lookup": lookup}), None, 0)
    cursor = session._dispatch.cursor
    assert cursor is not None
    compared = cursor.compare._messages  # the last request's messages, as compared
    compared[CALLS // 2]["content"][0]["result"] = "edited after it was compared"
    with pytest.raises(RuntimeError, match=r"^pytest-blackbox internal error: a request message was edited"):
        session.finish(result=answer)
    assert fake_provider.requests == []
    session.discard()


def test_a_compared_field_edited_afterwards_fails_the_replay(
    recorded: Path,
    fake_provider: FakeProvider,
    sessions: Callable[..., Session],
    provider_keys: pytest.MonkeyPatch,
) -> None:
    """The fields besides the messages (the tool definitions) are reused by identity too, and checked
    again at the run's end the same way."""
    client = anthropic.Anthropic(base_url=fake_provider.base_url, max_retries=0)
    session = sessions(mode="replay", cassette=recorded)
    answer = agent(client, session.tools({"lookup": lookup}), None, 0)
    cursor = session._dispatch.cursor
    assert cursor is not None
    tools, _ = cursor.compare._fields["tools"]  # the last request's tool definitions, as compared
    tools[0]["description"] = "edited after it was compared"
    with pytest.raises(RuntimeError, match=r"^pytest-blackbox internal error: a request message was edited"):
        session.finish(result=answer)
    assert fake_provider.requests == []
    session.discard()
