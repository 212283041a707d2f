"""The scripted model the example records against when no real API is used.

It plays Claude's part for this agent only: it reads the conversation and answers the way the real
model does for these questions (ask for the weather, convert the temperature, answer), in the
Messages API's JSON, so recording through :class:`~pytest_blackbox.testing.FakeProvider`
exercises the same SDK and HTTP path as the real API.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

_ids = itertools.count(1)


def _message(model: str, content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    number = next(_ids)
    return {
        "id": f"msg_01Example{number:012d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


def _tool_use(model: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    use = {"type": "tool_use", "id": f"toolu_01Example{next(_ids):08d}", "name": name, "input": tool_input}
    return _message(model, [use], "tool_use")


def _tool_results(messages: list[dict[str, Any]]) -> list[Any]:
    """The decoded results the agent has sent back so far, oldest first."""
    found: list[Any] = []
    for message in messages:
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_result" and not block.get("is_error"):
                found.append(json.loads(block["content"]))
    return found


def _city(question: str) -> str:
    match = re.search(r"\bin ([A-Z][a-z]+)", question)
    return match.group(1) if match else "Paris"


def respond(path: str, body: Any) -> tuple[int, Any]:
    """``FakeProvider(respond=respond)``: the next answer for this conversation."""
    if not path.endswith("/v1/messages") or not isinstance(body, dict):
        return 404, {"type": "error", "error": {"type": "not_found_error", "message": f"no route {path}"}}
    model = str(body.get("model", "claude-haiku-4-5"))
    messages = body.get("messages", [])
    results = _tool_results(messages)
    if not results:
        return 200, _tool_use(model, "get_weather", {"city": _city(str(messages[0]["content"]))})
    weather = results[0]
    if len(results) == 1:
        return 200, _tool_use(model, "celsius_to_fahrenheit", {"celsius": weather["celsius"]})
    text = (
        f"It is {weather['celsius']} °C ({results[1]} °F) and {weather['conditions']} in {weather['city']}."
    )
    return 200, _message(model, [{"type": "text", "text": text}], "end_turn")
