"""LangChain chat models with bound tools record and replay, over Anthropic, Chat Completions and Responses.

LangChain builds a tool from the function (``tool`` reads the signature, and the docstring with
``parse_docstring=True``), so the function is wrapped first: ``tool(bb.tool("get_weather",
get_weather))``. The agent loop is the one LangChain documents for ``bind_tools``: invoke the model,
run each requested tool with ``tool.invoke(call)``, send the ``ToolMessage`` back, until the model
answers. The chat models build their own SDK clients, pointed at the fake provider by ``base_url``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anthropic
import openai
import pytest

from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing.fake_provider import FakeProvider
from tests.conftest import NetworkGuard

from .conftest import (
    INSTRUCTIONS,
    LOCAL_TIME,
    WEATHER,
    InnerSuite,
    TravelTools,
    deferred_import,
    go_keyless,
    payload,
    step_types,
    tool_results,
)
from .conftest import (
    TWO_TOOLS_THEN_ANSWER as STEP_TYPES,
)
from .contract import Recording, fails_strictly, record, replays_offline

if TYPE_CHECKING:
    import langchain_anthropic
    import langchain_core.language_models
    import langchain_core.messages
    import langchain_core.tools
    import langchain_openai
else:
    langchain_anthropic = deferred_import("langchain_anthropic", "langchain-anthropic is not installed")
    langchain_core = deferred_import(
        "langchain_core", "LangChain is not installed (pip install 'pytest-blackbox[frameworks]')"
    )
    langchain_openai = deferred_import("langchain_openai", "langchain-openai is not installed")

#: ``AzureChatOpenAI`` reads its key from AZURE_OPENAI_API_KEY, as Azure deployments configure it.
AZURE_KEY = "azure-langchain-key-0123456789abcdef"
AZURE_DEPLOYMENT = "gpt-4o-travel"

PROMPT = "What's the weather and the local time in Paris?"
FINAL = "Paris is clear at 21 °C, and it is 14:05 there."
CALLS = [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]
CITY_SCHEMA = {
    "properties": {"city": {"description": "City name, e.g. Paris.", "type": "string"}},
    "required": ["city"],
    "type": "object",
}
TOOL_DEFINITIONS = [
    {"name": "get_weather", "description": "Current weather for a city.", "inputSchema": CITY_SCHEMA},
    {"name": "get_time", "description": "Local time in a city.", "inputSchema": CITY_SCHEMA},
]
CALL_REFS: list[dict[str, Any]] = [
    {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}},
    {"toolCallId": "call-1", "toolName": "get_time", "toolInput": {"city": "Paris"}},
]


@dataclass(frozen=True)
class Flavor:
    """One chat model class and one way of calling it: ``invoke``, ``ainvoke`` or ``stream``."""

    api: str
    style: str = "sync"

    def model(self, root: str) -> langchain_core.language_models.BaseChatModel:
        if self.api == "anthropic":
            return langchain_anthropic.ChatAnthropic(
                model="claude-sonnet-5-5", base_url=root, max_tokens=1024
            )
        if self.api == "azure-openai":
            return langchain_openai.AzureChatOpenAI(
                azure_endpoint=root, azure_deployment=AZURE_DEPLOYMENT, api_version="2024-10-21"
            )
        return langchain_openai.ChatOpenAI(
            model="gpt-5", base_url=root + "/v1", use_responses_api=self.api == "openai-responses"
        )

    def script(self, fake: FakeProvider) -> None:
        """The model's two turns: both tools at once, then the answer."""
        queue: Callable[..., None] = {
            "anthropic": fake.queue_anthropic_tool_calls,
            "openai-chat": fake.queue_openai_tool_calls,
            "openai-responses": fake.queue_responses_tool_calls,
            "azure-openai": fake.queue_openai_tool_calls,
        }[self.api]
        queue(CALLS)
        queue([], text=FINAL)

    @property
    def streamed(self) -> bool:
        return self.style == "stream"


FLAVORS = [
    pytest.param(Flavor(api, style), id=f"{api}-{style}")
    for api in ("anthropic", "openai-chat", "openai-responses", "azure-openai")
    for style in ("sync", "async", "stream")
]


def make_tools(bb: Session, tools: TravelTools) -> list[langchain_core.tools.BaseTool]:
    """The recipe: wrap each function with the session, then let LangChain build the tool from it."""
    return [
        langchain_core.tools.tool(bb.tool("get_weather", tools.get_weather), parse_docstring=True),
        langchain_core.tools.tool(bb.tool("get_time", tools.get_time), parse_docstring=True),
    ]


def run_sync(
    flavor: Flavor,
    model: Any,
    tools: dict[str, langchain_core.tools.BaseTool],
    messages: list[langchain_core.messages.BaseMessage],
) -> str:
    while True:
        if flavor.streamed:
            chunks = [chunk for chunk in model.stream(messages)]
            reply: langchain_core.messages.AIMessage = sum(chunks[1:], chunks[0])
        else:
            reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return str(reply.text)
        messages.extend(tools[call["name"]].invoke(call) for call in reply.tool_calls)


async def run_async(
    model: Any,
    tools: dict[str, langchain_core.tools.BaseTool],
    messages: list[langchain_core.messages.BaseMessage],
) -> str:
    while True:
        reply = await model.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return str(reply.text)
        messages.extend(await asyncio.gather(*(tools[c["name"]].ainvoke(c) for c in reply.tool_calls)))


def run(flavor: Flavor, root: str, bb: Session, travel: TravelTools, instructions: str = INSTRUCTIONS) -> str:
    """The loop LangChain documents for ``bind_tools``: call the model, run the tools it asks for, repeat."""
    tools = make_tools(bb, travel)
    model = flavor.model(root).bind_tools(tools)
    messages: list[langchain_core.messages.BaseMessage] = [
        langchain_core.messages.SystemMessage(instructions),
        langchain_core.messages.HumanMessage(PROMPT),
    ]
    by_name = {t.name: t for t in tools}
    if flavor.style == "async":
        return asyncio.run(run_async(model, by_name, messages))
    return run_sync(flavor, model, by_name, messages)


@pytest.fixture
def recorded(
    fake_provider: FakeProvider,
    flavor: Flavor,
    tmp_path: Path,
    sessions: Callable[..., Session],
    monkeypatch: pytest.MonkeyPatch,
) -> Recording:
    """The conversation recorded against the fake, which is then stopped: a replay has no server, and
    only the offline placeholder keys."""
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    flavor.script(fake_provider)
    recording, answer, tools = record(
        fake_provider, tmp_path / "langchain.json", sessions, partial(run, flavor)
    )
    assert answer == FINAL
    assert sorted(tools.calls) == [("get_time", "Paris"), ("get_weather", "Paris")]
    assert [bool(r.json.get("stream")) for r in fake_provider.requests] == [flavor.streamed] * 2
    if flavor.api == "azure-openai":
        deployment = f"/openai/deployments/{AZURE_DEPLOYMENT}/chat/completions"
        assert [(r.path, r.headers["api-key"]) for r in fake_provider.requests] == [
            (deployment, AZURE_KEY)
        ] * 2
        assert AZURE_KEY not in recording.path.read_text(encoding="utf-8")
    go_keyless(monkeypatch)
    return recording


def test_the_recording_holds_the_whole_run(recorded: Recording) -> None:
    assert step_types(recorded.path) == STEP_TYPES
    first = payload(recorded.path, 0)
    assert (first["systemPrompt"], first["messages"]) == (INSTRUCTIONS, [{"role": "user", "content": PROMPT}])
    assert payload(recorded.path, 1) == {"type": "tool_calls", "calls": CALL_REFS}
    assert tool_results(recorded.path) == [("get_weather", WEATHER), ("get_time", LOCAL_TIME)]
    assert payload(recorded.path, 7) == {"type": "final_answer", "text": FINAL}
    assert payload(recorded.path, 8) == {"event": "run_completed", "status": "success", "result": FINAL}


def test_wrapped_tools_keep_the_definitions_langchain_reads(recorded: Recording) -> None:
    """Name, docstring and the parameter's description reach the model through the wrapper unchanged."""
    assert payload(recorded.path, 0)["tools"] == TOOL_DEFINITIONS


def test_the_tool_results_go_back_to_the_model(recorded: Recording) -> None:
    """LangChain sends a dict result as ``json.dumps`` of it: the agent got the wrapped tool's value."""
    assert payload(recorded.path, 6)["messages"][1:] == [
        {"role": "assistant", "content": [{"type": "tool_use", **ref} for ref in CALL_REFS]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "toolCallId": "call-0",
                    "toolName": "get_weather",
                    "result": json.dumps(WEATHER),
                },
                {"type": "tool_result", "toolCallId": "call-1", "toolName": "get_time", "result": LOCAL_TIME},
            ],
        },
    ]


def test_replay_is_offline_and_a_changed_instruction_fails_strictly(
    recorded: Recording, flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    """One recording, replayed as recorded (offline, no tool run), then with changed instructions."""
    replays_offline(recorded, network_guard, sessions, partial(run, flavor), final=FINAL, steps=9)
    rejected = anthropic.BadRequestError if flavor.api == "anthropic" else openai.BadRequestError
    fails_strictly(recorded, network_guard, sessions, partial(run, flavor), rejected)


#: A user's test file: the plugin's ``blackbox`` fixture, and ChatAnthropic reading ANTHROPIC_BASE_URL
#: and ANTHROPIC_API_KEY (a replay gets a placeholder key).
INNER_TEST = '''
import os

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool

CALLS = []


def get_weather(city: str) -> dict:
    """Current weather for a city.

    Args:
        city: City name, e.g. Paris.
    """
    CALLS.append(city)
    return {"city": city, "tempC": 21, "sky": "clear"}


@pytest.mark.blackbox
def test_weather(blackbox):
    weather = tool(blackbox.tool("get_weather", get_weather), parse_docstring=True)
    model = ChatAnthropic(model="claude-sonnet-5-5", max_tokens=1024).bind_tools([weather])
    messages = [SystemMessage("You are a travel assistant."), HumanMessage("What's the weather in Paris?")]
    reply = model.invoke(messages)
    while reply.tool_calls:
        messages += [reply, *(weather.invoke(call) for call in reply.tool_calls)]
        reply = model.invoke(messages)
    assert reply.text == "Paris is clear at 21 °C."
    assert CALLS == os.environ["EXPECT_TOOL_CALLS"].split()
'''


def test_the_plugin_records_once_then_replays_without_provider_or_key(
    inner: InnerSuite, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_provider.queue_anthropic_tool_calls([CALLS[0]])
    fake_provider.queue_anthropic_text("Paris is clear at 21 °C.")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_provider.anthropic_base_url)
    cassette = inner.records(INNER_TEST, "test_weather", expect_tool_calls="Paris")
    assert step_types(cassette) == [*STEP_TYPES[:4], *STEP_TYPES[6:]]
    assert payload(cassette, 3) == {"toolCallId": "call-0", "toolName": "get_weather", "result": WEATHER}
    inner.replays_offline(cassette, fake_provider, "ANTHROPIC_API_KEY")
