"""OpenAI Responses built-in tools: a web search item and cited text, in order, through the real SDK.

Recorded against the fake provider (plain, streamed, sync and async), replayed with no request
reaching it and no key in the environment: the SDK hands the agent the same items (ids aside), the
cassette holds only neutral ids, and a changed search item or tool setting in the next request is
a divergence naming it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing import FakeProvider
from tests.engine.conftest import RecordOnce, ReplayDiverges, ReplayOffline

TOOLS: Any = [
    {"type": "web_search", "search_context_size": "medium"},
    {
        "type": "function",
        "name": "lookup",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
]
SEARCH: Any = {
    "id": "ws_0123456789abcdef0123456789abcdef",
    "type": "web_search_call",
    "status": "completed",
    "action": {"type": "search", "query": "weather Paris"},
}
CITED: Any = {
    "id": "msg_0123456789abcdef0123456789abcdef",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [
        {
            "type": "output_text",
            "text": "Paris is sunny.",
            "annotations": [
                {
                    "type": "url_citation",
                    "start_index": 0,
                    "end_index": 15,
                    "url": "https://w.example",
                    "title": "W",
                }
            ],
            "logprobs": [],
        }
    ],
}
CALL: Any = {
    "id": "fc_0123456789abcdef0123456789abcdef",
    "type": "function_call",
    "call_id": "call_0123456789abcdef012345",
    "name": "lookup",
    "arguments": '{"city":"Paris"}',
    "status": "completed",
}
Mutation = Callable[[list[Any]], None]


def lookup(city: str) -> str:
    return f"{city}: 21 degrees"


def shown(response: Any) -> list[Any]:
    """The output items the SDK handed the agent, without the ids a replay gives out on purpose."""
    items = json.loads(response.model_dump_json())["output"]
    for item in items:
        item.pop("id", None)
        item.pop("call_id", None)
    return list(items)


def run(
    base_url: str, flavor: str, tools: dict[str, Any], mutate: Mutation | None = None, size: str = "medium"
) -> list[Any]:
    """The agent loop: the items the SDK handed it, turn by turn (``mutate`` edits the second input)."""
    request_tools = [{**TOOLS[0], "search_context_size": size}, TOOLS[1]]

    async def ask(items: list[Any]) -> Any:
        options: Any = {"model": "gpt-5", "input": items, "tools": request_tools}
        if flavor == "sync":
            return openai.OpenAI(
                base_url=base_url + "/v1", api_key="not-a-key", max_retries=0
            ).responses.create(**options)
        client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="not-a-key", max_retries=0)
        if flavor == "stream":
            async with client.responses.stream(**options) as stream:
                return await stream.get_final_response()
        return await client.responses.create(**options)

    async def loop() -> list[Any]:
        items: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
        seen = []
        for _ in range(3):
            response = await ask(items)
            seen.append(shown(response))
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                return seen
            items += [item.model_dump(exclude_none=True) for item in response.output]
            items += [
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": tools[call.name](**json.loads(call.arguments)),
                }
                for call in calls
            ]
            if mutate is not None:
                mutate(items)
        raise AssertionError("the agent did not finish")

    return asyncio.run(loop())


def agent(
    flavor: str, mutate: Mutation | None = None, size: str = "medium"
) -> Callable[[FakeProvider, Session], list[Any]]:
    """The agent loop against a fake provider, its lookup tool wrapped by the session."""
    return lambda fake, session: run(fake.base_url, flavor, session.tools({"lookup": lookup}), mutate, size)


@pytest.fixture(params=["sync", "async", "stream"])
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def recorded(flavor: str, record_once: RecordOnce) -> tuple[Path, list[Any]]:
    def queue(fake: FakeProvider) -> None:
        fake.queue_responses_output([SEARCH, CITED, CALL])
        fake.queue_responses_text("Sunny and 21 degrees.")

    return record_once("search.json", queue, agent(flavor))


def test_the_items_are_recorded_in_order_and_given_back_offline(
    recorded: tuple[Path, list[Any]], flavor: str, replay_offline: ReplayOffline
) -> None:
    path, live = recorded
    text = path.read_text(encoding="utf-8")
    assert "ws_" not in text and "call_" not in text and "msg_" not in text
    steps = json.loads(text)["steps"]
    assert steps[0]["payload"]["tools"][0] == {
        "name": "web_search",
        "description": "",
        "builtin": "web_search",
        "settings": {"search_context_size": "medium"},
    }
    assert steps[1]["payload"]["content"] == [
        {
            "type": "server_tool_use",
            "toolCallId": "server-0",
            "toolName": "web_search_call",
            "toolInput": {"status": "completed", "action": {"type": "search", "query": "weather Paris"}},
        },
        {
            "type": "text",
            "text": "Paris is sunny.",
            "citations": [
                {
                    "type": "url_citation",
                    "startIndex": 0,
                    "endIndex": 15,
                    "url": "https://w.example",
                    "title": "W",
                }
            ],
        },
        {"type": "tool_use", "toolCallId": "call-0", "toolName": "lookup", "toolInput": {"city": "Paris"}},
    ]
    replayed = replay_offline(path, agent(flavor))
    assert replayed == live
    assert [item["type"] for item in replayed[0]] == ["web_search_call", "message", "function_call"]


def _query(items: list[Any]) -> None:
    items[1]["action"]["query"] = "weather Lyon"


@pytest.mark.parametrize(
    ("mutate", "size", "where"),
    [
        (_query, "medium", "messages[1].content[0].toolInput.action.query"),
        (None, "high", "tools[0].settings"),
    ],
    ids=["search-item", "tool-setting"],
)
def test_a_changed_search_diverges_naming_it(
    recorded: tuple[Path, list[Any]],
    flavor: str,
    replay_diverges: ReplayDiverges,
    mutate: Mutation | None,
    size: str,
    where: str,
) -> None:
    path, _ = recorded
    error = replay_diverges(path, agent(flavor, mutate, size), openai.BadRequestError)
    assert error.path is not None and error.path.startswith(where)
