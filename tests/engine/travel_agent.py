"""A small tool-using agent, written once for both SDKs and for sync and async clients.

The loop is an ``async`` function that awaits :func:`settle` on whatever the client and the tools
return: with a sync client and sync tools nothing is ever awaited for real, so the sync SDK path
(``httpx2.Client``) runs exactly as in a plain script; with an async client and async tools the same
code awaits the SDK and gathers a parallel tool round concurrently.

The default conversation makes three model calls: ``get_weather(Paris)``; then a parallel round
``get_weather(Rome)`` + ``get_time(Rome)``; then the final answer.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_blackbox.testing.fake_provider import FakeProvider

SYSTEM = "You are a travel assistant. Answer only from the tools' data."
PROMPT = "What's the weather in Paris, and the weather and local time in Rome?"
FINAL = "Paris is clear at 21°C. Rome is 24.5°C and it is 14:05 there."
MODELS = {"anthropic": "claude-sonnet-5", "openai": "gpt-5"}


def city_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
    }


def tool_specs() -> list[dict[str, Any]]:
    """The two tools' definitions, each with its own schema object (so one can be changed alone)."""
    return [
        {"name": "get_weather", "description": "Current weather for a city.", "schema": city_schema()},
        {"name": "get_time", "description": "Local time in a city.", "schema": city_schema()},
    ]


#: The model's turns: (tool calls, text).
Turn = tuple[list[tuple[str, dict[str, Any]]], str | None]
DEFAULT_TURNS: list[Turn] = [
    ([("get_weather", {"city": "Paris"})], None),
    ([("get_weather", {"city": "Rome"}), ("get_time", {"city": "Rome"})], "Checking Rome."),
    ([], FINAL),
]
WEATHER = {"Paris": {"city": "Paris", "tempC": 21.0, "sky": "clear"}, "Rome": {"city": "Rome", "tempC": 24.5}}


def script(fake: FakeProvider, sdk: str, turns: Sequence[Turn] = DEFAULT_TURNS) -> None:
    """Queue the model's answers on the fake server, in the provider's own shapes."""
    for calls, text in turns:
        if sdk == "anthropic":
            fake.queue_anthropic_tool_calls(calls, text=text)
        else:
            fake.queue_openai_tool_calls(calls, text=text)


async def settle(value: Any) -> Any:
    """Await what is awaitable (async client or tool), pass plain values (sync) through."""
    return await value if inspect.isawaitable(value) else value


class ToolBox:
    """The real tool functions. They count their calls: a replay must run none of them."""

    def __init__(self, weather: Mapping[str, Any] | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.weather = dict(WEATHER if weather is None else weather)

    def get_weather(self, city: str) -> Any:
        self.calls.append(("get_weather", city))
        return copy.deepcopy(self.weather[city])

    def get_time(self, city: str) -> Any:
        self.calls.append(("get_time", city))
        return {"city": city, "time": "14:05"}

    def functions(self, is_async: bool) -> dict[str, Callable[..., Any]]:
        """The tools as the agent gets them: sync functions, or coroutine functions."""
        if not is_async:
            return {"get_weather": self.get_weather, "get_time": self.get_time}

        async def get_weather(city: str) -> Any:
            await asyncio.sleep(0)
            return self.get_weather(city)

        async def get_time(city: str) -> Any:
            await asyncio.sleep(0)
            return self.get_time(city)

        return {"get_weather": get_weather, "get_time": get_time}


@dataclass
class Agent:
    """One configurable agent; every field is a way to make a replay diverge (or not)."""

    sdk: str
    is_async: bool
    base_url: str
    system: str = SYSTEM
    prompts: Sequence[str] = (PROMPT,)
    tool_specs: list[dict[str, Any]] = field(default_factory=tool_specs)
    reverse_results: bool = False
    #: tool name → {city the model asked for: city the agent passes instead}
    retarget: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    max_model_calls: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    extra_tools: list[dict[str, Any]] = field(default_factory=list)
    legacy_httpx: bool = False
    #: Read each answer as an event stream, through the SDK's stream helper.
    stream: bool = False
    catch_errors: bool = False
    caught: list[Exception] = field(default_factory=list)
    model_calls: int = 0

    # -- clients -------------------------------------------------------------------------------

    @property
    def module(self) -> Any:
        """The SDK package, imported only when used (a launched agent program starts faster)."""
        return importlib.import_module(self.sdk)

    def client(self) -> Any:
        """The SDK client, pointed at ``base_url``; no retries, so a refusal surfaces at once."""
        common: dict[str, Any] = {"base_url": self.base_url, "max_retries": 0}
        if self.sdk == "anthropic":
            return (self.module.AsyncAnthropic if self.is_async else self.module.Anthropic)(**common)
        if self.legacy_httpx:
            httpx = importlib.import_module("httpx")
            common["http_client"] = httpx.AsyncClient() if self.is_async else httpx.Client()
        return (self.module.AsyncOpenAI if self.is_async else self.module.OpenAI)(**common)

    # -- the loop ------------------------------------------------------------------------------

    async def run(self, tools: Mapping[str, Callable[..., Any]]) -> str:
        """Run every prompt to a final answer; the last answer is returned."""
        client = self.client()
        messages: list[Any] = []
        answer = ""
        for prompt in self.prompts:
            messages.append({"role": "user", "content": prompt})
            answer = await self._until_answer(client, messages, tools)
        await settle(client.close())
        return answer

    async def _until_answer(self, client: Any, messages: list[Any], tools: Mapping[str, Any]) -> str:
        while self.max_model_calls is None or self.model_calls < self.max_model_calls:
            self.model_calls += 1
            try:
                calls, text = await self._call_model(client, messages)
            except self.module.APIError as exc:
                if not self.catch_errors:
                    raise
                self.caught.append(exc)
                return f"gave up: {exc}"
            if not calls:
                return text
            results = await self._run_tools(calls, tools)
            self._add_results(messages, results[::-1] if self.reverse_results else results)
        return "stopped early"

    async def _run_tools(
        self, calls: list[tuple[str, str, dict[str, Any]]], tools: Mapping[str, Any]
    ) -> list[tuple[str, str, bool]]:
        """(provider id, content, is_error) per call; a parallel round runs concurrently when async."""

        async def one(call_id: str, name: str, args: dict[str, Any]) -> tuple[str, str, bool]:
            if "city" in args:
                args = {**args, "city": self.retarget.get(name, {}).get(args["city"], args["city"])}
            try:
                return call_id, json.dumps(await settle(tools[name](**args))), False
            except Exception as exc:
                return call_id, str(exc), True

        if self.is_async:
            return list(await asyncio.gather(*(one(*call) for call in calls)))
        return [await one(*call) for call in calls]

    async def _call_model(self, client: Any, messages: list[Any]) -> tuple[list[Any], str]:
        if self.sdk == "anthropic":
            return await self._anthropic(client, messages)
        return await self._openai(client, messages)

    async def _anthropic(self, client: Any, messages: list[Any]) -> tuple[list[Any], str]:
        tools = [
            {"name": t["name"], "description": t["description"], "input_schema": t["schema"]}
            for t in self.tool_specs
        ]
        request = {
            "model": MODELS["anthropic"],
            "max_tokens": 512,
            "system": self.system,
            "messages": messages,
            "tools": tools + self.extra_tools,
            **self.extra,
        }
        if self.stream:
            response = await self._streamed(client.messages.stream(**request), "get_final_message")
        else:
            response = await settle(client.messages.create(**request))
        messages.append({"role": "assistant", "content": response.content})
        calls = [(b.id, b.name, b.input) for b in response.content if b.type == "tool_use"]
        text = "".join(b.text for b in response.content if b.type == "text")
        return calls, text

    async def _openai(self, client: Any, messages: list[Any]) -> tuple[list[Any], str]:
        tools = [
            {
                "type": "function",
                "function": {"name": t["name"], "description": t["description"], "parameters": t["schema"]},
            }
            for t in self.tool_specs
        ]
        request = {
            "model": MODELS["openai"],
            "messages": [{"role": "system", "content": self.system}, *messages],
            "tools": tools,
            **self.extra,
        }
        if self.stream and self.is_async and self._openai_major() < 3:
            response = await self._assembled(client, request)
        elif self.stream:
            response = await self._streamed(client.chat.completions.stream(**request), "get_final_completion")
        else:
            response = await settle(client.chat.completions.create(**request))
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]
        return calls, message.content or ""

    def _openai_major(self) -> int:
        return int(str(self.module.__version__).split(".", 1)[0])

    async def _assembled(self, client: Any, request: dict[str, Any]) -> Any:
        """The chunks of ``create(stream=True)``, assembled by the SDK's own stream accumulator.

        openai < 3's async ``chat.completions.stream()`` refuses non-strict tools before sending, so
        the same streamed request is made without the helper there.
        """
        state = importlib.import_module("openai.lib.streaming.chat").ChatCompletionStreamState()
        async for chunk in await client.chat.completions.create(**request, stream=True):
            state.handle_chunk(chunk)
        return state.get_final_completion()

    async def _streamed(self, manager: Any, final: str) -> Any:
        """The SDK stream helper's assembled answer (``async with`` for the async client)."""
        if self.is_async:
            async with manager as stream:
                return await getattr(stream, final)()
        with manager as stream:
            return getattr(stream, final)()

    def _add_results(self, messages: list[Any], results: list[tuple[str, str, bool]]) -> None:
        if self.sdk == "anthropic":
            blocks = [
                {
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                    **({"is_error": True} if error else {}),
                }
                for call_id, content, error in results
            ]
            messages.append({"role": "user", "content": blocks})
        else:
            messages.extend(
                {"role": "tool", "tool_call_id": call_id, "content": content}
                for call_id, content, _ in results
            )
