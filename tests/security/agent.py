"""One small agent for both SDKs, sync or async: one tool, one turn that asks for it, one final answer.

It is deliberately small and self-contained so every security test can say exactly where a key was
planted or what was changed. It runs the real ``anthropic`` and ``openai`` SDKs against the bundled
fake provider (recording) or a cassette (replaying). ``agent_program.py`` runs it as a program.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_blackbox.engine.session import Session, blackbox
from pytest_blackbox.testing.fake_provider import FakeProvider, ScriptedResponse

#: Realistic credentials: the documented prefixes followed by 40 characters.
ANTHROPIC_KEY = "sk-ant-api03-" + "Qx7Lm2Pv9Rt4Wz8Yb1Nc6Dk3Fh5Jg0Ks2Ta7Ue4V"
OPENAI_KEY = "sk-proj-" + "Hq3Zr8Mx1Lw6Pv0Nt5Kb9Jc2Dg7Fy4Sa1Ue6Wo3R"
#: A key of no known format: it can only be recognised because it is the value of a key variable.
LITERAL_KEY = "corp-gateway-7f3a9c2e1b5d"
#: Every form a test plants: (id, value, the environment variable holding it or None).
KEYS: list[tuple[str, str, str | None]] = [
    ("anthropic-format", ANTHROPIC_KEY, "ANTHROPIC_API_KEY"),
    ("openai-format", OPENAI_KEY, "OPENAI_API_KEY"),
    ("literal-env", LITERAL_KEY, "ANTHROPIC_API_KEY"),
]
SDKS = ["anthropic", "openai"]

SYSTEM = "You answer weather questions from the lookup tool only."
PROMPT = "What is the weather in Paris?"
FINAL = "It is 21 °C and sunny in Paris."
MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-5"}
LOOKUP_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "a city"}},
    "required": ["city"],
}

assert len(ANTHROPIC_KEY) == len("sk-ant-api03-") + 40 and len(OPENAI_KEY) == len("sk-proj-") + 40


# -- the model's script ------------------------------------------------------------------------

#: One model turn: (tool calls as (name, input), text).
Turn = tuple[Sequence[tuple[str, Mapping[str, Any]]], "str | None"]
DEFAULT_TURNS: list[Turn] = [([("lookup", {"city": "Paris"})], None), ([], FINAL)]


def script(fake: FakeProvider, sdk: str, turns: Sequence[Turn] = DEFAULT_TURNS) -> None:
    """Queue the model's answers on the fake provider, in the provider's own wire shapes."""
    for calls, text in turns:
        if sdk == "anthropic":
            fake.queue_anthropic_tool_calls(calls, text=text)
        else:
            fake.queue_openai_tool_calls(calls, text=text)


def final_body(sdk: str, text: str) -> dict[str, Any]:
    """A provider's complete JSON answer holding a final answer."""
    if sdk == "anthropic":
        return {
            "id": "msg_01Late",
            "type": "message",
            "role": "assistant",
            "model": MODELS["anthropic"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    return {
        "id": "chatcmpl-late",
        "object": "chat.completion",
        "created": 1,
        "model": MODELS["openai"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def hanging_answer(sdk: str, started: Callable[[], object], release: threading.Event) -> ScriptedResponse:
    """An answer whose body stops halfway until ``release`` is set: a model call kept in flight."""
    body = json.dumps(final_body(sdk, "late")).encode()

    def chunks() -> Iterator[bytes]:
        started()
        yield body[:10]
        release.wait(30)
        yield body[10:]

    return ScriptedResponse(200, headers=(("content-type", "application/json"),), chunks=chunks())


def base_url(root: str | None, sdk: str) -> str | None:
    """The SDK's base URL for a server root; ``None`` (the SDK's default, the real API) stays ``None``."""
    if root is None:
        return None
    return root if sdk == "anthropic" else root + "/v1"


# -- the tools ---------------------------------------------------------------------------------


@dataclass
class Lookup:
    """The real ``lookup`` tool; it counts its runs (a replay must run none)."""

    result: Any = None
    error: str | None = None
    runs: list[Any] = field(default_factory=list)

    def __call__(self, city: str, **extra: Any) -> Any:
        self.runs.append({"city": city, **extra})
        if self.error is not None:
            raise PermissionError(self.error)
        return self.result if self.result is not None else {"city": city, "tempC": 21, "sky": "sunny"}

    def tool(self, is_async: bool) -> Callable[..., Any]:
        if not is_async:
            return self.__call__

        async def lookup(city: str, **extra: Any) -> Any:
            await asyncio.sleep(0)
            return self(city, **extra)

        return lookup


# -- the agent ---------------------------------------------------------------------------------


async def settle(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


@dataclass
class Agent:
    """A tool loop on the real SDK client; every field is a place a test can plant or change something."""

    sdk: str
    is_async: bool
    base_url: str | None
    api_key: str | None = None
    #: The SDK's HTTP client: its default (httpx2), an ``httpx`` client (OpenAI only) or ``aiohttp`` (async).
    http_client: str = "default"
    system: str = SYSTEM
    prompt: str = PROMPT
    default_headers: dict[str, str] | None = None
    default_query: dict[str, str] | None = None
    #: Extra keyword arguments the agent passes to every tool call (beyond what the model asked for).
    tool_extra: dict[str, Any] = field(default_factory=dict)
    #: Send the tool's error text back to the model (else a fixed "the tool failed").
    forward_errors: bool = False
    #: Do not run the tools the model asks for; answer them with a fixed text instead.
    skip_tools: bool = False
    #: Extra request fields, and extra tool-definition fields.
    extra: dict[str, Any] = field(default_factory=dict)
    tool_fields: dict[str, Any] = field(default_factory=dict)
    tool_schema: dict[str, Any] = field(default_factory=lambda: dict(LOOKUP_SCHEMA))
    max_model_calls: int = 4
    catch_errors: bool = False
    caught: list[Exception] = field(default_factory=list)
    tool_errors: list[Exception] = field(default_factory=list)
    #: The exact ``arguments`` texts of the OpenAI tool calls the agent received.
    seen_arguments: list[str] = field(default_factory=list)

    @property
    def module(self) -> Any:
        return importlib.import_module(self.sdk)

    def client(self) -> Any:
        options: dict[str, Any] = {"max_retries": 0}
        if self.base_url is not None:  # None: the SDK's own default, the real provider
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
        if self.sdk == "anthropic":
            return (self.module.AsyncAnthropic if self.is_async else self.module.Anthropic)(**options)
        return (self.module.AsyncOpenAI if self.is_async else self.module.OpenAI)(**options)

    def run(self, tools: Mapping[str, Callable[..., Any]]) -> str:
        return asyncio.run(self._run(tools))

    async def _run(self, tools: Mapping[str, Callable[..., Any]]) -> str:
        client = self.client()
        messages: list[Any] = [{"role": "user", "content": self.prompt}]
        try:
            for _ in range(self.max_model_calls):
                try:
                    calls, text = await self._call_model(client, messages)
                except self.module.APIError as exc:
                    if not self.catch_errors:
                        raise
                    self.caught.append(exc)
                    return "gave up"
                if not calls:
                    return text
                results = [await self._run_tool(tools, *call) for call in calls]
                self._add_results(messages, results)
            return "stopped early"
        finally:
            await settle(client.close())

    async def _run_tool(
        self, tools: Mapping[str, Callable[..., Any]], call_id: str, name: str, args: dict[str, Any]
    ) -> tuple[str, str, bool]:
        if self.skip_tools:
            return call_id, "skipped", False
        try:
            return call_id, json.dumps(await settle(tools[name](**args, **self.tool_extra))), False
        except Exception as exc:
            self.tool_errors.append(exc)
            return call_id, str(exc) if self.forward_errors else "the tool failed", True

    async def _call_model(self, client: Any, messages: list[Any]) -> tuple[list[Any], str]:
        if self.sdk == "anthropic":
            tool = {"name": "lookup", "description": "Weather by city.", "input_schema": self.tool_schema}
            request = {
                "model": MODELS["anthropic"],
                "max_tokens": 256,
                "system": self.system,
                "messages": messages,
                "tools": [{**tool, **self.tool_fields}],
                **self.extra,
            }
            response = await settle(client.messages.create(**request))
            messages.append({"role": "assistant", "content": response.content})
            calls = [(b.id, b.name, b.input) for b in response.content if b.type == "tool_use"]
            return calls, "".join(b.text for b in response.content if b.type == "text")
        function = {"name": "lookup", "description": "Weather by city.", "parameters": self.tool_schema}
        request = {
            "model": MODELS["openai"],
            "messages": [{"role": "system", "content": self.system}, *messages],
            "tools": [{"type": "function", "function": {**function, **self.tool_fields}}],
            **self.extra,
        }
        response = await settle(client.chat.completions.create(**request))
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        self.seen_arguments += [c.function.arguments for c in message.tool_calls or []]
        calls = [(c.id, c.function.name, _arguments(c.function.arguments)) for c in message.tool_calls or []]
        return calls, message.content or ""

    def _add_results(self, messages: list[Any], results: list[tuple[str, str, bool]]) -> None:
        if self.sdk == "anthropic":
            blocks = [
                {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": error}
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


@dataclass
class Run:
    """One agent run under a session."""

    session: Session
    agent: Agent
    lookup: Lookup
    answer: str


def run_agent(
    session: Session,
    sdk: str,
    root: str | None,
    *,
    is_async: bool = False,
    lookup: Lookup | None = None,
    **options: Any,
) -> Run:
    """Run the agent with ``lookup`` wrapped by ``session``; the caller finishes the session."""
    lookup = lookup if lookup is not None else Lookup()
    agent = Agent(sdk, is_async, base_url(root, sdk), **options)
    answer = agent.run(session.tools({"lookup": lookup.tool(is_async)}))
    return Run(session, agent, lookup, answer)


def record(
    fake: FakeProvider, sdk: str, path: Path, *, turns: Sequence[Turn] = DEFAULT_TURNS, **options: Any
) -> Run:
    """Record one run to ``path`` and finish it with the agent's answer."""
    script(fake, sdk, turns)
    run = run_agent(blackbox(mode="record", out=path), sdk, fake.base_url, **options)
    run.session.finish(result=run.answer)
    return run


def files_in(directory: Path) -> list[str]:
    """Every file under ``directory``, hidden ones included, as sorted relative paths."""
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())
