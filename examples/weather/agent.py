"""A small weather agent: Claude with two tools in a plain tool loop, sync and async.

It knows nothing about pytest-blackbox. Its test hands it the tools wrapped by the ``blackbox``
fixture, and the plugin records or replays its model calls where the SDK sends them, so the same
code runs against the real API, the bundled fake provider, or a cassette.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any

import anthropic
from anthropic.types import Message, ToolUseBlock

MODEL = "claude-haiku-4-5"
SYSTEM = "You are a weather assistant. Use the tools, then answer in one sentence."
MAX_TURNS = 5

TOOL_SPECS: list[dict[str, Any]] = [
    {
        "name": "get_weather",
        "description": "The current weather in a city: temperature in degrees Celsius and conditions.",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "a city name, e.g. Paris"}},
            "required": ["city"],
        },
    },
    {
        "name": "celsius_to_fahrenheit",
        "description": "Convert a temperature from degrees Celsius to degrees Fahrenheit.",
        "input_schema": {
            "type": "object",
            "properties": {"celsius": {"type": "number"}},
            "required": ["celsius"],
        },
    },
]

# A stand-in for a weather service, so the example needs no second API.
_STATIONS: dict[str, dict[str, Any]] = {
    "paris": {"city": "Paris", "celsius": 21, "conditions": "sunny"},
    "oslo": {"city": "Oslo", "celsius": 4, "conditions": "snowing"},
    "lima": {"city": "Lima", "celsius": 17, "conditions": "cloudy"},
}

Tool = Callable[..., Any]


def get_weather(city: str) -> dict[str, Any]:
    """The current weather of a known city; an unknown city is an error the model is told about."""
    station = _STATIONS.get(city.strip().lower())
    if station is None:
        raise LookupError(f"no weather station in {city}")
    return dict(station)


def celsius_to_fahrenheit(celsius: float) -> float:
    return round(celsius * 9 / 5 + 32, 1)


TOOLS: dict[str, Tool] = {"get_weather": get_weather, "celsius_to_fahrenheit": celsius_to_fahrenheit}


def _request(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 512, "system": SYSTEM, "tools": TOOL_SPECS, "messages": messages}


def _final_text(response: Message) -> str | None:
    """The answer, or ``None`` while the model still asks for tools."""
    if response.stop_reason == "tool_use":
        return None
    return "".join(block.text for block in response.content if block.type == "text")


def _next_messages(response: Message, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The assistant's turn as sent back to the API, then the user turn holding the tool results."""
    content: list[dict[str, Any]] = []
    for block in response.content:
        if block.type == "text":
            content.append({"type": "text", "text": block.text})
        elif block.type == "tool_use":
            content.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
    return [{"role": "assistant", "content": content}, {"role": "user", "content": results}]


def _tool_uses(response: Message) -> list[ToolUseBlock]:
    return [block for block in response.content if block.type == "tool_use"]


def _result(use: ToolUseBlock, outcome: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use.id, "content": json.dumps(outcome)}


def _error(use: ToolUseBlock, exc: Exception) -> dict[str, Any]:
    """A failing tool is reported to the model, as a real agent would do, not raised."""
    return {"type": "tool_result", "tool_use_id": use.id, "content": str(exc), "is_error": True}


def _call(tools: Mapping[str, Tool], use: ToolUseBlock) -> dict[str, Any]:
    try:
        return _result(use, tools[use.name](**use.input))
    except Exception as exc:
        return _error(use, exc)


async def _call_async(tools: Mapping[str, Tool], use: ToolUseBlock) -> dict[str, Any]:
    try:
        outcome = tools[use.name](**use.input)
        return _result(use, await outcome if inspect.isawaitable(outcome) else outcome)
    except Exception as exc:
        return _error(use, exc)


def run_agent(client: anthropic.Anthropic, question: str, tools: Mapping[str, Tool] = TOOLS) -> str:
    """Ask, run the tools the model asks for, send their results back, until it answers."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for _ in range(MAX_TURNS):
        response = client.messages.create(**_request(messages))
        answer = _final_text(response)
        if answer is not None:
            return answer
        messages += _next_messages(response, [_call(tools, use) for use in _tool_uses(response)])
    raise RuntimeError(f"no answer after {MAX_TURNS} model calls")


async def run_agent_async(
    client: anthropic.AsyncAnthropic, question: str, tools: Mapping[str, Tool] = TOOLS
) -> str:
    """The same loop on the async client; tools may be sync or async."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for _ in range(MAX_TURNS):
        response = await client.messages.create(**_request(messages))
        answer = _final_text(response)
        if answer is not None:
            return answer
        results = [await _call_async(tools, use) for use in _tool_uses(response)]
        messages += _next_messages(response, results)
    raise RuntimeError(f"no answer after {MAX_TURNS} model calls")
