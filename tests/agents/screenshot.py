"""A screen-reading agent on every protocol: an image in its first message, a screenshot in a tool result.

The model (the fake provider) asks for ``take_screenshot``; the agent answers with the screenshot's
bytes the way each API takes an image in a tool's answer (an Anthropic ``tool_result`` image block, a
Responses ``function_call_output`` with ``input_image``, a Gemini user turn holding the
``functionResponse`` and an ``inlineData`` part; OpenAI's Chat tool messages take only text, so the
image follows in a user message). The ``…/tool`` variants put the image in the tool's answer itself:
a Chat tool message's ``image_url`` part (as OpenAI-compatible servers take it) and a Gemini 3
multimodal function response (``functionResponse.parts``). The screenshot function is the agent's
own, not a wrapped tool: its bytes reach the cassette only through the request, as media parts.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import anthropic
import openai
from google import genai
from google.genai import types

from pytest_blackbox.testing import FakeProvider

from .loop import settle

PROTOCOLS = ("anthropic", "openai_chat", "openai_responses", "gemini", "openai_chat/tool", "gemini/tool")
PROMPT = "What does this logo show, and what is on my screen?"
ANSWER = "A red square; the screen shows a login form."
TOOL = "take_screenshot"
SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def script(fake: FakeProvider, protocol: str) -> None:
    """The model's two answers: call ``take_screenshot``, then :data:`ANSWER`."""
    protocol = protocol.removesuffix("/tool")
    if protocol == "anthropic":
        fake.queue_anthropic_tool_calls([(TOOL, {})])
        fake.queue_anthropic_text(ANSWER)
    elif protocol == "openai_chat":
        fake.queue_openai_tool_calls([(TOOL, {})])
        fake.queue_openai_text(ANSWER)
    elif protocol == "openai_responses":
        fake.queue_responses_tool_calls([(TOOL, {})])
        fake.queue_responses_text(ANSWER)
    else:
        fake.queue_gemini_tool_calls([(TOOL, {})])
        fake.queue_gemini_text(ANSWER)


@dataclass
class ScreenshotAgent:
    """``logo`` goes with the prompt; ``screen`` (``None``: no image) answers the screenshot call."""

    base_url: str
    protocol: str
    is_async: bool
    logo: bytes
    screen: bytes | None

    async def run(self) -> str:
        return str(await getattr(self, f"_{self.protocol.removesuffix('/tool')}")())

    @property
    def in_tool(self) -> bool:
        """Whether the screenshot goes in the tool's answer itself (the ``…/tool`` variants)."""
        return self.protocol.endswith("/tool")

    def _b64(self, data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    def _uri(self, data: bytes) -> str:
        return f"data:image/png;base64,{self._b64(data)}"

    async def _anthropic(self) -> str:
        client = (anthropic.AsyncAnthropic if self.is_async else anthropic.Anthropic)(
            base_url=self.base_url, max_retries=0
        )
        image = {"type": "base64", "media_type": "image/png", "data": self._b64(self.logo)}
        messages: list[Any] = [
            {
                "role": "user",
                "content": [{"type": "text", "text": PROMPT}, {"type": "image", "source": image}],
            }
        ]
        tools: list[Any] = [{"name": TOOL, "description": "The screen as an image.", "input_schema": SCHEMA}]
        try:
            for _ in range(3):
                reply = await settle(
                    client.messages.create(model="claude-x", max_tokens=64, messages=messages, tools=tools)
                )
                calls = [block for block in reply.content if block.type == "tool_use"]
                if not calls:
                    return str(reply.content[0].text)
                messages.append(
                    {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]}
                )
                messages.append(
                    {"role": "user", "content": [self._anthropic_result(call.id) for call in calls]}
                )
            return "gave up"
        finally:
            await settle(client.close())

    def _anthropic_result(self, call_id: str) -> dict[str, Any]:
        content: list[Any] = [{"type": "text", "text": "the screen:"}]
        if self.screen is not None:
            source = {"type": "base64", "media_type": "image/png", "data": self._b64(self.screen)}
            content.append({"type": "image", "source": source})
        return {"type": "tool_result", "tool_use_id": call_id, "content": content}

    def _openai(self) -> Any:
        return (openai.AsyncOpenAI if self.is_async else openai.OpenAI)(
            base_url=self.base_url + "/v1", max_retries=0
        )

    async def _openai_chat(self) -> str:
        client = self._openai()
        messages: list[Any] = [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": PROMPT},
                    {"type": "image_url", "image_url": {"url": self._uri(self.logo), "detail": "low"}},
                ],
            }
        ]
        tools = [
            {
                "type": "function",
                "function": {"name": TOOL, "description": "The screen.", "parameters": SCHEMA},
            }
        ]
        try:
            for _ in range(3):
                completion = await settle(
                    client.chat.completions.create(model="gpt-x", messages=messages, tools=tools)
                )
                message = completion.choices[0].message
                if not message.tool_calls:
                    return str(message.content)
                messages.append(message.model_dump(exclude_none=True))
                for call in message.tool_calls:
                    content: Any = "the screen follows"
                    if self.in_tool and self.screen is not None:
                        image = {"type": "image_url", "image_url": {"url": self._uri(self.screen)}}
                        content = [{"type": "text", "text": "the screen:"}, image]
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
                if self.screen is not None and not self.in_tool:
                    image = {"type": "image_url", "image_url": {"url": self._uri(self.screen)}}
                    messages.append({"role": "user", "content": [image]})
            return "gave up"
        finally:
            await settle(client.close())

    async def _openai_responses(self) -> str:
        client = self._openai()
        items: list[Any] = [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": PROMPT},
                    {"type": "input_image", "image_url": self._uri(self.logo), "detail": "auto"},
                ],
            }
        ]
        tools = [
            {
                "type": "function",
                "name": TOOL,
                "description": "The screen.",
                "parameters": SCHEMA,
                "strict": False,
            }
        ]
        try:
            for _ in range(3):
                response = await settle(client.responses.create(model="gpt-x", input=items, tools=tools))
                calls = [item for item in response.output if item.type == "function_call"]
                if not calls:
                    return str(response.output_text)
                items.extend(item.model_dump(exclude_none=True) for item in response.output)
                for call in calls:
                    output: list[Any] = [{"type": "input_text", "text": "the screen:"}]
                    if self.screen is not None:
                        output.append({"type": "input_image", "image_url": self._uri(self.screen)})
                    items.append({"type": "function_call_output", "call_id": call.call_id, "output": output})
            return "gave up"
        finally:
            await settle(client.close())

    async def _gemini(self) -> str:
        client = genai.Client(http_options=types.HttpOptions(base_url=self.base_url))
        models = client.aio.models if self.is_async else client.models
        declaration = types.FunctionDeclaration(
            name=TOOL, description="The screen.", parameters_json_schema=SCHEMA
        )
        config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[declaration])])
        logo = types.Part(inline_data=types.Blob(mime_type="image/png", data=self.logo))
        contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=PROMPT), logo])]
        try:
            for _ in range(3):
                reply = await settle(
                    models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
                )
                calls = reply.function_calls or []
                if not calls:
                    return str(reply.text)
                contents.append(reply.candidates[0].content)
                parts = [self._gemini_answer(call.name or "") for call in calls]
                if self.screen is not None and not self.in_tool:
                    parts.append(types.Part(inline_data=types.Blob(mime_type="image/png", data=self.screen)))
                contents.append(types.Content(role="user", parts=parts))
            return "gave up"
        finally:
            if self.is_async:
                await client.aio.aclose()
            else:
                client.close()

    def _gemini_answer(self, name: str) -> types.Part:
        """The function response; with the screenshot in its ``parts`` for the ``gemini/tool`` variant."""
        if not self.in_tool or self.screen is None:
            return types.Part.from_function_response(name=name, response={"ok": True})
        blob = types.FunctionResponseBlob(mime_type="image/png", data=self.screen)
        response = types.FunctionResponse(
            name=name, response={"ok": True}, parts=[types.FunctionResponsePart(inline_data=blob)]
        )
        return types.Part(function_response=response)
