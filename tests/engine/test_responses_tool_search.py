"""A Responses tool search the agent runs itself (``tool_search`` with ``execution: "client"``), through
the real SDK.

Recorded against the fake provider (sync, async, streamed), replayed with no request reaching it and
no key: the SDK hands the agent the same ``tool_search_call`` item (ids aside), the cassette holds
only neutral ids, and a changed tool search definition, deferred tool or ``tool_search_output`` in
the next request is a divergence naming it.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import ReplayDivergenceError
from pytest_blackbox.testing import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests.agents.loop import settle

RATE: Any = {
    "type": "function",
    "name": "get_exchange_rate",
    "description": "Look up the exchange rate between two currencies.",
    "parameters": {"type": "object", "properties": {"pair": {"type": "string"}}, "required": ["pair"]},
    "defer_loading": True,
}
TOOL_SEARCH: Any = {
    "type": "tool_search",
    "execution": "client",
    "description": "Search for tools not yet visible to you.",
    "parameters": {
        "type": "object",
        "properties": {"queries": {"type": "array", "items": {"type": "string"}}},
    },
}
SEARCH_CALL: Any = {
    "id": "tsc_0123456789abcdef0123456789abcdef",
    "type": "tool_search_call",
    "call_id": "call_dAz29NuO19FtcApDC03CTtjL",
    "execution": "client",
    "status": "completed",
    "arguments": {"queries": ["exchange rate"]},
}
FLAVORS = [(False, False), (True, False), (False, True), (True, True)]
FLAVOR_IDS = ["sync", "async", "sync-streamed", "async-streamed"]
Edit = Callable[[dict[str, Any]], None]


def search(is_async: bool, stream: bool, root: str, edit: Edit | None = None) -> list[Any]:
    """The agent: the model asks for a tool search, the agent runs it and sends its output back
    (``edit`` changes the second request); what the SDK handed over, ids left out."""

    async def create(client: Any, request: dict[str, Any]) -> Any:
        response = await settle(client.responses.create(stream=stream, **request))
        if stream:
            events = [event async for event in response] if is_async else list(response)
            response = next(e.response for e in events if e.type == "response.completed")
        return response

    async def call() -> list[Any]:
        client: Any = (openai.AsyncOpenAI if is_async else openai.OpenAI)(
            base_url=root + "/v1", max_retries=0
        )
        user = {"role": "user", "content": "How many euros is a dollar?"}
        request: dict[str, Any] = {"model": "gpt-5", "input": [user], "tools": [TOOL_SEARCH, RATE]}
        first = await create(client, request)
        [item] = first.output
        found = {
            "type": "tool_search_output",
            "call_id": item.call_id,
            "execution": "client",
            "status": "completed",
            "tools": [{key: value for key, value in RATE.items() if key != "defer_loading"}],
        }
        request = {**request, "input": [user, item.model_dump(exclude_none=True), found]}
        if edit is not None:
            request = copy.deepcopy(request)
            edit(request)
        second = await create(client, request)
        dumped = item.model_dump(mode="json")
        return [{key: value for key, value in dumped.items() if key != "id"}, second.output_text]

    return asyncio.run(call())


def record(fake: FakeProvider, path: Path, is_async: bool, stream: bool) -> list[Any]:
    fake.queue_responses_output([SEARCH_CALL])
    fake.queue_responses_text("A dollar is 0.92 euros.")
    session = blackbox(mode="record", out=path)
    live = search(is_async, stream, fake.base_url)
    session.finish(result="done")
    return live


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
def test_a_client_tool_search_is_recorded_and_given_back_offline(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    is_async: bool,
    stream: bool,
) -> None:
    path = tmp_path / "run.json"
    live = record(fake_provider, path, is_async, stream)
    root = fake_provider.base_url
    fake_provider.stop()
    attempts = offline()
    session = blackbox(mode="replay", cassette=path)
    replayed = search(is_async, stream, root)
    session.finish(result="done")
    assert attempts == []
    assert live[0]["call_id"] == SEARCH_CALL["call_id"]
    assert replayed == [{**live[0], "call_id": "server-1"}, "A dollar is 0.92 euros."]
    steps = load_trace(path)["steps"]
    assert steps[1]["payload"]["content"] == [
        {
            "type": "server_tool_use",
            "toolCallId": "server-0",
            "toolName": "tool_search_call",
            "toolInput": {
                **{k: v for k, v in SEARCH_CALL.items() if k not in ("id", "type")},
                "call_id": "server-1",
            },
        }
    ]
    assert steps[1]["payload"].get("omitted") == ["textMessage"]
    request = steps[2]["payload"]
    assert request["tools"][0]["settings"] == {k: v for k, v in TOOL_SEARCH.items() if k != "type"}
    assert request["params"] == {"toolDeferLoading": {"get_exchange_rate": True}}
    assert [part["toolName"] for part in request["messages"][1]["content"]] == [
        "tool_search_call",
        "tool_search_output",
    ]
    assert "call_dAz" not in str(steps)


def _found_tools(request: dict[str, Any]) -> None:
    request["input"][2]["tools"][0]["description"] = "Another description."


def _search_setting(request: dict[str, Any]) -> None:
    request["tools"][0] = {**TOOL_SEARCH, "description": "Search harder."}


def _deferred(request: dict[str, Any]) -> None:
    request["tools"][1] = {**RATE, "defer_loading": False}


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (_found_tools, "messages[1].content[1].toolInput.tools[0].description"),
        (_search_setting, "tools[0].settings.description"),
        (_deferred, "params.toolDeferLoading.get_exchange_rate"),
    ],
    ids=["tool-search-output", "tool-search-definition", "defer-loading"],
)
def test_a_changed_tool_search_diverges_naming_it(
    fake_provider: FakeProvider, tmp_path: Path, offline: Callable[[], list[str]], edit: Edit, path: str
) -> None:
    cassette = tmp_path / "run.json"
    record(fake_provider, cassette, False, False)
    root = fake_provider.base_url
    fake_provider.stop()
    offline()
    session = blackbox(mode="replay", cassette=cassette)
    with pytest.raises(openai.BadRequestError, match=r"replay diverged at step 2"):
        search(False, False, root, edit)
    with pytest.raises(ReplayDivergenceError) as caught:
        session.finish(result="done")
    assert caught.value.path == path
