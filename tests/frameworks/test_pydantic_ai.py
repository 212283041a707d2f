"""pydantic-ai agents record and replay through the SDK clients pydantic-ai builds itself.

pydantic-ai registers tool functions itself and reads their signature and docstring, so a tool is
wrapped *before* it is registered: ``agent.tool_plain(bb.tool("get_weather", get_weather))``. The
wrapper keeps the signature and docstring (``functools.wraps``), which the recorded tool definitions
below prove. The model's client is pointed at the fake provider through pydantic-ai's own
``AnthropicProvider(base_url=…)`` / ``OpenAIProvider(base_url=…)``.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_blackbox.engine.session import Session
from pytest_blackbox.errors import BlackboxUnsupportedError
from pytest_blackbox.testing.fake_provider import FakeProvider
from tests.conftest import NetworkGuard

from .conftest import (
    INSTRUCTIONS,
    LOCAL_TIME,
    WEATHER,
    InnerSuite,
    TravelTools,
    compact,
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
    import pydantic_ai
    import pydantic_ai.exceptions
    import pydantic_ai.models.anthropic
    import pydantic_ai.models.openai
    import pydantic_ai.providers.anthropic
    import pydantic_ai.providers.openai
    from pydantic_ai import Agent, AgentStreamEvent, RunContext
    from pydantic_ai.models import Model
else:
    pydantic_ai = deferred_import(
        "pydantic_ai", "pydantic-ai is not installed (pip install 'pydantic-ai-slim[anthropic,openai]')"
    )

PROMPT = "What's the weather and the local time in Paris?"
FINAL = "Paris is clear at 21 °C, and it is 14:05 there."
CALLS = [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]
CITY_SCHEMA = {
    "additionalProperties": False,
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
    """One way of running the agent: the model class, and the settings that decide its wire format."""

    api: str
    max_tokens: int | None = 1024
    strict: bool | None = None
    #: With an event stream handler, pydantic-ai streams every model request.
    handle_events: bool = False

    @property
    def streamed(self) -> bool:
        """Anthropic without max_tokens: the model's maximum is over the SDK's non-streaming limit."""
        return self.handle_events or (self.api == "anthropic" and self.max_tokens is None)

    def model(self, root: str) -> Model:
        if self.api == "anthropic":
            return pydantic_ai.models.anthropic.AnthropicModel(
                "claude-sonnet-5-5", provider=pydantic_ai.providers.anthropic.AnthropicProvider(base_url=root)
            )
        provider = pydantic_ai.providers.openai.OpenAIProvider(base_url=root + "/v1")
        if self.api == "openai-chat":
            return pydantic_ai.models.openai.OpenAIChatModel("gpt-5", provider=provider)
        return pydantic_ai.models.openai.OpenAIResponsesModel("gpt-5", provider=provider)

    def script(self, fake: FakeProvider) -> None:
        """The model's two turns: both tools at once, then the answer."""
        queue: Callable[..., None] = {
            "anthropic": fake.queue_anthropic_tool_calls,
            "openai-chat": fake.queue_openai_tool_calls,
            "openai-responses": fake.queue_responses_tool_calls,
        }[self.api]
        queue(CALLS)
        queue([], text=FINAL)

    def tool_strict(self) -> dict[str, bool] | None:
        """What ``params.toolStrict`` records: both tools' schemas allow strict, so pydantic-ai marks them
        strict for OpenAI unless registered with ``strict=False``, which Chat Completions records like
        leaving strict out."""
        if self.api == "anthropic" or self.strict is False:
            return None
        return {"get_weather": True, "get_time": True}

    def user_message(self) -> dict[str, Any]:
        """pydantic-ai sends the prompt as a text block to Anthropic and as a string to OpenAI."""
        if self.api == "anthropic":
            return {"role": "user", "content": [{"type": "text", "text": PROMPT}]}
        return {"role": "user", "content": PROMPT}


FLAVORS = [
    pytest.param(Flavor("anthropic"), id="anthropic"),
    pytest.param(Flavor("anthropic", max_tokens=None), id="anthropic-streamed"),
    pytest.param(Flavor("openai-chat"), id="openai-chat"),
    pytest.param(Flavor("openai-chat", strict=False), id="openai-chat-nonstrict"),
    pytest.param(
        Flavor("openai-chat", strict=False, handle_events=True), id="openai-chat-nonstrict-streamed"
    ),
    pytest.param(Flavor("openai-responses"), id="openai-responses"),
    pytest.param(Flavor("openai-responses", handle_events=True), id="openai-responses-streamed"),
]


async def drain(_context: RunContext[object], events: AsyncIterable[AgentStreamEvent]) -> None:
    """An event stream handler that only reads the events."""
    async for _event in events:
        pass


def build_agent(flavor: Flavor, root: str, bb: Session, tools: TravelTools, instructions: str) -> Agent:
    """The recipe: wrap each tool with the session, then register the wrapper with pydantic-ai."""
    settings: Any = {"max_tokens": flavor.max_tokens} if flavor.max_tokens is not None else None
    agent = pydantic_ai.Agent(flavor.model(root), instructions=instructions, model_settings=settings)
    register = agent.tool_plain(strict=flavor.strict) if flavor.strict is not None else agent.tool_plain
    register(bb.tool("get_weather", tools.get_weather))
    register(bb.tool("get_time", tools.get_time))
    return agent


def run(flavor: Flavor, root: str, bb: Session, tools: TravelTools, instructions: str = INSTRUCTIONS) -> str:
    agent = build_agent(flavor, root, bb, tools, instructions)
    output = agent.run_sync(PROMPT, event_stream_handler=drain if flavor.handle_events else None).output
    assert isinstance(output, str)
    return output


@pytest.fixture
def recorded(
    fake_provider: FakeProvider, flavor: Flavor, tmp_path: Path, sessions: Callable[..., Session]
) -> Recording:
    """The conversation recorded against the fake, which is then stopped: a replay has no server."""
    flavor.script(fake_provider)
    recording, answer, tools = record(
        fake_provider, tmp_path / "pydantic_ai.json", sessions, partial(run, flavor)
    )
    assert answer == FINAL
    assert sorted(tools.calls) == [("get_time", "Paris"), ("get_weather", "Paris")]
    assert [request.json["stream"] for request in fake_provider.requests] == [flavor.streamed] * 2
    return recording


def test_the_recording_holds_the_whole_run(recorded: Recording, flavor: Flavor) -> None:
    assert step_types(recorded.path) == STEP_TYPES
    first = payload(recorded.path, 0)
    assert (first["systemPrompt"], first["messages"]) == (INSTRUCTIONS, [flavor.user_message()])
    assert first.get("params", {}).get("toolStrict") == flavor.tool_strict()
    assert payload(recorded.path, 1) == {"type": "tool_calls", "calls": CALL_REFS}
    assert tool_results(recorded.path) == [("get_weather", WEATHER), ("get_time", LOCAL_TIME)]
    assert payload(recorded.path, 7) == {"type": "final_answer", "text": FINAL}
    assert payload(recorded.path, 8) == {"event": "run_completed", "status": "success", "result": FINAL}


def test_wrapped_tools_keep_the_definitions_pydantic_ai_reads(recorded: Recording) -> None:
    """Name, docstring and parameter description reach the model through the wrapper unchanged."""
    assert payload(recorded.path, 0)["tools"] == TOOL_DEFINITIONS


def test_the_tool_results_go_back_to_the_model(recorded: Recording, flavor: Flavor) -> None:
    """The second request carries both results: the agent got the wrapped tools' return values."""
    assert payload(recorded.path, 6)["messages"] == [
        flavor.user_message(),
        {"role": "assistant", "content": [{"type": "tool_use", **ref} for ref in CALL_REFS]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "toolCallId": "call-0",
                    "toolName": "get_weather",
                    "result": compact(WEATHER),
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
    rejected = pydantic_ai.exceptions.ModelRequestRejectedError
    fails_strictly(recorded, network_guard, sessions, partial(run, flavor), rejected)


#: A user's test file: the pytest plugin's ``blackbox`` fixture, and pydantic-ai's model string; the SDK
#: client reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY (a replay gets a placeholder key from the plugin).
INNER_TEST = '''
import os

import pytest
from pydantic_ai import Agent, AgentStreamEvent, RunContext

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
    agent = Agent(
        "anthropic:claude-sonnet-5-5",
        instructions="You are a travel assistant.",
        model_settings={"max_tokens": 1024},
    )
    agent.tool_plain(blackbox.tool("get_weather", get_weather))
    result = agent.run_sync("What's the weather in Paris?")
    assert result.output == "Paris is clear at 21 °C."
    assert CALLS == os.environ["EXPECT_TOOL_CALLS"].split()
'''


def test_the_plugin_records_once_then_replays_without_provider_or_key(
    inner: InnerSuite, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_provider.queue_anthropic_tool_calls([("get_weather", {"city": "Paris"})])
    fake_provider.queue_anthropic_text("Paris is clear at 21 °C.")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_provider.anthropic_base_url)
    cassette = inner.records(INNER_TEST, "test_weather", expect_tool_calls="Paris")
    assert step_types(cassette) == [*STEP_TYPES[:4], *STEP_TYPES[6:]]
    assert payload(cassette, 3) == {"toolCallId": "call-0", "toolName": "get_weather", "result": WEATHER}
    inner.replays_offline(cassette, fake_provider, "ANTHROPIC_API_KEY")


@pytest.fixture
def run_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """pydantic-ai reads a tool's annotations by name in this module's globals: ``RunContext`` must be
    bound there when a tool taking it is registered (pydantic-ai is imported only once a test uses it)."""
    monkeypatch.setitem(globals(), "RunContext", pydantic_ai.RunContext)


def get_time(_context: RunContext[object], city: str) -> str:
    """Local time in a city.

    Args:
        city: City name, e.g. Paris.
    """
    return LOCAL_TIME


@pytest.mark.usefixtures("run_context")
def test_a_wrapped_tool_taking_the_run_context_is_refused_with_a_typed_error(
    fake_provider: FakeProvider, tmp_path: Path, sessions: Callable[..., Session]
) -> None:
    fake_provider.queue_anthropic_tool_calls([CALLS[1]])
    bb = sessions(mode="record", out=tmp_path / "context.json")
    agent = pydantic_ai.Agent(
        Flavor("anthropic").model(fake_provider.base_url), model_settings={"max_tokens": 1024}
    )
    agent.tool(bb.tool("get_time", get_time))
    with pytest.raises(BlackboxUnsupportedError) as refused:
        agent.run_sync(PROMPT)
    message = str(refused.value)
    assert " in RunContext.model in the arguments of tool get_time is not supported: " in message
    assert "\n" not in message
    assert bb.error is refused.value


@pytest.mark.usefixtures("run_context")
def test_a_tool_taking_the_run_context_wraps_its_context_free_part(
    fake_provider: FakeProvider, tmp_path: Path, sessions: Callable[..., Session]
) -> None:
    """The recipe for ``agent.tool``: the context stays outside; the wrapped part gets the model's input."""
    tools = TravelTools()

    def run_once(bb: Session, root: str) -> str:
        agent = pydantic_ai.Agent(Flavor("anthropic").model(root), model_settings={"max_tokens": 1024})
        local_time = bb.tool("get_time", tools.get_time)

        @agent.tool
        def get_time(context: RunContext[object], city: str) -> str:
            """Local time in a city.

            Args:
                city: City name, e.g. Paris.
            """
            return local_time(city)

        output = agent.run_sync(PROMPT).output
        bb.finish(result=output)
        return str(output)

    fake_provider.queue_anthropic_tool_calls([CALLS[1]])
    fake_provider.queue_anthropic_text(FINAL)
    path = tmp_path / "context.json"
    assert run_once(sessions(mode="record", out=path), fake_provider.base_url) == FINAL
    assert tool_results(path) == [("get_time", LOCAL_TIME)]
    assert payload(path, 0)["tools"] == [TOOL_DEFINITIONS[1]]
    root = fake_provider.base_url
    fake_provider.stop()
    assert run_once(sessions(mode="replay", cassette=path), root) == FINAL
    assert tools.calls == [("get_time", "Paris")]


def test_async_tools_are_wrapped_the_same_way(
    fake_provider: FakeProvider, tmp_path: Path, sessions: Callable[..., Session]
) -> None:
    calls: list[str] = []

    async def get_weather(city: str) -> dict[str, Any]:
        """Current weather for a city.

        Args:
            city: City name, e.g. Paris.
        """
        calls.append(city)
        return dict(WEATHER, city=city)

    def run_once(bb: Session, root: str) -> str:
        agent = pydantic_ai.Agent(Flavor("anthropic").model(root), model_settings={"max_tokens": 1024})
        agent.tool_plain(bb.tool("get_weather", get_weather))
        output = agent.run_sync(PROMPT).output
        bb.finish(result=output)
        return str(output)

    fake_provider.queue_anthropic_tool_calls([CALLS[0]])
    fake_provider.queue_anthropic_text(FINAL)
    path = tmp_path / "async.json"
    assert run_once(sessions(mode="record", out=path), fake_provider.base_url) == FINAL
    assert tool_results(path) == [("get_weather", WEATHER)]
    assert payload(path, 0)["tools"] == [TOOL_DEFINITIONS[0]]
    root = fake_provider.base_url
    fake_provider.stop()
    assert run_once(sessions(mode="replay", cassette=path), root) == FINAL
    assert calls == ["Paris"]
