"""Gemini googleSearch and urlContext through the real google-genai SDK: their metadata comes back offline.

Recorded against the fake provider (plain, streamed, sync and async), replayed with no request
reaching it and no key in the environment; a changed search tool setting is a divergence.
"""

from __future__ import annotations

import asyncio
import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from google import genai
from google.genai import errors, types

from tests.engine.conftest import RecordOnce, ReplayDiverges, ReplayOffline

GROUNDING: Any = {
    "webSearchQueries": ["weather Paris"],
    "groundingChunks": [{"web": {"uri": "https://w.example/paris", "title": "W"}}],
    "groundingSupports": [
        {
            "segment": {"startIndex": 0, "endIndex": 15, "text": "Paris is sunny."},
            "groundingChunkIndices": [0],
        }
    ],
}


URL_CONTEXT: Any = {
    "urlMetadata": [
        {"retrievedUrl": "https://w.example/paris", "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS"}
    ]
}


def ask(base_url: str, flavor: str, search: types.GoogleSearch | None = None, *, urls: bool = False) -> Any:
    """One grounded question (``urls``: about a page, with urlContext); the candidate the SDK
    handed back, as JSON."""
    client = genai.Client(api_key="not-a-key", http_options=types.HttpOptions(base_url=base_url))
    tool = (
        types.Tool(url_context=types.UrlContext())
        if urls
        else types.Tool(google_search=search or types.GoogleSearch())
    )
    config = types.GenerateContentConfig(tools=[tool])
    options: Any = {"model": "gemini-2.5-flash", "contents": "Weather in Paris?", "config": config}

    async def call() -> Any:
        if flavor == "stream":
            chunks = [chunk async for chunk in await client.aio.models.generate_content_stream(**options)]
            return chunks[-1]
        return await client.aio.models.generate_content(**options)

    response: Any = client.models.generate_content(**options) if flavor == "sync" else asyncio.run(call())
    candidate = json.loads(response.candidates[0].model_dump_json(exclude_none=True))
    candidate.pop("content", None)  # a stream's last chunk holds only its own piece of the text
    return candidate


@pytest.fixture(params=["sync", "async", "stream"])
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def recorded(flavor: str, record_once: RecordOnce) -> tuple[Path, Any]:
    return record_once(
        "grounded.json",
        lambda fake: fake.queue_gemini_text("Paris is sunny.", grounding=GROUNDING),
        lambda fake, _: ask(fake.gemini_base_url, flavor),
    )


def test_the_grounding_is_recorded_and_given_back_offline(
    recorded: tuple[Path, Any], flavor: str, replay_offline: ReplayOffline
) -> None:
    path, live = recorded
    steps = json.loads(path.read_text(encoding="utf-8"))["steps"]
    assert steps[0]["payload"]["tools"] == [
        {"name": "googleSearch", "description": "", "builtin": "googleSearch"}
    ]
    assert steps[1]["payload"]["content"][0] == {
        "type": "server_tool_result",
        "toolCallId": "server-0",
        "toolName": "googleSearch",
        "result": GROUNDING,
    }
    replayed = replay_offline(path, lambda fake, _: ask(fake.gemini_base_url, flavor))
    assert replayed == live
    assert replayed["grounding_metadata"]["web_search_queries"] == ["weather Paris"]


def test_a_changed_search_setting_diverges_naming_it(
    recorded: tuple[Path, Any],
    flavor: str,
    replay_diverges: ReplayDiverges,
) -> None:
    path, _ = recorded
    since = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    narrowed = types.GoogleSearch(time_range_filter=types.Interval(start_time=since))
    error = replay_diverges(
        path, lambda fake, _: ask(fake.gemini_base_url, flavor, narrowed), errors.ClientError
    )
    assert error.path is not None and error.path.startswith("tools[0]")


def test_the_url_context_metadata_is_recorded_and_given_back_offline(
    flavor: str, record_once: RecordOnce, replay_offline: ReplayOffline
) -> None:
    path, live = record_once(
        "urls.json",
        lambda fake: fake.queue_gemini_text("The page says sunny.", url_context=URL_CONTEXT),
        lambda fake, _: ask(fake.gemini_base_url, flavor, urls=True),
    )
    steps = json.loads(path.read_text(encoding="utf-8"))["steps"]
    assert steps[0]["payload"]["tools"] == [
        {"name": "urlContext", "description": "", "builtin": "urlContext"}
    ]
    assert steps[1]["payload"]["content"][0] == {
        "type": "server_tool_result",
        "toolCallId": "server-0",
        "toolName": "urlContext",
        "result": URL_CONTEXT,
    }
    replayed = replay_offline(path, lambda fake, _: ask(fake.gemini_base_url, flavor, urls=True))
    assert replayed == live
    assert replayed["url_context_metadata"]["url_metadata"][0]["retrieved_url"] == "https://w.example/paris"
