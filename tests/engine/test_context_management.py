"""Anthropic context management through the real SDK: the edits kept in the neutral vocabulary.

A compaction run (``context_management`` with a ``compact_20260112`` edit, a ``compaction`` block in
the answer, sent back first in the next request) is recorded against the fake provider (plain,
streamed, sync and async) and replayed with no request reaching it: the cassette holds the edit's
threshold as ``{"inputTokens": N}`` (no provider vocabulary), the SDK hands the agent the same
blocks, and a changed threshold is a divergence naming it.
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

THRESHOLD = 50_000
COMPACTION: Any = {
    "type": "compaction",
    "content": "The user asked about Paris; it is sunny.",
    "encrypted_content": "EqQBCkYIBhgCKkA",
}
FLAVORS = ["sync", "async", "stream"]


def context(threshold: int) -> Any:
    return {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": threshold}}]}


def run(base_url: str, flavor: str, threshold: int) -> list[Any]:
    """Two turns: the first answer is a compaction block and text, which the second sends back."""

    async def loop() -> list[Any]:
        client = anthropic.AsyncAnthropic(base_url=base_url, api_key="not-a-key", max_retries=0)
        sync = anthropic.Anthropic(base_url=base_url, api_key="not-a-key", max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
        seen = []
        for question in ("And tomorrow?", None):
            options: Any = {
                "model": "claude-opus-5",
                "max_tokens": 256,
                "messages": messages,
                "context_management": context(threshold),
            }
            if flavor == "sync":
                response = sync.beta.messages.create(**options)
            elif flavor == "stream":
                async with client.beta.messages.stream(**options) as stream:
                    response = await stream.get_final_message()
            else:
                response = await client.beta.messages.create(**options)
            seen.append([json.loads(block.model_dump_json()) for block in response.content])
            if question is None:
                return seen
            messages.append({"role": "assistant", "content": [b.model_dump() for b in response.content]})
            messages.append({"role": "user", "content": question})
        raise AssertionError("unreachable")

    return asyncio.run(loop())


def agent(flavor: str, threshold: int = THRESHOLD) -> Callable[[FakeProvider, Session], list[Any]]:
    return lambda fake, session: run(fake.base_url, flavor, threshold)


@pytest.fixture(params=FLAVORS)
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def recorded(flavor: str, record_once: RecordOnce) -> tuple[Path, list[Any]]:
    def queue(fake: FakeProvider) -> None:
        fake.queue_anthropic_content([COMPACTION, {"type": "text", "text": "Sunny."}])
        fake.queue_anthropic_text("Rain tomorrow.")

    return record_once("compaction.json", queue, agent(flavor))


def test_the_cassette_keeps_the_edits_in_the_neutral_vocabulary(recorded: tuple[Path, list[Any]]) -> None:
    path, _ = recorded
    text = path.read_text(encoding="utf-8")
    assert "input_tokens" not in text
    steps = json.loads(text)["steps"]
    expected = {"edits": [{"type": "compact_20260112", "trigger": {"inputTokens": THRESHOLD}}]}
    assert [step["payload"]["params"]["contextManagement"] for step in (steps[0], steps[2])] == [
        expected,
        expected,
    ]
    assert steps[2]["payload"]["messages"][1]["content"][0]["type"] == "compaction"


def test_a_replay_hands_the_agent_the_same_blocks_offline(
    recorded: tuple[Path, list[Any]], flavor: str, replay_offline: ReplayOffline
) -> None:
    path, live = recorded
    assert replay_offline(path, agent(flavor)) == live


def test_a_changed_threshold_diverges_naming_it(
    recorded: tuple[Path, list[Any]], flavor: str, replay_diverges: ReplayDiverges
) -> None:
    path, _ = recorded
    error = replay_diverges(path, agent(flavor, THRESHOLD + 1), anthropic.BadRequestError)
    assert error.path == "params.contextManagement.edits[0].trigger.inputTokens"
