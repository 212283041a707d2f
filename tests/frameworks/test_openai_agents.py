"""OpenAI Agents SDK runs record and replay, over Chat Completions and over the Responses API.

The SDK builds its tool from the function (``function_tool`` reads the signature and the docstring),
so the tool is wrapped first: ``function_tool(bb.tool("get_weather", get_weather))``. Tracing is
disabled for the whole module: the SDK otherwise exports traces to the network from a background
thread, outside any session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openai
import pytest

from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing.fake_provider import FakeProvider
from tests import TEST_KEYS
from tests.conftest import NetworkGuard

from .conftest import (
    INSTRUCTIONS,
    WEATHER,
    InnerSuite,
    TravelTools,
    deferred_import,
    payload,
    step_types,
    tool_results,
)
from .contract import Recording, fails_strictly, record, replays_offline

if TYPE_CHECKING:
    import agents
else:
    agents = deferred_import("agents", "the OpenAI Agents SDK is not installed (pip install openai-agents)")

PROMPT = "What's the weather in Paris?"
FINAL = "Paris is clear at 21 °C."
CALL_REF = {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}
STEP_TYPES = [
    "model_input",
    "model_output",
    "tool_call",
    "tool_result",
    "model_input",
    "model_output",
    "metadata",
]
#: What ``function_tool`` makes of ``TravelTools.get_weather`` (names and descriptions from the docstring).
SCHEMA = {
    "properties": {"city": {"description": "City name, e.g. Paris.", "title": "City", "type": "string"}},
    "required": ["city"],
    "title": "get_weather_args",
    "type": "object",
}


@pytest.fixture(autouse=True, scope="module")
def no_tracing() -> Iterator[None]:
    """Never re-enabled: a later run would export its trace over the network, outside any session."""
    agents.set_tracing_disabled(True)
    yield


@dataclass(frozen=True)
class Flavor:
    """The SDK model class, and whether its tool is strict (the SDK's default)."""

    api: str
    strict: bool = True
    #: ``Runner.run_streamed`` instead of ``Runner.run_sync``: every model request is streamed.
    streamed: bool = False
    #: ``auto_previous_response_id``: each Responses request after the first names the previous response
    #: and sends only the new items.
    chained: bool = False

    def model(self, root: str) -> agents.Model:
        client = openai.AsyncOpenAI(base_url=root + "/v1", api_key=TEST_KEYS["OPENAI_API_KEY"])
        if self.api == "chat":
            return agents.OpenAIChatCompletionsModel(model="gpt-5", openai_client=client)
        return agents.OpenAIResponsesModel(model="gpt-5", openai_client=client)

    def script(self, fake: FakeProvider) -> None:
        queue: Callable[..., None] = (
            fake.queue_openai_tool_calls if self.api == "chat" else fake.queue_responses_tool_calls
        )
        queue([("get_weather", {"city": "Paris"})])
        queue([], text=FINAL)

    def tool_definition(self) -> dict[str, Any]:
        schema = {**SCHEMA, "additionalProperties": False} if self.strict else SCHEMA
        return {"name": "get_weather", "description": "Current weather for a city.", "inputSchema": schema}


FLAVORS = [
    pytest.param(Flavor("chat"), id="chat"),
    pytest.param(Flavor("chat", streamed=True), id="chat-streamed"),
    pytest.param(Flavor("chat", strict=False), id="chat-nonstrict"),
    pytest.param(Flavor("chat", strict=False, streamed=True), id="chat-nonstrict-streamed"),
    pytest.param(Flavor("responses"), id="responses"),
    pytest.param(Flavor("responses", streamed=True), id="responses-streamed"),
]


async def run_streamed(agent: agents.Agent[Any], chained: bool) -> Any:
    """The streamed run, read to the end."""
    result = agents.Runner.run_streamed(agent, PROMPT, auto_previous_response_id=chained)
    async for _event in result.stream_events():
        pass
    return result.final_output


def run(flavor: Flavor, root: str, bb: Session, tools: TravelTools, instructions: str = INSTRUCTIONS) -> str:
    """The recipe: wrap the function with the session, then let ``function_tool`` build the tool from it."""
    tool = agents.function_tool(bb.tool("get_weather", tools.get_weather), strict_mode=flavor.strict)
    agent = agents.Agent(name="travel", instructions=instructions, model=flavor.model(root), tools=[tool])
    output = (
        asyncio.run(run_streamed(agent, flavor.chained))
        if flavor.streamed
        else agents.Runner.run_sync(agent, PROMPT, auto_previous_response_id=flavor.chained).final_output
    )
    assert isinstance(output, str)
    return output


@pytest.fixture
def recorded(
    fake_provider: FakeProvider, flavor: Flavor, tmp_path: Path, sessions: Callable[..., Session]
) -> Recording:
    """The run recorded against the fake, which is then stopped: a replay has no server."""
    flavor.script(fake_provider)
    recording, answer, tools = record(
        fake_provider, tmp_path / "openai_agents.json", sessions, partial(run, flavor)
    )
    assert answer == FINAL
    assert tools.calls == [("get_weather", "Paris")]
    assert [request.json.get("stream", False) for request in fake_provider.requests] == [flavor.streamed] * 2
    return recording


def test_the_recording_holds_the_whole_run(recorded: Recording, flavor: Flavor) -> None:
    assert step_types(recorded.path) == STEP_TYPES
    first = payload(recorded.path, 0)
    assert (first["systemPrompt"], first["messages"]) == (INSTRUCTIONS, [{"role": "user", "content": PROMPT}])
    assert first["tools"] == [flavor.tool_definition()]
    assert first.get("params", {}).get("toolStrict") == ({"get_weather": True} if flavor.strict else None)
    assert payload(recorded.path, 1) == {"type": "tool_calls", "calls": [CALL_REF]}
    assert tool_results(recorded.path) == [("get_weather", WEATHER)]
    assert payload(recorded.path, 5) == {"type": "final_answer", "text": FINAL}
    assert payload(recorded.path, 6) == {"event": "run_completed", "status": "success", "result": FINAL}


def test_the_tool_result_goes_back_to_the_model(recorded: Recording) -> None:
    """The SDK sends a dict result as its ``str()``: the wrapped tool's return value reached the agent."""
    assert payload(recorded.path, 4)["messages"] == [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": [{"type": "tool_use", **CALL_REF}]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "toolCallId": "call-0",
                    "toolName": "get_weather",
                    "result": str(WEATHER),
                }
            ],
        },
    ]


def test_replay_is_offline_and_a_changed_instruction_fails_strictly(
    recorded: Recording, flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    """One recording, replayed as recorded (offline, no tool run), then with changed instructions."""
    replays_offline(recorded, network_guard, sessions, partial(run, flavor), final=FINAL, steps=7)
    rejected = openai.BadRequestError
    fails_strictly(recorded, network_guard, sessions, partial(run, flavor), rejected)


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "streamed"])
def test_a_chained_run_names_the_previous_response_by_its_neutral_id(
    fake_provider: FakeProvider,
    tmp_path: Path,
    sessions: Callable[..., Session],
    network_guard: NetworkGuard,
    streamed: bool,
) -> None:
    """``OpenAIResponsesModel`` with ``previous_response_id``: the second request sends only the tool
    result and names the first response, which the replay hands out as ``response-1``."""
    flavor = Flavor("responses", streamed=streamed, chained=True)
    flavor.script(fake_provider)
    recording, answer, _ = record(fake_provider, tmp_path / "chained.json", sessions, partial(run, flavor))
    assert answer == FINAL
    assert [str(r.json.get("previous_response_id"))[:5] for r in fake_provider.requests] == ["None", "resp_"]
    second = payload(recording.path, 4)
    assert second["params"]["previousResponseId"] == "response-1"
    assert [message["role"] for message in second["messages"]] == ["user"]
    replays_offline(recording, network_guard, sessions, partial(run, flavor), final=FINAL, steps=7)


#: A user's test file: the pytest plugin's ``blackbox`` fixture and the SDK's default model (the Responses
#: API); the SDK's client reads OPENAI_BASE_URL and OPENAI_API_KEY (a replay gets a placeholder key).
INNER_TEST = '''
import os

import pytest
from agents import Agent, Runner, function_tool, set_tracing_disabled

set_tracing_disabled(True)
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
    tool = function_tool(blackbox.tool("get_weather", get_weather))
    agent = Agent(name="travel", instructions="You are a travel assistant.", model="gpt-5", tools=[tool])
    result = Runner.run_sync(agent, "What's the weather in Paris?")
    assert result.final_output == "Paris is clear at 21 °C."
    assert CALLS == os.environ["EXPECT_TOOL_CALLS"].split()
'''


def test_the_plugin_records_once_then_replays_without_provider_or_key(
    inner: InnerSuite, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    Flavor("responses").script(fake_provider)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_provider.openai_base_url)
    cassette = inner.records(INNER_TEST, "test_weather", expect_tool_calls="Paris")
    assert step_types(cassette) == STEP_TYPES
    assert payload(cassette, 3) == {"toolCallId": "call-0", "toolName": "get_weather", "result": WEATHER}
    inner.replays_offline(cassette, fake_provider, "OPENAI_API_KEY")
