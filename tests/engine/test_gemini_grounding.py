"""Gemini googleSearch and urlContext through the real google-genai SDK: their metadata comes back offline.

Recorded against the fake provider (plain, streamed, sync and async), replayed with no request
reaching it and no key in the environment; a changed search tool setting is a divergence.
"""

from __future__ import annotations

import asyncio
import datetime
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google import genai
from google.genai import errors, types

from pytest_blackbox import ReplayDivergenceError, blackbox
from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing import FakeProvider
from tests.conftest import NetworkGuard

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
def recorded(flavor: str, tmp_path: Path, clean_env: pytest.MonkeyPatch) -> tuple[Path, Any]:
    path = tmp_path / "grounded.json"
    with FakeProvider() as fake:
        fake.queue_gemini_text("Paris is sunny.", grounding=GROUNDING)
        with blackbox(mode="record", out=path) as session:
            live = ask(fake.gemini_base_url, flavor)
            session.finish(result="done")
    return path, live


def test_the_grounding_is_recorded_and_given_back_offline(
    recorded: tuple[Path, Any],
    flavor: str,
    fake_provider: FakeProvider,
    sessions: Callable[..., Session],
    clean_env: pytest.MonkeyPatch,
    network_guard: NetworkGuard,
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
    session = sessions(mode="replay", cassette=path)
    attempts = network_guard.block()
    replayed = ask(fake_provider.gemini_base_url, flavor)
    session.finish(result="done")
    assert replayed == live
    assert replayed["grounding_metadata"]["web_search_queries"] == ["weather Paris"]
    assert fake_provider.requests == [] and attempts == []


def test_a_changed_search_setting_diverges_naming_it(
    recorded: tuple[Path, Any],
    flavor: str,
    fake_provider: FakeProvider,
    sessions: Callable[..., Session],
    clean_env: pytest.MonkeyPatch,
) -> None:
    path, _ = recorded
    session = sessions(mode="replay", cassette=path)
    since = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    narrowed = types.GoogleSearch(time_range_filter=types.Interval(start_time=since))
    with pytest.raises(errors.ClientError, match=r"\[blackbox\]"):
        ask(fake_provider.gemini_base_url, flavor, narrowed)
    error = session.error
    assert isinstance(error, ReplayDivergenceError)
    assert error.path is not None and error.path.startswith("tools[0]")
    assert fake_provider.requests == []
    session.discard()


def test_the_url_context_metadata_is_recorded_and_given_back_offline(
    flavor: str,
    tmp_path: Path,
    fake_provider: FakeProvider,
    sessions: Callable[..., Session],
    clean_env: pytest.MonkeyPatch,
    network_guard: NetworkGuard,
) -> None:
    path = tmp_path / "urls.json"
    with FakeProvider() as fake:
        fake.queue_gemini_text("The page says sunny.", url_context=URL_CONTEXT)
        with blackbox(mode="record", out=path) as session:
            live = ask(fake.gemini_base_url, flavor, urls=True)
            session.finish(result="done")
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
    session = sessions(mode="replay", cassette=path)
    attempts = network_guard.block()
    replayed = ask(fake_provider.gemini_base_url, flavor, urls=True)
    session.finish(result="done")
    assert replayed == live
    assert replayed["url_context_metadata"]["url_metadata"][0]["retrieved_url"] == "https://w.example/paris"
    assert fake_provider.requests == [] and attempts == []
