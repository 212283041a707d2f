"""OpenAI-compatible servers through the openai SDK: their reasoning comes back, other extras are
dropped on purpose, and ``drop_fields`` accepts losing a named one (the refusal of an unknown field:
test_unknown_fields.py).

Each server's extra fields are built from its documented Chat Completions shape (vLLM and DeepSeek's
``reasoning_content``, Ollama, OpenRouter and Groq's ``reasoning``, Groq's ``x_groq``, OpenRouter's
``provider``), recorded through the real SDK against the fake provider and replayed offline.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import DroppedFieldWarning
from pytest_blackbox.testing import Envelope, FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests.agents.loop import settle
from tests.engine.conftest import record_and_replay

FLAVORS = [(False, False), (True, False), (False, True), (True, True)]
FLAVOR_IDS = ["sync", "async", "sync-streamed", "async-streamed"]
THOUGHT = "The user greets me; a short greeting back is enough."


def ask(root: str, is_async: bool, stream: bool) -> dict[str, Any]:
    """One Chat call through the openai SDK: the message as the SDK hands it over (extras included)."""

    async def call() -> dict[str, Any]:
        client: Any = (openai.AsyncOpenAI if is_async else openai.OpenAI)(
            base_url=root + "/v1", max_retries=0
        )
        messages = [{"role": "user", "content": "Hello"}]
        result = await settle(client.chat.completions.create(model="qwen3", messages=messages, stream=stream))
        if not stream:
            dumped: dict[str, Any] = result.choices[0].message.model_dump()
            return dumped
        chunks = [chunk async for chunk in result] if is_async else list(result)
        joined: dict[str, Any] = {}
        for chunk in chunks:
            for key, value in (chunk.choices[0].delta.model_dump() if chunk.choices else {}).items():
                if isinstance(value, str):
                    joined[key] = joined.get(key, "") + value
        return joined

    return asyncio.run(call())


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
@pytest.mark.parametrize(
    ("extras", "neutral"),
    [
        ({"reasoning_content": THOUGHT}, {"reasoningContent": THOUGHT}),
        ({"reasoning": THOUGHT}, {"reasoning": THOUGHT}),
        (
            {"reasoning_content": THOUGHT, "reasoning": THOUGHT},
            {"reasoningContent": THOUGHT, "reasoning": THOUGHT},
        ),
    ],
    ids=["reasoning_content", "reasoning", "both"],
)
def test_a_servers_reasoning_is_recorded_and_given_back(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    extras: dict[str, str],
    neutral: dict[str, str],
    is_async: bool,
    stream: bool,
) -> None:
    fake_provider.queue_openai_text("Hi!", envelope=Envelope(message_extras=extras))
    live, replayed, path = record_and_replay(
        fake_provider, tmp_path, offline, lambda root: ask(root, is_async, stream)
    )
    assert {key: live[key] for key in extras} == extras
    assert replayed == live
    assert load_trace(path)["steps"][1]["payload"] == {
        "type": "final_answer",
        "text": "Hi!",
        "reasoning": neutral,
    }


@pytest.mark.parametrize("stream", [False, True], ids=["json", "streamed"])
def test_known_extras_of_compatible_servers_are_dropped_on_purpose(
    fake_provider: FakeProvider, tmp_path: Path, offline: Callable[[], list[str]], stream: bool
) -> None:
    """Groq's timings and OpenRouter's upstream name are accounting, like usage: no refusal, no warning."""
    extras = {"x_groq": {"id": "req_01"}, "provider": "DeepInfra"}
    fake_provider.queue_openai_text("Hi!", envelope=Envelope(extras=extras))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DroppedFieldWarning)
        live, replayed, path = record_and_replay(
            fake_provider, tmp_path, offline, lambda root: ask(root, False, stream)
        )
    assert live["content"] == replayed["content"] == "Hi!"
    assert load_trace(path)["steps"][1]["payload"] == {"type": "final_answer", "text": "Hi!"}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "streamed"])
def test_drop_fields_accepts_losing_a_named_field_with_a_warning(
    fake_provider: FakeProvider, tmp_path: Path, offline: Callable[[], list[str]], stream: bool
) -> None:
    fake_provider.queue_openai_text("Hi!", envelope=Envelope(message_extras={"x_new": "value"}))
    out = tmp_path / "run.json"
    session = blackbox(
        mode="record", out=out, drop_fields=["choices[].message.x_new", "choices[].delta.x_new"]
    )
    with pytest.warns(DroppedFieldWarning) as warned:
        live = ask(fake_provider.base_url, False, stream)
    session.finish(result="done")
    where = "delta" if stream else "message"
    assert [str(w.message) for w in warned] == [
        f"record mode: the response field choices[0].{where}.x_new was left out of the cassette, as "
        f"drop_fields accepts (choices[].{where}.x_new): a replay does not give it back"
    ]
    assert live["x_new"] == "value"
    root = fake_provider.base_url
    fake_provider.stop()
    assert offline() == []
    session = blackbox(mode="replay", cassette=out)
    replayed = ask(root, False, stream)
    session.finish(result="done")
    assert "x_new" not in replayed
    assert replayed["content"] == "Hi!"


def answer(root: str, is_async: bool, stream: bool) -> dict[str, Any]:
    """One Chat call with a tool: the choice the SDK hands over (streamed: its chunks assembled by the
    SDK's own accumulator, with every chunk's finish reason), without the call ids a replay renames."""

    async def call() -> dict[str, Any]:
        client: Any = (openai.AsyncOpenAI if is_async else openai.OpenAI)(
            base_url=root + "/v1", max_retries=0
        )
        request = {
            "model": "kimi-k2",
            "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
        }
        finishes: list[Any] = []
        if stream:
            state = ChatCompletionStreamState()
            result = await settle(client.chat.completions.create(**request, stream=True))
            for chunk in [chunk async for chunk in result] if is_async else list(result):
                finishes += [choice.finish_reason for choice in chunk.choices]
                state.handle_chunk(chunk)
            completion = state.get_final_completion()
        else:
            completion = await settle(client.chat.completions.create(**request))
        choice: dict[str, Any] = completion.choices[0].model_dump()
        for tool_call in choice["message"]["tool_calls"] or []:
            del tool_call["id"]
        return {**choice, "chunk_finish_reasons": sorted(set(finishes), key=str)}

    return asyncio.run(call())


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
@pytest.mark.parametrize("calls", [False, True], ids=["text", "tool-calls"])
def test_an_answer_without_a_finish_reason_is_given_back_without_one(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    calls: bool,
    is_async: bool,
    stream: bool,
) -> None:
    """OpenRouter relaying some upstreams sends ``finish_reason: null`` in every chunk, then
    ``[DONE]``: the answer is whole, and a replay leaves the finish reason out as it was."""
    envelope = Envelope(finish_reason=False)
    if calls:
        fake_provider.queue_openai_tool_calls([("get_weather", {"city": "Paris"})], envelope=envelope)
    else:
        fake_provider.queue_openai_text("Sunny.", envelope=envelope)
    live, replayed, path = record_and_replay(
        fake_provider, tmp_path, offline, lambda root: answer(root, is_async, stream)
    )
    assert live["finish_reason"] is None
    assert live["chunk_finish_reasons"] == ([None] if stream else [])
    assert replayed == live
    payload = load_trace(path)["steps"][1]["payload"]
    assert payload["omitted"] == ["finishReason"]
    assert payload["type"] == ("tool_calls" if calls else "final_answer")


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
@pytest.mark.parametrize("content", ["", None], ids=["empty-content", "null-content"])
def test_tool_calls_keep_an_empty_content_apart_from_none(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    content: str | None,
    is_async: bool,
    stream: bool,
) -> None:
    """Some compatible servers send ``content: ""`` beside tool calls (streamed: a role chunk with
    ``""`` and no text), OpenAI sends ``null``: each comes back as it was, and OpenAI's records as
    it always did."""
    fake_provider.queue_openai_tool_calls([("get_weather", {"city": "Paris"})], text=content)
    live, replayed, path = record_and_replay(
        fake_provider, tmp_path, offline, lambda root: answer(root, is_async, stream)
    )
    assert live["message"]["content"] == content
    assert replayed == live
    empty = {"text": ""} if content == "" else {}
    assert load_trace(path)["steps"][1]["payload"] == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}}],
        **empty,
    }


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
def test_tool_calls_with_null_arguments_are_given_back_null(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    is_async: bool,
    stream: bool,
) -> None:
    """Some compatible servers send a call of a tool without parameters with ``arguments: null``
    (streamed: no argument delta): it records as an empty input, and a replay sends ``null`` back."""
    envelope = Envelope(call_arguments=False)
    fake_provider.queue_openai_tool_calls([("get_weather", {})], envelope=envelope)
    live, replayed, path = record_and_replay(
        fake_provider, tmp_path, offline, lambda root: answer(root, is_async, stream)
    )
    assert live["message"]["tool_calls"][0]["function"]["arguments"] is None
    assert replayed == live
    assert load_trace(path)["steps"][1]["payload"] == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {}}],
        "omitted": ["callArguments"],
    }
