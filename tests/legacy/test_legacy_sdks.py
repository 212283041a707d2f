"""Agents on the SDK generations before httpx2 (anthropic < 1, openai < 3) record and replay too.

The module is SDK-version neutral: in the main suite (current SDKs, httpx2) it runs the same agents
through the same path, and ``.ci/legacy`` runs it in a venv with ``anthropic<1`` and ``openai<3``, whose
clients send through httpx. The expected cassette payloads are the same constants for both
generations, and ``recorded/<api>.json`` (written by this module's agents with anthropic 0.125.0 and
openai 2.54.0, sync clients, against the fake provider) replays with whichever generation runs: a
cassette recorded with one replays with the other.

Legacy wire details this covers: anthropic < 1 sends ``anthropic-version: 2023-06-01`` and the beta
API at ``/v1/messages?beta=true``; openai < 3 has the Responses API too.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from pytest_blackbox.engine.session import Session
from pytest_blackbox.errors import ReplayDivergenceError
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests import TEST_KEYS
from tests.conftest import NetworkGuard

ANTHROPIC_KEY = TEST_KEYS["ANTHROPIC_API_KEY"]
OPENAI_KEY = TEST_KEYS["OPENAI_API_KEY"]
LEGACY = int(anthropic.__version__.split(".")[0]) < 1 and int(openai.__version__.split(".")[0]) < 3
SYSTEM = "You are a travel assistant. Answer only from the tools' data."
CHANGED_SYSTEM = "You are a pirate. Answer in pirate speak."
PROMPT = "What's the weather and the local time in Paris?"
FINAL = "Paris is clear at 21 °C, and it is 14:05 there."
WEATHER = {"city": "Paris", "tempC": 21, "sky": "clear"}
LOCAL_TIME = "14:05"
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [
    {"name": "get_weather", "description": "Current weather for a city.", "inputSchema": CITY},
    {"name": "get_time", "description": "Local time in a city.", "inputSchema": CITY},
]
CALLS = [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]
CALL_REFS = [
    {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}},
    {"toolCallId": "call-1", "toolName": "get_time", "toolInput": {"city": "Paris"}},
]
STEP_TYPES = [
    "model_input",
    "model_output",
    *["tool_call", "tool_result"] * 2,
    "model_input",
    "model_output",
    "metadata",
]
LEGACY_CASSETTES = Path(__file__).parent / "recorded"
MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-5"}
#: The params each API's request carries: every agent asks for 1024 tokens; Responses tools say strict.
PARAMS = {
    "anthropic": {"maxTokens": 1024},
    "anthropic-beta": {"maxTokens": 1024},
    "openai-chat": {"maxTokens": 1024},
    "openai-responses": {"maxTokens": 1024, "toolStrict": {"get_weather": False, "get_time": False}},
}


pytestmark = pytest.mark.usefixtures("provider_keys")


@dataclass
class Tools:
    """The real tools, sync or async; they log their calls, so a replay can prove it ran none."""

    is_async: bool
    calls: list[str] = field(default_factory=list)

    def functions(self) -> dict[str, Callable[..., Any]]:
        def get_weather(city: str) -> dict[str, Any]:
            self.calls.append(f"get_weather({city})")
            return dict(WEATHER, city=city)

        def get_time(city: str) -> str:
            self.calls.append(f"get_time({city})")
            return LOCAL_TIME

        async def get_weather_async(city: str) -> dict[str, Any]:
            return get_weather(city)

        async def get_time_async(city: str) -> str:
            return get_time(city)

        if self.is_async:
            return {"get_weather": get_weather_async, "get_time": get_time_async}
        return {"get_weather": get_weather, "get_time": get_time}


@dataclass(frozen=True)
class Call:
    """A tool call the model asked for, whatever the API's own shape."""

    id: str
    name: str
    arguments: str


async def settle(value: Any) -> Any:
    """Await what is awaitable (async client or tool), pass plain values (sync) through."""
    return await value if inspect.isawaitable(value) else value


async def call_tools(tools: dict[str, Callable[..., Any]], calls: list[Call]) -> dict[str, str]:
    """Run the requested calls in order: call id → JSON result."""
    return {
        call.id: json.dumps(await settle(tools[call.name](**json.loads(call.arguments)))) for call in calls
    }


def anthropic_tools() -> list[dict[str, Any]]:
    return [
        {"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]} for t in TOOLS
    ]


async def run_anthropic(client: Any, tools: dict[str, Callable[..., Any]], system: str, beta: bool) -> str:
    api = client.beta.messages if beta else client.messages
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    while True:
        response = await settle(
            api.create(
                model=MODELS["anthropic"],
                max_tokens=1024,
                system=system,
                tools=anthropic_tools(),
                messages=messages,
            )
        )
        uses = [block for block in response.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in response.content if block.type == "text")
        results = await call_tools(tools, [Call(use.id, use.name, json.dumps(use.input)) for use in uses])
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": use.id, "name": use.name, "input": use.input} for use in uses
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call_id, "content": result}
                    for call_id, result in results.items()
                ],
            }
        )


def chat_tools() -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t["description"], "parameters": t["inputSchema"]},
        }
        for t in TOOLS
    ]


async def run_openai_chat(client: Any, tools: dict[str, Callable[..., Any]], system: str) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": PROMPT},
    ]
    while True:
        completion = await settle(
            client.chat.completions.create(
                model=MODELS["openai"], max_completion_tokens=1024, tools=chat_tools(), messages=messages
            )
        )
        message = completion.choices[0].message
        if not message.tool_calls:
            return str(message.content)
        calls = [Call(c.id, c.function.name, c.function.arguments) for c in message.tool_calls]
        results = await call_tools(tools, calls)
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in calls
                ],
            }
        )
        messages += [
            {"role": "tool", "tool_call_id": call_id, "content": result}
            for call_id, result in results.items()
        ]


def responses_tools() -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "name": t["name"],
            "description": t["description"],
            "parameters": t["inputSchema"],
            "strict": False,
        }
        for t in TOOLS
    ]


async def run_openai_responses(client: Any, tools: dict[str, Callable[..., Any]], system: str) -> str:
    items: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    while True:
        response = await settle(
            client.responses.create(
                model=MODELS["openai"],
                instructions=system,
                max_output_tokens=1024,
                tools=responses_tools(),
                input=items,
            )
        )
        uses = [item for item in response.output if item.type == "function_call"]
        if not uses:
            return str(response.output_text)
        results = await call_tools(tools, [Call(use.call_id, use.name, use.arguments) for use in uses])
        items += [
            {
                "type": "function_call",
                "call_id": u.call_id,
                "name": u.name,
                "arguments": u.arguments,
                "id": u.id,
            }
            for u in uses
        ]
        items += [
            {"type": "function_call_output", "call_id": call_id, "output": result}
            for call_id, result in results.items()
        ]


@dataclass(frozen=True)
class Flavor:
    """One API of one SDK, with a sync or an async client."""

    api: str
    is_async: bool

    @property
    def sdk(self) -> str:
        return self.api.split("-")[0]

    def client(self, root: str) -> Any:
        if self.sdk == "anthropic":
            kind = anthropic.AsyncAnthropic if self.is_async else anthropic.Anthropic
            return kind(base_url=root, api_key=ANTHROPIC_KEY, max_retries=0)
        openai_kind = openai.AsyncOpenAI if self.is_async else openai.OpenAI
        return openai_kind(base_url=root + "/v1", api_key=OPENAI_KEY, max_retries=0)

    def script(self, fake: FakeProvider) -> None:
        """The model's two turns: both tools at once, then the answer."""
        queue: Callable[..., None] = {
            "anthropic": fake.queue_anthropic_tool_calls,
            "openai": fake.queue_openai_tool_calls,
        }[self.sdk]
        if self.api == "openai-responses":
            queue = fake.queue_responses_tool_calls
        queue(CALLS)
        queue([], text=FINAL)

    def run(self, root: str, bb: Session, tools: Tools, system: str = SYSTEM) -> str:
        """The agent with its tools wrapped by the session."""
        wrapped = bb.tools(tools.functions())
        client = self.client(root)
        if self.sdk == "anthropic":
            agent = run_anthropic(client, wrapped, system, beta=self.api == "anthropic-beta")
        elif self.api == "openai-chat":
            agent = run_openai_chat(client, wrapped, system)
        else:
            agent = run_openai_responses(client, wrapped, system)
        return asyncio.run(agent)

    def user_message(self) -> dict[str, Any]:
        return {"role": "user", "content": PROMPT}


APIS = ["anthropic", "anthropic-beta", "openai-chat", "openai-responses"]
FLAVORS = [
    pytest.param(Flavor(api, is_async), id=f"{api}-{'async' if is_async else 'sync'}")
    for api in APIS
    for is_async in (False, True)
]


@dataclass
class Recording:
    path: Path
    root: str
    headers: list[dict[str, str]]
    paths: list[str]


@pytest.fixture(params=FLAVORS)
def legacy_flavor(request: pytest.FixtureRequest) -> Flavor:
    result: Flavor = request.param
    return result


@pytest.fixture
def recorded(
    fake_provider: FakeProvider, legacy_flavor: Flavor, tmp_path: Path, sessions: Callable[..., Session]
) -> Recording:
    """The run recorded against the fake, which is then stopped: a replay has no server."""
    legacy_flavor.script(fake_provider)
    path = tmp_path / "legacy.json"
    tools = Tools(legacy_flavor.is_async)
    bb = sessions(mode="record", out=path)
    answer = legacy_flavor.run(fake_provider.base_url, bb, tools)
    bb.finish(result=answer)
    assert answer == FINAL
    assert tools.calls == ["get_weather(Paris)", "get_time(Paris)"]
    assert fake_provider.pending == 0
    received = fake_provider.requests
    root = fake_provider.base_url
    fake_provider.stop()
    return Recording(path, root, [r.headers for r in received], [r.path for r in received])


def steps(path: Path) -> list[Any]:
    return load_trace(path)["steps"]


def test_the_recording_is_the_same_for_every_sdk_generation(
    recorded: Recording, legacy_flavor: Flavor
) -> None:
    recorded_steps = steps(recorded.path)
    assert [step["type"] for step in recorded_steps] == STEP_TYPES
    assert recorded_steps[0]["payload"] == {
        "messages": [legacy_flavor.user_message()],
        "tools": TOOLS,
        "systemPrompt": SYSTEM,
        "model": MODELS[legacy_flavor.sdk],
        "params": PARAMS[legacy_flavor.api],
    }
    assert recorded_steps[1]["payload"] == {"type": "tool_calls", "calls": CALL_REFS}
    assert [step["payload"] for step in recorded_steps[2:6]] == [
        CALL_REFS[0],
        {"toolCallId": "call-0", "toolName": "get_weather", "result": WEATHER},
        CALL_REFS[1],
        {"toolCallId": "call-1", "toolName": "get_time", "result": LOCAL_TIME},
    ]
    assert recorded_steps[6]["payload"]["messages"][1:] == [
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
                {
                    "type": "tool_result",
                    "toolCallId": "call-1",
                    "toolName": "get_time",
                    "result": json.dumps(LOCAL_TIME),
                },
            ],
        },
    ]
    assert recorded_steps[7]["payload"] == {"type": "final_answer", "text": FINAL}
    assert recorded_steps[8]["payload"] == {"event": "run_completed", "status": "success", "result": FINAL}


def test_the_cassette_holds_no_key(recorded: Recording, legacy_flavor: Flavor) -> None:
    """The key went out in the headers (x-api-key or authorization) and stayed out of the cassette."""
    key = ANTHROPIC_KEY if legacy_flavor.sdk == "anthropic" else OPENAI_KEY
    sent = recorded.headers[0].get("x-api-key") or recorded.headers[0].get("authorization", "")
    assert sent.removeprefix("Bearer ") == key
    assert key not in recorded.path.read_text(encoding="utf-8")


def test_the_legacy_wire_details(recorded: Recording, legacy_flavor: Flavor) -> None:
    """What the fake saw is what each generation sends (the beta query string is not part of the path)."""
    suffix = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions"}[legacy_flavor.sdk]
    if legacy_flavor.api == "openai-responses":
        suffix = "/v1/responses"
    assert recorded.paths == [suffix, suffix]
    if legacy_flavor.sdk == "anthropic" and LEGACY:
        assert recorded.headers[0]["anthropic-version"] == "2023-06-01"


def test_replay_is_offline_and_runs_no_tool(
    recorded: Recording, legacy_flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    offline = network_guard.block()
    tools = Tools(legacy_flavor.is_async)
    bb = sessions(mode="replay", cassette=recorded.path)
    answer = legacy_flavor.run(recorded.root, bb, tools)
    report = bb.finish(result=answer)
    assert answer == FINAL
    assert tools.calls == []
    assert offline == []
    assert (report.mode, report.status, report.replayed_steps, report.steps) == ("replay", "success", 9, 9)


def test_strict_replay_fails_on_a_changed_system_prompt(
    recorded: Recording, legacy_flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    offline = network_guard.block()
    tools = Tools(legacy_flavor.is_async)
    bb = sessions(mode="replay", cassette=recorded.path)
    with pytest.raises(
        openai.BadRequestError if legacy_flavor.sdk == "openai" else anthropic.BadRequestError
    ) as refused:
        legacy_flavor.run(recorded.root, bb, tools, system=CHANGED_SYSTEM)
    assert "[blackbox] replay diverged at step 0, systemPrompt" in str(refused.value)
    error = bb.error
    assert isinstance(error, ReplayDivergenceError)
    assert (error.step_index, error.path) == (0, "systemPrompt")
    assert (error.expected, error.actual) == (json.dumps(SYSTEM), json.dumps(CHANGED_SYSTEM))
    assert tools.calls == []
    assert offline == []


def test_the_clients_send_through_the_http_library_of_their_generation(legacy_flavor: Flavor) -> None:
    """In the legacy venv the clients are httpx clients: the interceptor's httpx path is the one tested."""
    client = legacy_flavor.client("http://127.0.0.1:9")
    assert isinstance(client._client, (httpx.Client, httpx.AsyncClient)) is LEGACY


def test_a_cassette_recorded_with_the_legacy_sdks_replays(
    legacy_flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    offline = network_guard.block()
    tools = Tools(legacy_flavor.is_async)
    bb = sessions(mode="replay", cassette=LEGACY_CASSETTES / f"{legacy_flavor.api}.json")
    answer = legacy_flavor.run("http://127.0.0.1:9", bb, tools)
    report = bb.finish(result=answer)
    assert answer == FINAL
    assert tools.calls == []
    assert offline == []
    assert (report.status, report.replayed_steps) == ("success", 9)


def test_a_new_recording_has_the_payloads_of_the_legacy_one(
    recorded: Recording, legacy_flavor: Flavor
) -> None:
    """Step for step, whatever the SDK generation: only ids, timestamps and hashes differ."""
    legacy = steps(LEGACY_CASSETTES / f"{legacy_flavor.api}.json")
    fresh = steps(recorded.path)
    assert [(s["type"], s["payload"]) for s in fresh] == [(s["type"], s["payload"]) for s in legacy]


async def stream_tool_names(root: str) -> list[str]:
    """One streamed Chat Completions call with tools, read to the end: the tools the model called."""
    client: Any = openai.AsyncOpenAI(base_url=root + "/v1", api_key=OPENAI_KEY, max_retries=0)
    stream = await client.chat.completions.create(
        model=MODELS["openai"],
        messages=[{"role": "user", "content": PROMPT}],
        tools=chat_tools(),
        stream=True,
    )
    names: list[str] = []
    async for chunk in stream:
        for call in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            if call.function is not None and call.function.name:
                names.append(call.function.name)
    return names


def test_an_async_streamed_chat_call_with_tools_records_and_replays(
    fake_provider: FakeProvider, tmp_path: Path, sessions: Callable[..., Session]
) -> None:
    """``create(stream=True)``: the way to stream with tools on openai < 3, whose async ``.stream()``
    refuses non-strict tools before sending."""
    fake_provider.queue_openai_tool_calls(CALLS)
    path = tmp_path / "streamed.json"
    bb = sessions(mode="record", out=path)
    assert asyncio.run(stream_tool_names(fake_provider.base_url)) == ["get_weather", "get_time"]
    bb.finish()
    assert fake_provider.requests[0].json["stream"] is True
    assert steps(path)[1]["payload"] == {"type": "tool_calls", "calls": CALL_REFS}
    root = fake_provider.base_url
    fake_provider.stop()
    bb = sessions(mode="replay", cassette=path)
    assert asyncio.run(stream_tool_names(root)) == ["get_weather", "get_time"]
    assert bb.finish().replayed_steps == 2
