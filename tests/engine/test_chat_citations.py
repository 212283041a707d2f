"""OpenAI Chat search models: ``web_search_options`` compared, ``url_citation`` annotations given back.

Recorded through the real SDK against the fake provider (plain, streamed, sync and async), replayed
with no request reaching it and no key in the environment.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.engine.conftest import RecordOnce, ReplayDiverges, ReplayOffline

ANSWER = "Paris is sunny today."
ANNOTATIONS: Any = [
    {
        "type": "url_citation",
        "url_citation": {
            "start_index": 0,
            "end_index": 21,
            "url": "https://weather.example/paris",
            "title": "Paris",
        },
    }
]


def ask(base_url: str, flavor: str, context_size: str = "low") -> Any:
    """One question to a search model; what the SDK handed back, as JSON."""
    options: Any = {
        "model": "gpt-4o-search-preview",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "web_search_options": {"search_context_size": context_size},
    }

    async def call() -> Any:
        client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="not-a-key", max_retries=0)
        if flavor == "stream":
            async with client.chat.completions.stream(**options) as stream:
                return await stream.get_final_completion()
        return await client.chat.completions.create(**options)

    if flavor == "sync":
        completion: Any = openai.OpenAI(
            base_url=base_url + "/v1", api_key="not-a-key", max_retries=0
        ).chat.completions.create(**options)
    else:
        completion = asyncio.run(call())
    return json.loads(completion.choices[0].message.model_dump_json())


@pytest.fixture(params=["sync", "async", "stream"])
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def recorded(flavor: str, record_once: RecordOnce) -> tuple[Path, Any]:
    return record_once(
        "search.json",
        lambda fake: fake.queue_openai_text(ANSWER, annotations=ANNOTATIONS),
        lambda fake, _: ask(fake.base_url, flavor),
    )


def test_the_citations_are_recorded_and_given_back_offline(
    recorded: tuple[Path, Any], flavor: str, replay_offline: ReplayOffline
) -> None:
    path, live = recorded
    steps = json.loads(path.read_text(encoding="utf-8"))["steps"]
    assert steps[0]["payload"]["params"] == {"webSearchOptions": {"search_context_size": "low"}}
    assert steps[1]["payload"]["content"] == [
        {
            "type": "text",
            "text": ANSWER,
            "citations": [
                {
                    "type": "url_citation",
                    "startIndex": 0,
                    "endIndex": 21,
                    "url": "https://weather.example/paris",
                    "title": "Paris",
                }
            ],
        }
    ]
    replayed = replay_offline(path, lambda fake, _: ask(fake.base_url, flavor))
    assert replayed == live
    assert replayed["annotations"] == ANNOTATIONS


def test_other_search_options_diverge_naming_them(
    recorded: tuple[Path, Any],
    flavor: str,
    replay_diverges: ReplayDiverges,
) -> None:
    path, _ = recorded
    error = replay_diverges(
        path, lambda fake, _: ask(fake.base_url, flavor, context_size="high"), openai.BadRequestError
    )
    assert error.path is not None and error.path.startswith("params.webSearchOptions")
