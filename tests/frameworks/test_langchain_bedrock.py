"""LangChain's ``ChatBedrockConverse`` with bound tools records and replays through boto3's Converse API.

The chat model builds its own boto3 ``bedrock-runtime`` client, pointed at the fake provider by
``endpoint_url``; its calls are seen through botocore's ``before-send`` hook and recorded as the
Converse protocol. The agent loop is the one LangChain documents for ``bind_tools``, as in
test_langchain.py; the replay runs with the placeholder AWS credentials only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from botocore.exceptions import ClientError

from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing.fake_provider import FakeProvider
from tests.conftest import NetworkGuard

from .conftest import (
    INSTRUCTIONS,
    LOCAL_TIME,
    WEATHER,
    TravelTools,
    deferred_import,
    go_keyless,
    payload,
    step_types,
    tool_results,
)
from .conftest import TWO_TOOLS_THEN_ANSWER as STEP_TYPES
from .contract import Recording, fails_strictly, record, replays_offline

if TYPE_CHECKING:
    import langchain_aws
    import langchain_core.messages
    import langchain_core.tools
else:
    langchain_aws = deferred_import(
        "langchain_aws", "langchain-aws is not installed (pip install 'pytest-blackbox[frameworks]')"
    )
    langchain_core = deferred_import(
        "langchain_core", "langchain_core is not installed (pip install 'pytest-blackbox[frameworks]')"
    )

MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
PROMPT = "What's the weather and the local time in Paris?"
FINAL = "Paris is clear at 21 °C, and it is 14:05 there."
CALLS = [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]
AWS = {
    "AWS_ACCESS_KEY_ID": "AKIABLACKBOXFAKE0004",
    "AWS_SECRET_ACCESS_KEY": "blackbox-fake-secret-access-key-langchain",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@dataclass(frozen=True)
class Flavor:
    """``invoke``, ``ainvoke`` or ``stream``."""

    style: str


FLAVORS = [pytest.param(Flavor(style), id=style) for style in ("sync", "async", "stream")]


@pytest.fixture(autouse=True)
def _aws(provider_keys: pytest.MonkeyPatch) -> None:
    for name, value in AWS.items():
        provider_keys.setenv(name, value)


def run(flavor: Flavor, root: str, bb: Session, travel: TravelTools, instructions: str = INSTRUCTIONS) -> str:
    tools: list[langchain_core.tools.BaseTool] = [
        langchain_core.tools.tool(bb.tool("get_weather", travel.get_weather), parse_docstring=True),
        langchain_core.tools.tool(bb.tool("get_time", travel.get_time), parse_docstring=True),
    ]
    model = langchain_aws.ChatBedrockConverse(
        model_id=MODEL, endpoint_url=root, region_name="us-east-1"
    ).bind_tools(tools)
    by_name = {t.name: t for t in tools}
    messages: list[langchain_core.messages.BaseMessage] = [
        langchain_core.messages.SystemMessage(instructions),
        langchain_core.messages.HumanMessage(PROMPT),
    ]
    while True:
        if flavor.style == "stream":
            chunks = list(model.stream(messages))
            reply: langchain_core.messages.AIMessage = sum(chunks[1:], chunks[0])
        elif flavor.style == "async":
            reply = asyncio.run(model.ainvoke(messages))
        else:
            reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return str(reply.text)
        messages.extend(by_name[call["name"]].invoke(call) for call in reply.tool_calls)


@pytest.fixture
def recorded(
    fake_provider: FakeProvider, flavor: Flavor, tmp_path: Path, sessions: Callable[..., Session]
) -> Recording:
    fake_provider.queue_converse_tool_calls(CALLS)
    fake_provider.queue_converse_tool_calls([], text=FINAL)
    recording, answer, tools = record(
        fake_provider, tmp_path / "converse.json", sessions, partial(run, flavor)
    )
    assert answer == FINAL
    assert tools.calls == [("get_weather", "Paris"), ("get_time", "Paris")]
    return recording


@pytest.fixture
def keyless(recorded: Recording, provider_keys: pytest.MonkeyPatch) -> Recording:
    """No key and no AWS credential: the placeholders the plugin sets before conftests load."""
    go_keyless(provider_keys)
    return recorded


def test_the_recording_holds_the_converse_run(recorded: Recording) -> None:
    assert step_types(recorded.path) == STEP_TYPES
    first = payload(recorded.path, 0)
    assert (first["systemPrompt"], first["model"]) == (INSTRUCTIONS, MODEL)
    assert first["messages"] == [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}]
    assert [definition["name"] for definition in first["tools"]] == ["get_weather", "get_time"]
    assert tool_results(recorded.path) == [("get_weather", WEATHER), ("get_time", LOCAL_TIME)]
    assert payload(recorded.path, 7) == {"type": "final_answer", "text": FINAL}


def test_replay_is_offline_and_a_changed_instruction_fails_strictly(
    keyless: Recording, flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    """One recording, replayed as recorded (offline, no tool run), then with changed instructions."""
    replays_offline(keyless, network_guard, sessions, partial(run, flavor), final=FINAL, steps=9)
    fails_strictly(keyless, network_guard, sessions, partial(run, flavor), ClientError)
