"""One tool-calling agent, written once for both SDKs and for sync and async clients.

The loop is an ``async`` function that awaits :func:`settle` on whatever the client and the tools
return: with a sync client and sync tools nothing is ever awaited for real, so the sync SDK path
(``httpx2.Client``) runs exactly as in a plain script; with an async client and async tools the same
code awaits the SDK and gathers a parallel tool round concurrently.

Every field of :class:`Agent` is a way to make a replay diverge (or not), or a place a test plants
something; :class:`~tests.agents.travel.TravelAgent` and :class:`~tests.agents.lookup.LookupAgent`
give it their conversation's defaults.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_blackbox.testing import FakeProvider

#: Where the Vertex AI agents run (configuration, not credentials: never compared).
VERTEX_PROJECT = "blackbox-suite"
VERTEX_REGION = "us-east5"
#: The model's turns: (tool calls as (name, input), text).
Turn = tuple[Sequence[tuple[str, Mapping[str, Any]]], "str | None"]


def script(fake: FakeProvider, sdk: str, turns: Sequence[Turn]) -> None:
    """Queue the model's answers on the fake provider, in the provider's own wire shapes."""
    for calls, text in turns:
        if sdk == "anthropic":
            fake.queue_anthropic_tool_calls(calls, text=text)
        else:
            fake.queue_openai_tool_calls(calls, text=text)


def base_url(root: FakeProvider | str | None, sdk: str) -> str | None:
    """The SDK's base URL for a server root (or a running fake); ``None``, the real API, stays ``None``."""
    if root is None:
        return None
    url = root if isinstance(root, str) else root.base_url
    return url if sdk == "anthropic" else url + "/v1"


async def settle(value: Any) -> Any:
    """Await what is awaitable (async client or tool), pass plain values (sync) through."""
    return await value if inspect.isawaitable(value) else value


def tool_spec(name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool definition in neither SDK's shape: the agent writes it in the shape of the one it uses."""
    return {"name": name, "description": description, "schema": dict(schema)}


@dataclass
class Agent:
    """A tool loop on the real SDK client, pointed at ``base_url`` (``None``: the SDK's default)."""

    sdk: str
    is_async: bool
    base_url: str | None
    system: str = ""
    prompts: Sequence[str] = ()
    tool_specs: list[dict[str, Any]] = field(default_factory=list)
    models: Mapping[str, str] = field(default_factory=dict)
    max_tokens: int = 512
    max_model_calls: int | None = None
    #: Client options: the key, extra headers and query, and the HTTP client: the SDK's default
    #: (httpx2), an ``httpx`` client (OpenAI only) or ``aiohttp`` (async only).
    api_key: str | None = None
    default_headers: dict[str, str] | None = None
    default_query: dict[str, str] | None = None
    http_client: str = "default"
    #: Extra request fields; extra raw tool definitions; extra fields in every tool definition.
    extra: dict[str, Any] = field(default_factory=dict)
    extra_tools: list[dict[str, Any]] = field(default_factory=list)
    tool_fields: dict[str, Any] = field(default_factory=dict)
    #: Read each answer as an event stream, through the SDK's stream helper.
    stream: bool = False
    #: Anthropic only: Claude on Vertex AI (``AnthropicVertex``), ``api_key`` its access token
    #: (``None``: Google's application default credentials, as users configure them).
    vertex: bool = False
    #: How the agent runs the tools: results sent back in reverse order; tool name → {city the model
    #: asked for: city the agent passes instead}; extra keyword arguments to every call; not run at all
    #: (each answered "skipped"); a failed tool's error text sent to the model (else "the tool failed").
    reverse_results: bool = False
    retarget: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    tool_extra: dict[str, Any] = field(default_factory=dict)
    skip_tools: bool = False
    forward_errors: bool = True
    #: An SDK error ends the run with the answer "gave up" (kept in ``caught``) instead of raising.
    catch_errors: bool = False
    caught: list[Exception] = field(default_factory=list)
    tool_errors: list[Exception] = field(default_factory=list)
    #: The exact ``arguments`` texts of the OpenAI tool calls the agent received.
    seen_arguments: list[str] = field(default_factory=list)
    model_calls: int = 0

    # -- clients -------------------------------------------------------------------------------

    @property
    def module(self) -> Any:
        """The SDK package, imported only when used (a launched agent program starts faster)."""
        return importlib.import_module(self.sdk)

    def client(self) -> Any:
        """The SDK client; no retries, so a refusal surfaces at once."""
        options: dict[str, Any] = {"max_retries": 0}
        if self.base_url is not None:
            options["base_url"] = self.base_url
        if self.api_key is not None:
            options["api_key"] = self.api_key
        if self.default_headers:
            options["default_headers"] = self.default_headers
        if self.default_query:
            options["default_query"] = self.default_query
        if self.http_client == "aiohttp":
            options["http_client"] = self.module.DefaultAioHttpClient()
        elif self.http_client == "httpx":
            httpx = importlib.import_module("httpx")
            options["http_client"] = httpx.AsyncClient() if self.is_async else httpx.Client()
        if self.vertex:
            options.update(
                region=VERTEX_REGION, project_id=VERTEX_PROJECT, access_token=options.pop("api_key", None)
            )
            return (self.module.AsyncAnthropicVertex if self.is_async else self.module.AnthropicVertex)(
                **options
            )
        if self.sdk == "anthropic":
            return (self.module.AsyncAnthropic if self.is_async else self.module.Anthropic)(**options)
        return (self.module.AsyncOpenAI if self.is_async else self.module.OpenAI)(**options)

    # -- the loop ------------------------------------------------------------------------------

    def run(self, tools: Mapping[str, Callable[..., Any]]) -> str:
        """Run every prompt to a final answer, in one conversation; the last answer is returned."""
        return asyncio.run(self._run(tools))

    async def _run(self, tools: Mapping[str, Callable[..., Any]]) -> str:
        client = self.client()
        messages: list[Any] = []
        answer = ""
        try:
            for prompt in self.prompts:
                messages.append({"role": "user", "content": prompt})
                answer = await self._until_answer(client, messages, tools)
        finally:
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
                return "gave up"
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
            if self.skip_tools:
                return call_id, "skipped", False
            if "city" in args:
                args = {**args, "city": self.retarget.get(name, {}).get(args["city"], args["city"])}
            try:
                return call_id, json.dumps(await settle(tools[name](**args, **self.tool_extra))), False
            except Exception as exc:
                self.tool_errors.append(exc)
                return call_id, str(exc) if self.forward_errors else "the tool failed", True

        if self.is_async:
            return list(await asyncio.gather(*(one(*call) for call in calls)))
        return [await one(*call) for call in calls]

    async def _call_model(self, client: Any, messages: list[Any]) -> tuple[list[Any], str]:
        if self.sdk == "anthropic":
            return await self._anthropic(client, messages)
        return await self._openai(client, messages)

    async def _anthropic(self, client: Any, messages: list[Any]) -> tuple[list[Any], str]:
        tools = [
            {
                "name": t["name"],
                "description": t["description"],
                "input_schema": t["schema"],
                **self.tool_fields,
            }
            for t in self.tool_specs
        ]
        request = {
            "model": self.models["anthropic"],
            "max_tokens": self.max_tokens,
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
                "function": {
                    "name": t["name"],
                    "description": t["description"],
                    "parameters": t["schema"],
                    **self.tool_fields,
                },
            }
            for t in self.tool_specs
        ]
        request = {
            "model": self.models["openai"],
            "messages": [{"role": "system", "content": self.system}, *messages],
            "tools": tools + self.extra_tools,
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
        self.seen_arguments += [c.function.arguments for c in message.tool_calls or []]
        calls = [(c.id, c.function.name, _arguments(c.function.arguments)) for c in message.tool_calls or []]
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


def _arguments(text: str) -> dict[str, Any]:
    """The model's arguments; a JSON-encoded string is decoded until it is the object it encodes."""
    value: Any = json.loads(text)
    while isinstance(value, str):
        value = json.loads(value)
    return dict(value)
