"""The travel agent of ``travel.py`` on Gemini, through the real ``google-genai`` client.

One loop covers the SDK's ways of calling the model: ``client.models`` or ``client.chats``, sync or
``client.aio``, plain or streamed. Function calls are answered by hand (the agent runs the tools, as
the other SDKs' agents do); with ``automatic`` the tools are handed to the SDK as Python functions and
the SDK calls them itself. The default conversation is the travel agent's: ``get_weather(Paris)``,
then ``get_weather(Rome)`` and ``get_time(Rome)`` in parallel with the text "Checking Rome.", then
the final answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from google import genai
from google.genai import types
from google.oauth2.credentials import Credentials

from pytest_blackbox.testing import FakeProvider

from .loop import VERTEX_PROJECT, Turn, settle
from .travel import DEFAULT_TURNS, PROMPT, SYSTEM, tool_specs

MODEL = "gemini-2.5-flash"
#: (api, is_async, stream): every way the agent can call the model.
FLAVORS = [
    (api, is_async, stream)
    for api in ("models", "chats")
    for is_async in (False, True)
    for stream in (False, True)
]
FLAVOR_IDS = [
    f"{api}-{'async' if is_async else 'sync'}{'-stream' if stream else ''}"
    for api, is_async, stream in FLAVORS
]


def script(fake: FakeProvider, turns: Sequence[Turn] = DEFAULT_TURNS, *, call_ids: bool = False) -> None:
    """Queue the model's answers on the fake server; ``call_ids`` answers like Gemini 3 (with ids)."""
    for calls, text in turns:
        fake.queue_gemini_tool_calls(calls, text=text, call_ids=call_ids, thinking=call_ids)


@dataclass
class GeminiAgent:
    """One configurable agent; ``system`` and ``prompt`` are ways to make a replay diverge."""

    base_url: str
    api: str = "models"
    is_async: bool = False
    stream: bool = False
    system: str = SYSTEM
    prompt: str = PROMPT
    #: Passed to ``genai.Client``; ``None`` reads GEMINI_API_KEY / GOOGLE_API_KEY.
    api_key: str | None = None
    #: Hand the tools to the SDK as Python functions (automatic function calling).
    automatic: bool = False
    #: Gemini on Vertex AI, signed with this access token (``None``: Google's application default
    #: credentials, as users configure them); ``""``: the Gemini Developer API.
    vertex_token: str | None = ""
    model_calls: int = 0
    seen_call_ids: list[str | None] = field(default_factory=list)

    def client(self) -> genai.Client:
        """No retries (the SDK's default), so a refusal surfaces at once."""
        options = types.HttpOptions(base_url=self.base_url)
        if self.vertex_token == "":
            return genai.Client(api_key=self.api_key, http_options=options)
        token = None if self.vertex_token is None else Credentials(token=self.vertex_token)  # type: ignore[no-untyped-call]
        return genai.Client(
            vertexai=True,
            project=VERTEX_PROJECT,
            location="us-central1",
            credentials=token,
            http_options=options,
        )

    def config(self, tools: Mapping[str, Callable[..., Any]]) -> types.GenerateContentConfig:
        if self.automatic:
            return types.GenerateContentConfig(system_instruction=self.system, tools=list(tools.values()))
        declarations = [
            types.FunctionDeclaration(
                name=spec["name"], description=spec["description"], parameters_json_schema=spec["schema"]
            )
            for spec in tool_specs()
        ]
        return types.GenerateContentConfig(
            system_instruction=self.system, tools=[types.Tool(function_declarations=declarations)]
        )

    async def run(self, tools: Mapping[str, Callable[..., Any]]) -> str:
        client = self.client()
        try:
            if self.api == "chats":
                return await self._chat(client, tools)
            return await self._models(client, tools)
        finally:
            if self.is_async:
                await client.aio.aclose()
            else:
                client.close()

    # -- the two APIs ----------------------------------------------------------------------------

    async def _models(self, client: genai.Client, tools: Mapping[str, Callable[..., Any]]) -> str:
        models = client.aio.models if self.is_async else client.models
        config = self.config(tools)
        contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=self.prompt)])]
        while True:
            if self.stream:
                chunks = await self._chunks(
                    models.generate_content_stream(model=MODEL, contents=contents, config=config)
                )
            else:
                chunks = [
                    await settle(models.generate_content(model=MODEL, contents=contents, config=config))
                ]
            contents.extend(
                c.candidates[0].content for c in chunks if c.candidates and c.candidates[0].content
            )
            text, calls = self._read(chunks)
            if not calls or self.automatic:
                return text
            contents.append(types.Content(role="user", parts=await self._results(calls, tools)))

    async def _chat(self, client: genai.Client, tools: Mapping[str, Callable[..., Any]]) -> str:
        chats = client.aio.chats if self.is_async else client.chats
        chat = chats.create(model=MODEL, config=self.config(tools))
        message: Any = self.prompt
        while True:
            if self.stream:
                chunks = await self._chunks(chat.send_message_stream(message))
            else:
                chunks = [await settle(chat.send_message(message))]
            text, calls = self._read(chunks)
            if not calls or self.automatic:
                return text
            message = await self._results(calls, tools)

    # -- pieces ----------------------------------------------------------------------------------

    async def _chunks(self, stream: Any) -> list[Any]:
        """Every chunk of a streamed answer (the async SDK returns an awaitable async iterator)."""
        self.model_calls += 1
        if self.is_async:
            return [chunk async for chunk in await stream]
        return list(stream)

    def _read(self, chunks: list[Any]) -> tuple[str, list[types.FunctionCall]]:
        if not self.stream:
            self.model_calls += 1
        calls = [call for chunk in chunks for call in chunk.function_calls or []]
        self.seen_call_ids.extend(call.id for call in calls)
        return "".join(chunk.text or "" for chunk in chunks), calls

    async def _results(
        self, calls: list[types.FunctionCall], tools: Mapping[str, Callable[..., Any]]
    ) -> list[types.Part]:
        """One function response per call, echoing its id when it has one; concurrent when async."""

        async def one(call: types.FunctionCall) -> types.Part:
            assert call.name is not None
            value = await settle(tools[call.name](**(call.args or {})))
            response = types.FunctionResponse(id=call.id, name=call.name, response={"result": value})
            return types.Part(function_response=response)

        if self.is_async:
            return list(await asyncio.gather(*(one(call) for call in calls)))
        return [await one(call) for call in calls]
