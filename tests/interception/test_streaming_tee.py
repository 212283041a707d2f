"""Forwarded event streams: the client reads upstream bytes as they arrive while a tee keeps a copy.

The fake provider's chunk generators wait on a gate between chunks, so "the client saw the first event
before the server sent the last one" is proven by the server itself: it only goes on once the client
has handed the agent its first text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from pytest_blackbox.interception import Forward, Interceptor, ModelRequest, UpstreamResponse
from pytest_blackbox.providers import ROUTES, CallIds, openai_chat, openai_responses
from pytest_blackbox.providers import anthropic as anthropic_provider
from pytest_blackbox.testing.fake_provider import FakeProvider, ScriptedResponse

USER: Any = [{"role": "user", "content": "ping"}]
ANSWER = {"type": "final_answer", "text": "Hello, streaming world!"}
#: message_start, ping, content_block_start, the first text delta ("Hello, streaming"), then the rest.
EVENTS = anthropic_provider.synthesize_stream(ANSWER, output_index=0, model="claude-test", timestamp=0)
FIRST = 4
SSE_HEADERS = (("content-type", "text/event-stream"), ("cache-control", "no-cache"))
WAIT = 5.0


class Gate:
    """Holds the server after the first text delta until the client lets it go on."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.waited: list[bool] = []

    def chunks(self) -> Iterator[bytes]:
        yield from EVENTS[:FIRST]
        self.waited.append(self.opened.wait(WAIT))
        yield from EVENTS[FIRST:]


class Seen:
    """What the interception layer reported, and when."""

    def __init__(self) -> None:
        self.responses: list[UpstreamResponse] = []
        self.failures: list[BaseException] = []

    def forward(self, request: ModelRequest) -> Forward:
        return Forward(self.responses.append, self.failures.append)


def serve(fake: FakeProvider, chunks: Any) -> None:
    fake.queue(ScriptedResponse(200, headers=SSE_HEADERS, chunks=chunks))


def claude(fake: FakeProvider) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=fake.base_url, max_retries=0)


def async_claude(fake: FakeProvider) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=fake.base_url, max_retries=0)


def test_the_first_event_reaches_the_agent_before_the_last_is_sent(fake_provider: FakeProvider) -> None:
    gate, seen = Gate(), Seen()
    serve(fake_provider, gate.chunks())
    texts: list[str] = []
    with (
        Interceptor(seen.forward, routes=ROUTES),
        claude(fake_provider).messages.stream(model="claude-test", max_tokens=16, messages=USER) as stream,
    ):
        for text in stream.text_stream:
            if not texts:
                assert seen.responses == []
                gate.opened.set()
            texts.append(text)
        final = stream.get_final_message()
    assert gate.waited == [True]
    assert (texts, final.stop_reason) == (["Hello, streaming", " world!"], "end_turn")
    [upstream] = seen.responses
    assert (upstream.status, upstream.complete, upstream.body) == (200, True, b"".join(EVENTS))
    assert ("content-type", "text/event-stream") in upstream.headers
    assert seen.failures == []


async def test_the_first_event_reaches_an_async_agent_before_the_last_is_sent(
    fake_provider: FakeProvider,
) -> None:
    gate, seen = Gate(), Seen()
    serve(fake_provider, gate.chunks())
    texts: list[str] = []
    with Interceptor(seen.forward, routes=ROUTES):
        async with async_claude(fake_provider).messages.stream(
            model="claude-test", max_tokens=16, messages=USER
        ) as stream:
            async for text in stream.text_stream:
                if not texts:
                    assert seen.responses == []
                    gate.opened.set()
                texts.append(text)
    assert gate.waited == [True]
    assert texts == ["Hello, streaming", " world!"]
    [upstream] = seen.responses
    assert (upstream.complete, upstream.body) == (True, b"".join(EVENTS))


def test_an_agent_that_stops_reading_early_gives_an_incomplete_body(fake_provider: FakeProvider) -> None:
    gate, seen = Gate(), Seen()
    serve(fake_provider, gate.chunks())
    with Interceptor(seen.forward, routes=ROUTES):
        with claude(fake_provider).messages.stream(
            model="claude-test", max_tokens=16, messages=USER
        ) as stream:
            first = next(iter(stream.text_stream))
        gate.opened.set()
    assert first == "Hello, streaming"
    [upstream] = seen.responses
    assert (upstream.complete, upstream.body) == (False, b"".join(EVENTS[:FIRST]))
    assert seen.failures == []


async def test_an_async_agent_that_stops_reading_early_gives_an_incomplete_body(
    fake_provider: FakeProvider,
) -> None:
    gate, seen = Gate(), Seen()
    serve(fake_provider, gate.chunks())
    with Interceptor(seen.forward, routes=ROUTES):
        async with async_claude(fake_provider).messages.stream(
            model="claude-test", max_tokens=16, messages=USER
        ) as stream:
            first = await anext(aiter(stream.text_stream))
        gate.opened.set()
    assert first == "Hello, streaming"
    [upstream] = seen.responses
    assert (upstream.complete, upstream.body) == (False, b"".join(EVENTS[:FIRST]))


def test_closing_without_reading_reports_once(fake_provider: FakeProvider) -> None:
    gate, seen = Gate(), Seen()
    serve(fake_provider, gate.chunks())
    with Interceptor(seen.forward, routes=ROUTES):
        stream = claude(fake_provider).messages.create(
            model="claude-test", max_tokens=16, messages=USER, stream=True
        )
        stream.close()
        stream.close()
        gate.opened.set()
    [upstream] = seen.responses
    assert upstream.complete is False
    assert b"".join(EVENTS[:FIRST]).startswith(upstream.body)


def cut_after_first_events() -> Iterator[bytes]:
    yield from EVENTS[:FIRST]
    raise ConnectionAbortedError("the fake upstream drops the connection here")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_an_upstream_that_drops_mid_stream_is_a_failure(
    is_async: bool, fake_provider: FakeProvider
) -> None:
    seen = Seen()
    serve(fake_provider, cut_after_first_events())
    received: list[str] = []
    with Interceptor(seen.forward, routes=ROUTES), pytest.raises(httpx2.RemoteProtocolError) as failure:
        if is_async:
            async with async_claude(fake_provider).messages.stream(
                model="claude-test", max_tokens=16, messages=USER
            ) as stream:
                async for text in stream.text_stream:
                    received.append(text)
        else:
            with claude(fake_provider).messages.stream(
                model="claude-test", max_tokens=16, messages=USER
            ) as stream:
                received.extend(stream.text_stream)
    assert received == ["Hello, streaming"]
    assert seen.failures == [failure.value]
    assert seen.responses == []


def test_a_gzip_stream_closed_early_gives_the_decoded_start(fake_provider: FakeProvider) -> None:
    gate, seen = Gate(), Seen()
    fake_provider.queue(ScriptedResponse(200, headers=SSE_HEADERS, chunks=gate.chunks(), gzip=True))
    with Interceptor(seen.forward, routes=ROUTES):
        with claude(fake_provider).messages.stream(
            model="claude-test", max_tokens=16, messages=USER
        ) as stream:
            first = next(iter(stream.text_stream))
        gate.opened.set()
    assert first == "Hello, streaming"
    [upstream] = seen.responses
    assert ("content-encoding", "gzip") in upstream.headers
    assert (upstream.complete, upstream.body) == (False, b"".join(EVENTS[:FIRST]))


CHAT_EVENTS = openai_chat.synthesize_stream(ANSWER, output_index=0, model="gpt-test", timestamp=0)


@pytest.mark.parametrize(
    ("chunks", "complete"),
    [(CHAT_EVENTS, True), (CHAT_EVENTS[:-1], False)],
    ids=["closed-after-done", "closed-before-done"],
)
def test_a_chat_stream_closed_by_the_sdk_at_done_is_complete(
    chunks: list[bytes], complete: bool, fake_provider: FakeProvider
) -> None:
    gate, seen = Gate(), Seen()

    def held_open() -> Iterator[bytes]:
        yield from chunks
        gate.waited.append(gate.opened.wait(WAIT))

    serve(fake_provider, held_open())
    with Interceptor(seen.forward, routes=ROUTES):
        client = openai.OpenAI(api_key="sk-test", base_url=fake_provider.openai_base_url, max_retries=0)
        stream = client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
        finishes = []
        for chunk in stream:  # the SDK itself stops at [DONE]; without one, the agent stops at the finish
            finishes.append(chunk.choices[0].finish_reason)
            if finishes[-1] is not None and not complete:
                break
        stream.close()
        gate.opened.set()
    [upstream] = seen.responses
    assert (upstream.complete, upstream.body) == (complete, b"".join(chunks))
    assert finishes == [None, None, None, "stop"]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_a_gzip_stream_is_decoded_at_the_end(is_async: bool, fake_provider: FakeProvider) -> None:
    seen = Seen()
    fake_provider.queue_anthropic_text("Zipped and streamed", gzip=True)
    with Interceptor(seen.forward, routes=ROUTES):
        if is_async:
            async with async_claude(fake_provider).messages.stream(
                model="claude-test", max_tokens=16, messages=USER
            ) as stream:
                text = await stream.get_final_text()
        else:
            with claude(fake_provider).messages.stream(
                model="claude-test", max_tokens=16, messages=USER
            ) as stream:
                text = stream.get_final_text()
    assert text == "Zipped and streamed"
    assert fake_provider.requests[0].headers["accept-encoding"].startswith("gzip")
    [upstream] = seen.responses
    assert ("content-encoding", "gzip") in upstream.headers
    assert upstream.complete is True
    assert upstream.body.startswith(b"event: message_start\ndata: ")
    assert anthropic_provider.normalize_response(
        anthropic_provider.collect_stream(upstream.body), CallIds()
    ) == {
        "type": "final_answer",
        "text": "Zipped and streamed",
    }


# -- what a recording makes of a forwarded stream: tee, then collect_stream, then normalize ----


TOOL_CALL = [("weather", {"city": "Paris"})]
EXPECTED = {
    "type": "tool_calls",
    "calls": [{"toolCallId": "call-0", "toolName": "weather", "toolInput": {"city": "Paris"}}],
    "text": "Checking.",
}


def openai_client(fake: FakeProvider) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=fake.openai_base_url, max_retries=0)


def async_openai_client(fake: FakeProvider) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="sk-test", base_url=fake.openai_base_url, max_retries=0)


async def record_anthropic(fake: FakeProvider, is_async: bool) -> None:
    fake.queue_anthropic_tool_calls(TOOL_CALL, text="Checking.")
    if is_async:
        async with async_claude(fake).messages.stream(
            model="claude-test", max_tokens=64, messages=USER
        ) as stream:
            await stream.until_done()
    else:
        with claude(fake).messages.stream(model="claude-test", max_tokens=64, messages=USER) as stream:
            stream.until_done()


async def record_chat(fake: FakeProvider, is_async: bool) -> None:
    fake.queue_openai_tool_calls(TOOL_CALL, text="Checking.")
    options: Any = {"include_usage": True}
    if is_async:
        stream = await async_openai_client(fake).chat.completions.create(
            model="gpt-test", messages=USER, stream=True, stream_options=options
        )
        _ = [chunk async for chunk in stream]
    else:
        _ = list(
            openai_client(fake).chat.completions.create(
                model="gpt-test", messages=USER, stream=True, stream_options=options
            )
        )


async def record_responses(fake: FakeProvider, is_async: bool) -> None:
    fake.queue_responses_tool_calls(TOOL_CALL, text="Checking.")
    if is_async:
        async with async_openai_client(fake).responses.stream(
            model="gpt-test", input="ping", reasoning={"effort": "low"}
        ) as stream:
            await stream.get_final_response()
    else:
        with openai_client(fake).responses.stream(
            model="gpt-test", input="ping", reasoning={"effort": "low"}
        ) as stream:
            stream.get_final_response()


RECORDINGS: dict[str, tuple[Any, Any]] = {
    "anthropic": (record_anthropic, anthropic_provider),
    "chat": (record_chat, openai_chat),
    "responses": (record_responses, openai_responses),
}


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("name", list(RECORDINGS))
async def test_a_forwarded_stream_collects_to_the_neutral_turn(
    name: str, is_async: bool, fake_provider: FakeProvider
) -> None:
    record, provider = RECORDINGS[name]
    seen = Seen()
    with Interceptor(seen.forward, routes=ROUTES):
        await record(fake_provider, is_async)
    [upstream] = seen.responses
    assert upstream.complete is True
    assert json.loads(fake_provider.requests[0].body)["stream"] is True
    assert provider.normalize_response(provider.collect_stream(upstream.body), CallIds()) == EXPECTED


@pytest.mark.parametrize("reasoning", [None, {"effort": "low"}], ids=["plain", "reasoning"])
def test_a_forwarded_responses_json_answer_normalizes(reasoning: Any, fake_provider: FakeProvider) -> None:
    fake_provider.queue_responses_tool_calls(TOOL_CALL, text="Checking.", gzip=True)
    seen = Seen()
    extra: Any = {} if reasoning is None else {"reasoning": reasoning}
    with Interceptor(seen.forward, routes=ROUTES):
        response = openai_client(fake_provider).responses.create(model="gpt-test", input="ping", **extra)
    [upstream] = seen.responses
    body = json.loads(upstream.body)
    assert [item["type"] for item in body["output"]] == (["reasoning"] if reasoning else []) + [
        "message",
        "function_call",
    ]
    assert response.id == body["id"] and response.id.startswith("resp_")
    assert ("content-encoding", "gzip") in upstream.headers
    assert openai_responses.normalize_response(body, CallIds()) == EXPECTED
