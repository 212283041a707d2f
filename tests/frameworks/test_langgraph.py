"""LangGraph ReAct agents record and replay: LangChain's prebuilt ``create_agent``, and a graph of its own
built from LangGraph's prebuilt ``ToolNode`` and ``tools_condition``.

Both take the tool functions and build the tools from them, so each function is wrapped first and the
wrapper handed over: ``create_agent(model, tools=[bb.tool("get_weather", get_weather)])``. The
``ToolNode`` runs the two tools the model asks for at once (threads for a sync run, tasks for an async
one); the recording still lists them in the model's order.
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
    payload,
    step_types,
    tool_results,
)
from .conftest import (
    TWO_TOOLS_THEN_ANSWER as STEP_TYPES,
)
from .contract import Recording, fails_strictly, record, replays_offline

if TYPE_CHECKING:
    import langchain.agents
    import langchain_anthropic
    import langchain_core.language_models
    import langchain_core.messages
    import langchain_core.runnables
    import langchain_core.tools
    import langchain_core.utils.function_calling
    import langchain_openai
    import langgraph.graph
    import langgraph.graph.state
    import langgraph.prebuilt
else:
    langchain = deferred_import(
        "langchain", "langchain is not installed (pip install 'pytest-blackbox[frameworks]')"
    )
    langchain_anthropic = deferred_import(
        "langchain_anthropic",
        "langchain_anthropic is not installed (pip install 'pytest-blackbox[frameworks]')",
    )
    langchain_core = deferred_import(
        "langchain_core", "langchain_core is not installed (pip install 'pytest-blackbox[frameworks]')"
    )
    langchain_openai = deferred_import(
        "langchain_openai", "langchain_openai is not installed (pip install 'pytest-blackbox[frameworks]')"
    )
    langgraph = deferred_import(
        "langgraph", "LangGraph is not installed (pip install 'pytest-blackbox[frameworks]')"
    )

PROMPT = "What's the weather and the local time in Paris?"
FINAL = "Paris is clear at 21 °C, and it is 14:05 there."
CALLS = [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]
CALL_REFS: list[dict[str, Any]] = [
    {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}},
    {"toolCallId": "call-1", "toolName": "get_time", "toolInput": {"city": "Paris"}},
]


@dataclass(frozen=True)
class Flavor:
    """Which agent graph, which chat model, and ``invoke`` or ``ainvoke``."""

    graph: str
    api: str
    style: str = "sync"

    def model(self, root: str) -> langchain_core.language_models.BaseChatModel:
        if self.api == "anthropic":
            return langchain_anthropic.ChatAnthropic(
                model="claude-sonnet-5-5", base_url=root, max_tokens=1024
            )
        return langchain_openai.ChatOpenAI(model="gpt-5", base_url=root + "/v1")

    def script(self, fake: FakeProvider) -> None:
        queue = fake.queue_anthropic_tool_calls if self.api == "anthropic" else fake.queue_openai_tool_calls
        queue(CALLS)
        queue([], text=FINAL)

    def agent(
        self, root: str, tools: list[Callable[..., Any]], instructions: str
    ) -> langgraph.graph.state.CompiledStateGraph[Any]:
        if self.graph == "create-agent":
            return langchain.agents.create_agent(self.model(root), tools=tools, system_prompt=instructions)
        return tool_node_graph(self.model(root), tools, instructions)


FLAVORS = [
    pytest.param(Flavor(graph, api, style), id=f"{graph}-{api}-{style}")
    for graph in ("create-agent", "tool-node")
    for api in ("anthropic", "openai-chat")
    for style in ("sync", "async")
]


def tool_node_graph(
    model: langchain_core.language_models.BaseChatModel, tools: list[Callable[..., Any]], instructions: str
) -> langgraph.graph.state.CompiledStateGraph[Any]:
    """The ReAct loop LangGraph documents: a model node, a ``ToolNode``, and ``tools_condition`` between."""
    bound = model.bind_tools(tools)

    def call_model(
        state: langgraph.graph.MessagesState,
    ) -> dict[str, list[langchain_core.messages.BaseMessage]]:
        return {
            "messages": [
                bound.invoke([langchain_core.messages.SystemMessage(instructions), *state["messages"]])
            ]
        }

    async def acall_model(
        state: langgraph.graph.MessagesState,
    ) -> dict[str, list[langchain_core.messages.BaseMessage]]:
        return {
            "messages": [
                await bound.ainvoke([langchain_core.messages.SystemMessage(instructions), *state["messages"]])
            ]
        }

    graph = langgraph.graph.StateGraph(langgraph.graph.MessagesState)
    graph.add_node("agent", langchain_core.runnables.RunnableLambda(call_model, afunc=acall_model))
    graph.add_node("tools", langgraph.prebuilt.ToolNode(tools))
    graph.add_edge(langgraph.graph.START, "agent")
    graph.add_conditional_edges("agent", langgraph.prebuilt.tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


def run(flavor: Flavor, root: str, bb: Session, travel: TravelTools, instructions: str = INSTRUCTIONS) -> str:
    """The recipe: hand the agent the wrapped functions."""
    tools = [bb.tool("get_weather", travel.get_weather), bb.tool("get_time", travel.get_time)]
    agent = flavor.agent(root, tools, instructions)
    state = {"messages": [langchain_core.messages.HumanMessage(PROMPT)]}
    result = asyncio.run(agent.ainvoke(state)) if flavor.style == "async" else agent.invoke(state)
    return str(result["messages"][-1].text)


@pytest.fixture
def recorded(
    fake_provider: FakeProvider, flavor: Flavor, tmp_path: Path, sessions: Callable[..., Session]
) -> Recording:
    """The run recorded against the fake, which is then stopped: a replay has no server."""
    flavor.script(fake_provider)
    recording, answer, tools = record(
        fake_provider, tmp_path / "langgraph.json", sessions, partial(run, flavor)
    )
    assert answer == FINAL
    assert sorted(tools.calls) == [("get_time", "Paris"), ("get_weather", "Paris")]
    return recording


def test_the_recording_holds_the_whole_run(recorded: Recording) -> None:
    assert step_types(recorded.path) == STEP_TYPES
    first = payload(recorded.path, 0)
    assert (first["systemPrompt"], first["messages"]) == (INSTRUCTIONS, [{"role": "user", "content": PROMPT}])
    assert [definition["name"] for definition in first["tools"]] == ["get_weather", "get_time"]
    assert payload(recorded.path, 1) == {"type": "tool_calls", "calls": CALL_REFS}
    assert tool_results(recorded.path) == [("get_weather", WEATHER), ("get_time", LOCAL_TIME)]
    assert payload(recorded.path, 6)["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "toolCallId": "call-0",
            "toolName": "get_weather",
            "result": json.dumps(WEATHER),
        },
        {"type": "tool_result", "toolCallId": "call-1", "toolName": "get_time", "result": LOCAL_TIME},
    ]
    assert payload(recorded.path, 8) == {"event": "run_completed", "status": "success", "result": FINAL}


def test_the_wrapper_is_invisible_to_langchain(recorded: Recording, flavor: Flavor) -> None:
    """The recorded definitions are the ones LangChain makes of the unwrapped functions: ``create_agent``
    turns a function into a tool (the whole docstring describes it), ``bind_tools`` parses the docstring."""
    travel = TravelTools()
    converted = [
        langchain_core.utils.function_calling.convert_to_openai_tool(
            langchain_core.tools.tool(fn) if flavor.graph == "create-agent" else fn
        )["function"]
        for fn in (travel.get_weather, travel.get_time)
    ]
    assert payload(recorded.path, 0)["tools"] == [
        {"name": c["name"], "description": c["description"], "inputSchema": c["parameters"]}
        for c in converted
    ]


def test_replay_is_offline_and_a_changed_instruction_fails_strictly(
    recorded: Recording, flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    """One recording, replayed as recorded (offline, no tool run), then with changed instructions."""
    replays_offline(recorded, network_guard, sessions, partial(run, flavor), final=FINAL, steps=9)
    rejected = anthropic.BadRequestError if flavor.api == "anthropic" else openai.BadRequestError
    fails_strictly(recorded, network_guard, sessions, partial(run, flavor), rejected)


#: A user's test file: the plugin's ``blackbox`` fixture and LangChain's prebuilt agent over ChatAnthropic,
#: which reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY (a replay gets a placeholder key).
INNER_TEST = '''
import os

import pytest
from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic

CALLS = []


def get_weather(city: str) -> dict:
    """Current weather for a city."""
    CALLS.append(city)
    return {"city": city, "tempC": 21, "sky": "clear"}


@pytest.mark.blackbox
def test_weather(blackbox):
    agent = create_agent(
        ChatAnthropic(model="claude-sonnet-5-5", max_tokens=1024),
        tools=[blackbox.tool("get_weather", get_weather)],
        system_prompt="You are a travel assistant.",
    )
    result = agent.invoke({"messages": [{"role": "user", "content": "What's the weather in Paris?"}]})
    assert result["messages"][-1].text == "Paris is clear at 21 °C."
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
