"""A response's blocks in order, provider-run tools and citations, through the real Anthropic SDK.

Recorded against the fake provider (plain, streamed, sync and async), replayed with no request
reaching it and no key in the environment: the SDK hands the agent the same blocks in the same
order (ids aside), the cassette holds only neutral ids, and a change to a provider-run part or a
citation in the next request's history is a divergence naming it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest

from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing import FakeProvider
from tests.engine.conftest import RecordOnce, ReplayDiverges, ReplayOffline

WEB_SEARCH: Any = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
LOOKUP: Any = {
    "name": "lookup",
    "description": "Look up a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
CITATION = {
    "type": "web_search_result_location",
    "url": "https://weather.example/paris",
    "title": "Paris weather",
    "encrypted_index": "Eo8BCioIAhgB",
    "cited_text": "Sunny, 21 degrees.",
}
#: The first answer: text, a provider-run search and its result, cited text, a client call, more text.
FIRST: Any = [
    {"type": "text", "text": "Let me search."},
    {"type": "server_tool_use", "id": "srvtoolu_01Search", "name": "web_search", "input": {"query": "Paris"}},
    {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_01Search",
        "content": [
            {
                "type": "web_search_result",
                "url": "https://weather.example/paris",
                "title": "Paris weather",
                "encrypted_content": "EqgfCioIAhgBIiQ",
                "page_age": "1 day ago",
            }
        ],
    },
    {"type": "text", "text": "It is sunny.", "citations": [CITATION]},
    {"type": "tool_use", "id": "toolu_01Lookup", "name": "lookup", "input": {"city": "Paris"}},
    {"type": "text", "text": "Checking the details."},
]
FLAVORS = ["sync", "async", "stream"]

Mutation = Callable[[list[Any]], None]


def lookup(city: str) -> dict[str, Any]:
    return {"city": city, "population": 2_100_000}


def shown(message: Any) -> list[Any]:
    """The blocks the SDK handed the agent, without the ids a replay gives out on purpose."""
    blocks = json.loads(message.model_dump_json())["content"]
    for block in blocks:
        block.pop("id", None)
        block.pop("tool_use_id", None)
    return list(blocks)


async def ask(client: anthropic.AsyncAnthropic, flavor: str, messages: list[Any]) -> Any:
    options: Any = {
        "model": "claude-sonnet-5",
        "max_tokens": 256,
        "messages": messages,
        "tools": [WEB_SEARCH, LOOKUP],
    }
    if flavor == "stream":
        async with client.messages.stream(**options) as stream:
            return await stream.get_final_message()
    return await client.messages.create(**options)


def run(base_url: str, flavor: str, tools: dict[str, Any], mutate: Mutation | None = None) -> list[Any]:
    """The agent loop: what the SDK handed it, turn by turn (``mutate`` edits the second request)."""

    async def loop() -> list[Any]:
        client = anthropic.AsyncAnthropic(base_url=base_url, api_key="not-a-key", max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
        seen = []
        for _ in range(3):
            if flavor == "sync":
                sync = anthropic.Anthropic(base_url=base_url, api_key="not-a-key", max_retries=0)
                options: Any = {"max_tokens": 256, "messages": messages, "tools": [WEB_SEARCH, LOOKUP]}
                response = sync.messages.create(model="claude-sonnet-5", **options)
            else:
                response = await ask(client, flavor, messages)
            seen.append(shown(response))
            uses = [block for block in response.content if block.type == "tool_use"]
            if not uses:
                return seen
            messages.append(
                {"role": "assistant", "content": [block.model_dump() for block in response.content]}
            )
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": use.id,
                    "content": json.dumps(tools[use.name](**use.input)),
                }
                for use in uses
            ]
            messages.append({"role": "user", "content": results})
            if mutate is not None:
                mutate(messages)
        raise AssertionError("the agent did not finish")

    return asyncio.run(loop())


def agent(flavor: str, mutate: Mutation | None = None) -> Callable[[FakeProvider, Session], list[Any]]:
    """The agent loop against a fake provider, its lookup tool wrapped by the session."""
    return lambda fake, session: run(fake.base_url, flavor, session.tools({"lookup": lookup}), mutate)


@pytest.fixture(params=FLAVORS)
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def recorded(flavor: str, record_once: RecordOnce) -> tuple[Path, list[Any]]:
    """One run recorded through the SDK: the cassette and what the agent was handed."""

    def queue(fake: FakeProvider) -> None:
        fake.queue_anthropic_content(FIRST, stop_reason="tool_use")
        fake.queue_anthropic_text("Sunny and 21 degrees in Paris.")

    return record_once("search.json", queue, agent(flavor))


def test_the_cassette_keeps_the_blocks_in_order_under_neutral_ids(recorded: tuple[Path, list[Any]]) -> None:
    path, _ = recorded
    text = path.read_text(encoding="utf-8")
    assert "srvtoolu_" not in text and "toolu_" not in text
    output = json.loads(text)["steps"][1]["payload"]
    assert output["type"] == "tool_calls"
    assert output["text"] == "Let me search.It is sunny.Checking the details."
    assert output["calls"] == [{"toolCallId": "call-0", "toolName": "lookup", "toolInput": {"city": "Paris"}}]
    assert [part["type"] for part in output["content"]] == [
        "text",
        "server_tool_use",
        "server_tool_result",
        "text",
        "tool_use",
        "text",
    ]
    assert output["content"][1] == {
        "type": "server_tool_use",
        "toolCallId": "server-0",
        "toolName": "web_search",
        "toolInput": {"query": "Paris"},
    }
    assert output["content"][3]["citations"] == [
        {
            "type": "web_search_result_location",
            "url": "https://weather.example/paris",
            "title": "Paris weather",
            "encryptedIndex": "Eo8BCioIAhgB",
            "citedText": "Sunny, 21 degrees.",
        }
    ]
    request = json.loads(text)["steps"][0]["payload"]
    assert request["tools"][0] == {
        "name": "web_search",
        "description": "",
        "builtin": "web_search_20250305",
        "settings": {"max_uses": 2},
    }


def test_a_replay_hands_the_agent_the_same_blocks_offline(
    recorded: tuple[Path, list[Any]], flavor: str, replay_offline: ReplayOffline
) -> None:
    path, live = recorded
    replayed = replay_offline(path, agent(flavor))
    assert replayed == live
    assert [block["type"] for block in replayed[0]] == [block["type"] for block in FIRST]


def _citation(messages: list[Any]) -> None:
    messages[1]["content"][3]["citations"][0]["cited_text"] = "Rainy."


def _search_result(messages: list[Any]) -> None:
    messages[1]["content"][2]["content"][0]["page_age"] = "2 days ago"


def _order(messages: list[Any]) -> None:
    blocks = messages[1]["content"]
    blocks[4], blocks[5] = blocks[5], blocks[4]


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (_citation, "messages[1].content[3].citations[0].citedText"),
        (_search_result, "messages[1].content[2].result[0].page_age"),
        (_order, "messages[1].content[4]"),
    ],
    ids=["citation", "search-result", "order"],
)
def test_a_changed_history_diverges_naming_the_part(
    recorded: tuple[Path, list[Any]],
    flavor: str,
    replay_diverges: ReplayDiverges,
    mutate: Mutation,
    where: str,
) -> None:
    path, _ = recorded
    error = replay_diverges(path, agent(flavor, mutate), anthropic.BadRequestError)
    assert error.path is not None and error.path.startswith(where)
