"""smolagents' ``ToolCallingAgent`` records and replays, over LiteLLM (Anthropic) and ``OpenAIServerModel``.

smolagents builds a tool from the function (``tool`` reads the signature and the docstring's
``Args:``), so the function is wrapped first: ``tool(bb.tool("get_weather", get_weather))``. The agent
answers through its ``final_answer`` tool, which the model calls like any other. smolagents writes
the tool calls of each step into the text of its history (``Calling tools: [{'id': …}]``) with the
provider's ids, and a replay hands back ``call-N`` ones: the documented ``normalize`` rule makes the
ids alike (docs/frameworks.md#smolagents). The replay runs with only the offline placeholder keys.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_blackbox import ReplayDivergenceError
from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing.fake_provider import FakeProvider
from tests.conftest import NetworkGuard

from .conftest import (
    CHANGED_INSTRUCTIONS,
    INSTRUCTIONS,
    LOCAL_TIME,
    WEATHER,
    InnerSuite,
    TravelTools,
    deferred_import,
    go_keyless,
    payload,
    step_types,
)
from .contract import Recording, record, replays_offline

if TYPE_CHECKING:
    import smolagents
    import smolagents.utils
else:
    smolagents = deferred_import(
        "smolagents", "smolagents is not installed (pip install 'pytest-blackbox[frameworks]')"
    )

PROMPT = "What's the weather and the local time in Paris?"
FINAL = "Paris is clear at 21 °C, and it is 14:05 there."
#: One per step: smolagents writes the calls of a step into its history in the order they finish
#: (docs/frameworks.md#smolagents), which two parallel calls would make differ between runs.
CALLS = [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]
#: The provider's tool-call ids in the text smolagents keeps, made alike (docs/frameworks.md#smolagents).
IDS = [(r"'id': '[^']*'", "'id': '<id>'")]
STEP_TYPES = [
    *["model_input", "model_output", "tool_call", "tool_result"] * 2,
    "model_input",
    "model_output",
    "metadata",
]


@dataclass(frozen=True)
class Flavor:
    """The model class (LiteLLM routed to Anthropic, or the OpenAI client), streamed or not."""

    api: str
    style: str = "sync"

    def model(self, root: str) -> Any:
        """The key comes from the environment: the suite's while recording, the placeholder in a replay."""
        if self.api == "anthropic":
            return smolagents.LiteLLMModel(model_id="anthropic/claude-sonnet-4-5", api_base=root)
        return smolagents.OpenAIServerModel(model_id="gpt-5", api_base=root + "/v1")

    def script(self, fake: FakeProvider) -> None:
        """One tool per step (see :data:`CALLS`), then the answer through ``final_answer``."""
        queue = fake.queue_anthropic_tool_calls if self.api == "anthropic" else fake.queue_openai_tool_calls
        for call in CALLS:
            queue([call])
        queue([("final_answer", {"answer": FINAL})])


#: LiteLLM's sync stream of an Anthropic answer is refused (docs/limitations.md), so streaming goes
#: through the OpenAI client.
FLAVORS = [
    pytest.param(Flavor("anthropic"), id="anthropic-sync"),
    pytest.param(Flavor("openai-chat"), id="openai-chat-sync"),
    pytest.param(Flavor("openai-chat", "stream"), id="openai-chat-stream"),
]


def run(flavor: Flavor, root: str, bb: Session, travel: TravelTools, instructions: str = INSTRUCTIONS) -> str:
    """The agent smolagents documents: wrapped tools, one model, ``run(task)``."""
    tools = [
        smolagents.tool(bb.tool("get_weather", travel.get_weather)),
        smolagents.tool(bb.tool("get_time", travel.get_time)),
    ]
    agent = smolagents.ToolCallingAgent(
        tools=tools,
        model=flavor.model(root),
        instructions=instructions,
        max_steps=4,
        stream_outputs=flavor.style == "stream",
        verbosity_level=smolagents.LogLevel.OFF,
    )
    return str(agent.run(PROMPT))


@pytest.fixture
def sessions(sessions: Callable[..., Session]) -> Callable[..., Session]:
    """The suite's sessions with the ids rule."""
    return partial(sessions, normalize=IDS)


@pytest.fixture
def recorded(
    fake_provider: FakeProvider,
    flavor: Flavor,
    tmp_path: Path,
    sessions: Callable[..., Session],
    monkeypatch: pytest.MonkeyPatch,
) -> Recording:
    """Recorded against the fake, which is then stopped; the keys are the placeholder from then on."""
    flavor.script(fake_provider)
    recording, answer, tools = record(
        fake_provider, tmp_path / "smolagents.json", sessions, partial(run, flavor)
    )
    assert answer == FINAL
    assert tools.calls == [("get_weather", "Paris"), ("get_time", "Paris")]
    assert [bool(r.json.get("stream")) for r in fake_provider.requests] == [flavor.style == "stream"] * 3
    go_keyless(monkeypatch)
    return recording


def test_the_recording_holds_the_whole_run(recorded: Recording) -> None:
    assert step_types(recorded.path) == STEP_TYPES
    first = payload(recorded.path, 0)
    assert INSTRUCTIONS in first["systemPrompt"]
    assert PROMPT in json.dumps(first["messages"])
    assert [definition["name"] for definition in first["tools"]] == [
        "get_weather",
        "get_time",
        "final_answer",
    ]
    assert [payload(recorded.path, index)["result"] for index in (3, 7)] == [WEATHER, LOCAL_TIME]
    last_call = payload(recorded.path, 9)["calls"][0]
    assert (last_call["toolName"], last_call["toolInput"]) == ("final_answer", {"answer": FINAL})


def test_replay_is_offline_keyless_and_a_changed_instruction_fails_strictly(
    recorded: Recording, flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    """One recording, replayed as recorded (offline, no tool run), then with changed instructions.
    smolagents puts the instructions into its own system prompt: the divergence names it."""
    replays_offline(recorded, network_guard, sessions, partial(run, flavor), final=FINAL, steps=11)
    network_guard.block()
    tools = TravelTools()
    bb = sessions(mode="replay", cassette=recorded.path)
    with pytest.raises(
        smolagents.utils.AgentGenerationError, match=r"\[blackbox\] replay diverged at step 0, systemPrompt"
    ):
        run(flavor, recorded.root, bb, tools, CHANGED_INSTRUCTIONS)
    error = bb.error
    assert isinstance(error, ReplayDivergenceError)
    assert (error.step_index, error.path) == (0, "systemPrompt")
    assert INSTRUCTIONS in str(error.expected) and CHANGED_INSTRUCTIONS in str(error.actual)
    assert tools.calls == []
    with pytest.raises(ReplayDivergenceError):
        bb.finish()


def test_without_the_ids_rule_the_replay_names_the_ids_in_the_text(
    recorded: Recording, flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    """Why the rule is needed: the second request's history text carries the recorded ids."""
    network_guard.block()
    bb = sessions(mode="replay", cassette=recorded.path, normalize=[])
    with pytest.raises(
        smolagents.utils.AgentGenerationError, match=r"replay diverged at step 4, messages\[1\]\.content"
    ):
        run(flavor, recorded.root, bb, TravelTools())
    error = bb.error
    assert isinstance(error, ReplayDivergenceError) and error.step_index == 4


#: A user's test file (docs/frameworks.md#smolagents): the ids rule on the marker, LiteLLM reading
#: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY (a replay gets the placeholder key).
INNER_TEST = '''
import os

import pytest
from smolagents import LiteLLMModel, LogLevel, ToolCallingAgent, tool

CALLS = []
IDS = [(r"'id': '[^']*'", "'id': '<id>'")]


def get_weather(city: str) -> dict:
    """Current weather for a city.

    Args:
        city: City name, e.g. Paris.
    """
    CALLS.append(city)
    return {"city": city, "tempC": 21, "sky": "clear"}


@pytest.mark.blackbox(normalize=IDS)
def test_weather(blackbox):
    weather = tool(blackbox.tool("get_weather", get_weather))
    model = LiteLLMModel(model_id="anthropic/claude-sonnet-4-5")
    agent = ToolCallingAgent(
        tools=[weather], model=model, instructions="You are a travel assistant.", verbosity_level=LogLevel.OFF
    )
    answer = agent.run("What's the weather in Paris?")
    assert answer == "Paris is clear at 21 °C."
    assert CALLS == os.environ["EXPECT_TOOL_CALLS"].split()
    blackbox.finish(result=answer)  # the run ends on the final_answer tool call: record its outcome
'''


def test_the_plugin_records_once_then_replays_without_provider_or_key(
    inner: InnerSuite, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_provider.queue_anthropic_tool_calls([CALLS[0]])
    fake_provider.queue_anthropic_tool_calls([("final_answer", {"answer": "Paris is clear at 21 °C."})])
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_provider.anthropic_base_url)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # as the plugin sets it for a run
    inner.in_a_process_of_its_own = True  # smolagents and LiteLLM imported anew, as in a user's run
    cassette = inner.records(INNER_TEST, "test_weather", expect_tool_calls="Paris")
    assert step_types(cassette) == [*STEP_TYPES[:4], *STEP_TYPES[8:]]
    inner.replays_offline(cassette, fake_provider, "ANTHROPIC_API_KEY")
