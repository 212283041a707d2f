"""Gemini codeExecution through the real google-genai SDK: the code and its result come back offline.

A two-turn conversation is recorded against the fake provider (plain, streamed, sync and async;
code parts with ids as Gemini 3 sends them and without as Gemini 2.x does): the first answer holds
text, ``executableCode``, ``codeExecutionResult`` and more text, and the agent sends it back in the
second request's history. The replay hands the agent the same parts with no request reaching the
provider and no key in the environment; changed code in the history is a divergence.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google import genai
from google.genai import errors, types

from pytest_blackbox import verify_trace
from pytest_blackbox.testing import FakeProvider
from tests.engine.conftest import RecordOnce, ReplayDiverges, ReplayOffline

CODE = {"language": "PYTHON", "code": "print(1 + 1)"}
RESULT = {"outcome": "OUTCOME_OK", "output": "2\n"}


def answer_parts(with_ids: bool) -> list[dict[str, Any]]:
    """The first answer's parts as the API sends them (Gemini 3 gives the code and its result an id)."""
    identity = {"id": "exec-7f3a"} if with_ids else {}
    return [
        {"text": "Let me compute that."},
        {"executableCode": {**CODE, **identity}},
        {"codeExecutionResult": {**RESULT, **identity}},
        {"text": "The sum is 2."},
    ]


def merged(parts: list[Any]) -> list[dict[str, Any]]:
    """The parts as JSON with adjacent text joined: what a streamed answer adds up to."""
    found: list[dict[str, Any]] = []
    for part in parts:
        value = json.loads(part.model_dump_json(exclude_none=True))
        if found and "text" in found[-1] and "text" in value:
            found[-1]["text"] += value["text"]
        else:
            found.append(value)
    return found


def converse(base_url: str, flavor: str, edit: Callable[[list[Any]], None] = lambda parts: None) -> Any:
    """Ask, send the answer back with a follow-up; what the SDK handed the agent each time."""
    client = genai.Client(api_key="not-a-key", http_options=types.HttpOptions(base_url=base_url))
    config = types.GenerateContentConfig(tools=[types.Tool(code_execution=types.ToolCodeExecution())])

    async def ask_async(contents: Any) -> Any:
        options: Any = {"model": "gemini-2.5-flash", "contents": contents, "config": config}
        if flavor == "stream":
            stream = await client.aio.models.generate_content_stream(**options)
            chunks: list[Any] = [chunk async for chunk in stream]
            parts = [part for chunk in chunks for part in chunk.candidates[0].content.parts or []]
            return parts, [json.loads(chunk.model_dump_json(exclude_none=True)) for chunk in chunks]
        response: Any = await client.aio.models.generate_content(**options)
        return response.candidates[0].content.parts, json.loads(response.model_dump_json(exclude_none=True))

    def ask(contents: Any) -> Any:
        if flavor != "sync":
            return asyncio.run(ask_async(contents))
        response: Any = client.models.generate_content(
            model="gemini-2.5-flash", contents=contents, config=config
        )
        return response.candidates[0].content.parts, json.loads(response.model_dump_json(exclude_none=True))

    question = types.Content(role="user", parts=[types.Part(text="What is 1 + 1? Run code.")])
    parts, first = ask([question])
    seen = merged(parts)
    history = [types.Part.model_validate(part) for part in seen]
    edit(history)
    thanks = types.Content(role="user", parts=[types.Part(text="Thanks!")])
    _, second = ask([question, types.Content(role="model", parts=history), thanks])
    return seen, first, second


def without_ids(value: Any) -> Any:
    """JSON without ``id`` fields: a replay hands out neutral ids by design."""
    if isinstance(value, dict):
        return {k: without_ids(v) for k, v in value.items() if k != "id"}
    if isinstance(value, list):
        return [without_ids(item) for item in value]
    return value


@pytest.fixture(params=["sync", "async", "stream"])
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=[True, False], ids=["ids", "no-ids"])
def with_ids(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
def recorded(flavor: str, with_ids: bool, record_once: RecordOnce) -> tuple[Path, Any]:
    def queue(fake: FakeProvider) -> None:
        fake.queue_gemini_parts(answer_parts(with_ids))
        fake.queue_gemini_text("You're welcome.")

    return record_once("code.json", queue, lambda fake, _: converse(fake.gemini_base_url, flavor))


def test_the_code_and_its_result_are_recorded_in_order_and_given_back_offline(
    recorded: tuple[Path, Any],
    flavor: str,
    with_ids: bool,
    replay_offline: ReplayOffline,
) -> None:
    path, live = recorded
    steps = json.loads(path.read_text(encoding="utf-8"))["steps"]
    assert steps[0]["payload"]["tools"] == [
        {"name": "codeExecution", "description": "", "builtin": "codeExecution"}
    ]
    content = [
        {"type": "text", "text": "Let me compute that."},
        {"type": "server_tool_use", "toolCallId": "server-0", "toolName": "codeExecution", "toolInput": CODE},
        {
            "type": "server_tool_result",
            "toolCallId": "server-0",
            "toolName": "codeExecution",
            "result": RESULT,
        },
        {"type": "text", "text": "The sum is 2."},
    ]
    assert steps[1]["payload"]["content"] == content
    assert steps[1]["payload"].get("omitted", []) == ([] if with_ids else ["codeExecutionId"])
    assert steps[2]["payload"]["messages"][1] == {"role": "assistant", "content": content}
    assert verify_trace(path).ok  # neutral: the provider's code id is server-0
    replayed = replay_offline(path, lambda fake, _: converse(fake.gemini_base_url, flavor))
    identity = {"id": "server-0"} if with_ids else {}
    assert replayed[0] == [
        {"text": "Let me compute that."},
        {"executable_code": {**CODE, **identity}},
        {"code_execution_result": {**RESULT, **identity}},
        {"text": "The sum is 2."},
    ]
    if with_ids:  # the provider's id becomes the neutral one: everything else is as recorded
        live[0][1]["executable_code"]["id"] = live[0][2]["code_execution_result"]["id"] = "server-0"
    assert replayed[0] == live[0]
    if flavor != "stream":  # a stream's text arrives in other pieces
        assert without_ids(replayed[1]["candidates"]) == without_ids(live[1]["candidates"])


def test_changed_code_in_the_history_diverges_naming_it(
    recorded: tuple[Path, Any],
    flavor: str,
    replay_diverges: ReplayDiverges,
) -> None:
    path, _ = recorded

    def edit(parts: list[Any]) -> None:
        parts[1].executable_code.code = "print(2 + 2)"

    error = replay_diverges(
        path, lambda fake, _: converse(fake.gemini_base_url, flavor, edit), errors.ClientError
    )
    assert error.path == "messages[1].content[1].toolInput.code"
