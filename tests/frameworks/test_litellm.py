"""LiteLLM's ``completion`` and ``acompletion`` record and replay as the protocol they are routed to.

LiteLLM turns an OpenAI-style call into the provider's own request (``anthropic/…`` sends Anthropic
Messages, ``openai/…`` and ``azure/…`` Chat Completions, ``gemini/…`` the Gemini API, ``bedrock/…``
Converse, ``bedrock/invoke/…`` Anthropic on Bedrock) and sends it through httpx or the provider's
SDK, so nothing needs wrapping but the tools: the cassette holds the underlying protocol's calls, and
the replay runs with no key or credential set. Its import-time fetch of a model price list never
reaches the network under the plugin, which sets ``LITELLM_LOCAL_MODEL_COST_MAP``
(docs/providers.md#litellm).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing.fake_provider import FakeProvider
from tests import TEST_KEYS
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
)
from .conftest import TWO_TOOLS_THEN_ANSWER as STEP_TYPES
from .contract import Recording, fails_strictly, record, replays_offline

if TYPE_CHECKING:
    import litellm
    import litellm.exceptions
else:
    litellm = deferred_import("litellm", "LiteLLM is not installed (pip install 'pytest-blackbox[litellm]')")

PROMPT = "What's the weather and the local time in Paris?"
FINAL = "Paris is clear at 21 °C, and it is 14:05 there."
CALLS = [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOL_SPECS = [
    {"type": "function", "function": {"name": name, "description": description, "parameters": CITY}}
    for name, description in (("get_weather", "Current weather for a city."), ("get_time", "Local time."))
]


@dataclass(frozen=True)
class Route:
    """Where LiteLLM sends a model: its model string, the ``api_base`` under the server root, its other
    options, and the fake provider's queue answering the protocol it speaks there."""

    model: str
    base: str
    queue: str
    options: tuple[tuple[str, str], ...] = ()


#: LiteLLM's routes, each pointed at the fake provider as a user points it at a gateway: Anthropic
#: Messages, Chat Completions, Azure OpenAI's deployment paths, the Gemini API and Bedrock's Converse.
ROUTES = {
    "anthropic": Route("anthropic/claude-sonnet-4-5", "", "queue_anthropic_tool_calls"),
    "openai-chat": Route("openai/gpt-5", "/v1", "queue_openai_tool_calls"),
    "azure": Route("azure/travel-assistant", "", "queue_openai_tool_calls", (("api_version", "2024-10-21"),)),
    "gemini": Route("gemini/gemini-2.5-flash", "", "queue_gemini_tool_calls"),
    "bedrock": Route("bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0", "", "queue_converse_tool_calls"),
    "bedrock-invoke": Route(
        "bedrock/invoke/anthropic.claude-sonnet-4-5-20250929-v1:0", "", "queue_anthropic_tool_calls"
    ),
}
#: Obviously fake credentials of the routes the suite's provider keys do not cover.
CLOUD_KEYS = {
    "AZURE_OPENAI_API_KEY": "azure-suite-test-key-0123456789abcdef",
    "GEMINI_API_KEY": "gemini-suite-test-key-0123456789abcdef",
    "AWS_ACCESS_KEY_ID": "AKIABLACKBOXFAKE0006",
    "AWS_SECRET_ACCESS_KEY": "blackbox-fake-secret-access-key-litellm",
}


@dataclass(frozen=True)
class Flavor:
    """The route LiteLLM takes, ``completion`` or ``acompletion``, streamed or not."""

    api: str
    style: str

    def model(self, root: str) -> dict[str, str]:
        route = ROUTES[self.api]
        return {"model": route.model, "api_base": root + route.base, **dict(route.options)}

    def script(self, fake: FakeProvider) -> None:
        queue = getattr(fake, ROUTES[self.api].queue)
        queue(CALLS)
        queue([], text=FINAL)


#: LiteLLM's sync stream of an Anthropic answer stops reading at ``message_delta``, before the stream's
#: closing ``message_stop``: it has read the whole answer, so it records like the others.
FLAVORS = [
    pytest.param(Flavor(api, style), id=f"{api}-{style}")
    for api in ROUTES
    for style in ("sync", "sync-stream", "async", "async-stream")
]


@pytest.fixture(autouse=True)
def _cloud_keys(provider_keys: pytest.MonkeyPatch) -> None:
    for name, value in CLOUD_KEYS.items():
        provider_keys.setenv(name, value)


async def complete(flavor: Flavor, root: str, messages: list[dict[str, Any]]) -> Any:
    """One model call; a streamed answer is added up the way LiteLLM documents."""
    options = {**flavor.model(root), "messages": messages, "tools": TOOL_SPECS}
    stream = flavor.style.endswith("stream")
    if flavor.style.startswith("async"):
        answer = await litellm.acompletion(**options, stream=stream)
        chunks = [chunk async for chunk in answer] if stream else None
    else:
        answer = litellm.completion(**options, stream=stream)
        chunks = list(answer) if stream else None
    return answer if chunks is None else litellm.stream_chunk_builder(chunks, messages=messages)


def run(flavor: Flavor, root: str, bb: Session, travel: TravelTools, instructions: str = INSTRUCTIONS) -> str:
    """An agent loop over LiteLLM: call, run the wrapped tools it asks for, call again."""
    tools = bb.tools({"get_weather": travel.get_weather, "get_time": travel.get_time})
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": instructions},
        {"role": "user", "content": PROMPT},
    ]
    while True:
        message = asyncio.run(complete(flavor, root, messages)).choices[0].message
        if not message.tool_calls:
            return str(message.content)
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = tools[call.function.name](**json.loads(call.function.arguments))
            content = result if isinstance(result, str) else json.dumps(result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})


@pytest.fixture
def recorded(
    fake_provider: FakeProvider,
    flavor: Flavor,
    tmp_path: Path,
    sessions: Callable[..., Session],
    provider_keys: pytest.MonkeyPatch,
) -> Recording:
    """Recorded against the fake, which is then stopped; no key or credential is set from then on."""
    flavor.script(fake_provider)
    recording, answer, tools = record(
        fake_provider, tmp_path / "litellm.json", sessions, partial(run, flavor)
    )
    assert answer == FINAL
    assert tools.calls == [("get_weather", "Paris"), ("get_time", "Paris")]
    go_keyless(provider_keys)
    return recording


def test_the_recording_holds_the_underlying_protocol_and_no_key_or_credential(
    recorded: Recording, flavor: Flavor
) -> None:
    """One recording read twice: the run in the protocol under LiteLLM, then every key kept out."""
    assert step_types(recorded.path) == STEP_TYPES
    first = payload(recorded.path, 0)
    [user] = first["messages"]
    assert (first["systemPrompt"], user["role"]) == (INSTRUCTIONS, "user")
    assert PROMPT in json.dumps(user["content"])  # LiteLLM sends Anthropic a list of text blocks
    assert [definition["name"] for definition in first["tools"]] == ["get_weather", "get_time"]
    assert first["model"] == ROUTES[flavor.api].model.rsplit("/", 1)[1]  # the route prefix is LiteLLM's
    assert [payload(recorded.path, index)["result"] for index in (3, 5)] == [WEATHER, LOCAL_TIME]
    assert payload(recorded.path, 8) == {"event": "run_completed", "status": "success", "result": FINAL}
    text = recorded.path.read_text(encoding="utf-8")
    for secret in (*TEST_KEYS.values(), *CLOUD_KEYS.values()):
        assert secret not in text
    assert "Signature" not in text and "AWS4-HMAC" not in text


def test_replay_is_offline_and_a_changed_instruction_fails_strictly(
    recorded: Recording, flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    """One recording, replayed as recorded (offline, no tool run), then with changed instructions."""
    replays_offline(recorded, network_guard, sessions, partial(run, flavor), final=FINAL, steps=9)
    fails_strictly(
        recorded, network_guard, sessions, partial(run, flavor), litellm.exceptions.BadRequestError
    )


#: A user's test file importing LiteLLM inside the test, while the session runs: its price-list fetch
#: would come then, and the replay has no key (the plugin sets a placeholder) and no provider.
INNER_TEST = """
import os

import pytest

CALLS = []


def get_weather(city: str) -> dict:
    CALLS.append(city)
    return {"city": city, "tempC": 21, "sky": "clear"}


@pytest.mark.blackbox
def test_weather(blackbox):
    import litellm
    import litellm.exceptions

    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    messages = [{"role": "user", "content": "What's the weather in Paris?"}]
    weather = blackbox.tool("get_weather", get_weather)
    while True:
        message = litellm.completion(
            model=os.environ["LITELLM_MODEL"], messages=messages, tools=[tool]
        ).choices[0].message
        if not message.tool_calls:
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = weather(**__import__("json").loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": str(result)})
    assert message.content == "Paris is clear at 21 °C."
    assert CALLS == os.environ["EXPECT_TOOL_CALLS"].split()
"""


#: Routes run through the plugin: the variable LiteLLM reads the provider's address from, and the
#: credentials the replay goes without (the plugin sets their placeholders before conftests load).
PLUGIN_ROUTES = {
    "anthropic": ("ANTHROPIC_BASE_URL", ("ANTHROPIC_API_KEY",)),
    "bedrock": ("AWS_BEDROCK_RUNTIME_ENDPOINT", ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")),
}


@pytest.mark.parametrize("api", PLUGIN_ROUTES)
def test_the_plugin_records_once_then_replays_without_provider_or_key(
    api: str, inner: InnerSuite, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    address, credentials = PLUGIN_ROUTES[api]
    queue = getattr(fake_provider, ROUTES[api].queue)
    queue([CALLS[0]])
    queue([], text="Paris is clear at 21 °C.")
    monkeypatch.setenv(address, fake_provider.base_url)
    monkeypatch.setenv("LITELLM_MODEL", ROUTES[api].model)
    inner.in_a_process_of_its_own = True  # LiteLLM is first imported while the session runs
    cassette = inner.records(INNER_TEST, "test_weather", expect_tool_calls="Paris")
    assert step_types(cassette) == [*STEP_TYPES[:4], *STEP_TYPES[6:]]
    inner.replays_offline(cassette, fake_provider, *credentials)
