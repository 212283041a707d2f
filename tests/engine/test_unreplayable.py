"""What a recording cannot replay is refused (or warned about) while recording, never found in CI:
a stream the agent stops reading, a different request after a failed call (a model fallback), a
failed call nothing retried, and requests that are not model calls."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import types

from pytest_blackbox import BlackboxUnsupportedError, UnreplayableWarning, blackbox
from pytest_blackbox.testing import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests.agents import gemini
from tests.agents.loop import settle
from tests.agents.travel import MODELS

CLOSED_EARLY = (
    "the agent stopped reading the streamed answer of model call 1 before it ended: a cassette holds only "
    "whole answers, so a replay could not give the agent the same part of one. Read every stream to its "
    "end (the SDKs' get_final_message(), get_final_completion() and get_final_response() do), or do not "
    "stream that call. Nothing is written for this run."
)
LONG_ANSWER = "A long answer that the agent stops reading after its first words, to save time."


def client(sdk: str, is_async: bool, fake: FakeProvider, max_retries: int = 0) -> Any:
    if sdk == "anthropic":
        kind: Any = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        return kind(base_url=fake.anthropic_base_url, max_retries=max_retries)
    kind = openai.AsyncOpenAI if is_async else openai.OpenAI
    return kind(base_url=fake.openai_base_url, max_retries=max_retries)


#: A provider that is not on this machine: a replay refuses what is sent there (loopback it sends on).
REMOTE = "https://api.example.com"


def remote_client(sdk: str, is_async: bool) -> Any:
    """An SDK client of :data:`REMOTE`; its answers come from a mock transport, beneath the interception."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={"input_tokens": 3, "object": "list", "data": []})

    transport = httpx2.MockTransport(answer)
    http = httpx2.AsyncClient(transport=transport) if is_async else httpx2.Client(transport=transport)
    if sdk == "anthropic":
        kind: Any = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        return kind(base_url=REMOTE, http_client=http, max_retries=0)
    kind = openai.AsyncOpenAI if is_async else openai.OpenAI
    return kind(base_url=REMOTE + "/v1", http_client=http, max_retries=0)


async def ask(sdk: str, api: Any, text: str = "hi", model: str | None = None) -> str:
    """One model call; the answer's text."""
    model = model or MODELS[sdk]
    messages = [{"role": "user", "content": text}]
    if sdk == "anthropic":
        reply = await settle(api.messages.create(model=model, max_tokens=64, messages=messages))
        return str(reply.content[0].text)
    reply = await settle(api.chat.completions.create(model=model, messages=messages))
    return str(reply.choices[0].message.content)


async def read_first_piece(sdk: str, api: Any, is_async: bool) -> str:
    """Stream an answer and stop reading after its first piece of text (closing the stream)."""
    messages = [{"role": "user", "content": "hi"}]
    if sdk == "anthropic":
        manager = api.messages.stream(model=MODELS[sdk], max_tokens=64, messages=messages)
        if is_async:
            async with manager as stream:
                async for text in stream.text_stream:
                    return str(text)
        with manager as stream:
            return str(next(iter(stream.text_stream)))
    stream = await settle(api.chat.completions.create(model=MODELS[sdk], messages=messages, stream=True))
    pieces = []
    if is_async:
        async for chunk in stream:
            pieces.append(chunk.choices[0].delta.content)
            if pieces[-1]:
                break
        await stream.close()
    else:
        for chunk in stream:
            pieces.append(chunk.choices[0].delta.content)
            if pieces[-1]:
                break
        stream.close()
    return "".join(piece or "" for piece in pieces)


def queue_text(fake: FakeProvider, sdk: str, text: str) -> None:
    (fake.queue_anthropic_text if sdk == "anthropic" else fake.queue_openai_text)(text)


# -- a stream the agent stops reading -------------------------------------------------------------


def test_a_stream_the_agent_stops_reading_is_refused(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path
) -> None:
    sdk, is_async = flavor
    queue_text(fake_provider, sdk, LONG_ANSWER)
    queue_text(fake_provider, sdk, "Short.")
    session = blackbox(mode="record", out=tmp_path / "cut.json")
    api = client(sdk, is_async, fake_provider)

    async def run() -> str:
        first = await read_first_piece(sdk, api, is_async)
        assert first and LONG_ANSWER.startswith(first)  # (the fake sends OpenAI's text in one chunk)
        return await ask(sdk, api)  # even the same request again cannot be replayed

    error_type = anthropic.BadRequestError if sdk == "anthropic" else openai.BadRequestError
    with pytest.raises(error_type, match="the agent stopped reading the streamed answer of model call 1"):
        asyncio.run(run())
    assert len(fake_provider.requests) == 1  # the second call was refused, not sent
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.finish()
    assert str(caught.value) == CLOSED_EARLY
    assert list(tmp_path.iterdir()) == []


def test_a_gemini_stream_the_agent_stops_reading_is_refused(
    fake_provider: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIzaSyUnreplayableTestKey0123456789abcd")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    fake_provider.queue_gemini_text(LONG_ANSWER)
    session = blackbox(mode="record", out=tmp_path / "cut.json")
    api = genai.Client(http_options=types.HttpOptions(base_url=fake_provider.gemini_base_url))
    stream: Any = api.models.generate_content_stream(model=gemini.MODEL, contents="hi")
    first = next(iter(stream))
    stream.close()
    assert LONG_ANSWER.startswith(first.text or "") and first.text != LONG_ANSWER
    api.close()
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.finish()
    assert str(caught.value) == CLOSED_EARLY


# -- failed calls ---------------------------------------------------------------------------------


def test_a_different_request_after_a_failed_call_is_refused_before_it_is_sent(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path
) -> None:
    """A fallback to another model after an overloaded answer: a replay would answer the first
    request with the fallback's recorded answer, and diverge at once."""
    sdk, is_async = flavor
    status = 529 if sdk == "anthropic" else 503
    fake_provider.queue_status(status, headers=[("x-should-retry", "false")])
    queue_text(fake_provider, sdk, "From the smaller model.")
    session = blackbox(mode="record", out=tmp_path / "run.json")
    api = client(sdk, is_async, fake_provider)
    fallback = "claude-haiku-5" if sdk == "anthropic" else "gpt-5-mini"
    module: Any = anthropic if sdk == "anthropic" else openai

    async def run() -> str:
        try:
            return await ask(sdk, api)
        except module.APIStatusError:
            return await ask(sdk, api, model=fallback)

    with pytest.raises(module.BadRequestError, match=r"model call 1 failed \(HTTP \d+\)"):
        asyncio.run(run())
    assert len(fake_provider.requests) == 1
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.finish()
    assert str(caught.value) == (
        f"model call 1 failed (HTTP {status}) and the agent's next request differs from it at model: a "
        "replay answers a call's first attempt with its recorded answer, so a run that changes its request "
        "after a failure (a fallback to another model, a shorter prompt) cannot be replayed. This request "
        "was not sent; record again when the provider answers the first request."
    )
    assert list(tmp_path.iterdir()) == []


def test_the_same_request_again_after_a_failed_call_records_as_if_it_never_failed(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path
) -> None:
    sdk, is_async = flavor
    fake_provider.queue_status(429, headers=[("x-should-retry", "false")])
    queue_text(fake_provider, sdk, "fine")
    session = blackbox(mode="record", out=tmp_path / "x.json")
    api = client(sdk, is_async, fake_provider)
    module: Any = anthropic if sdk == "anthropic" else openai

    async def run() -> str:
        with pytest.raises(module.RateLimitError):
            await ask(sdk, api)
        return await ask(sdk, api)  # the agent's own retry

    assert asyncio.run(run()) == "fine"
    report = session.finish()
    steps = load_trace(tmp_path / "x.json")["steps"]
    assert [s["type"] for s in steps] == ["model_input", "model_output", "metadata"]
    assert steps[2]["payload"] == {"event": "run_completed", "status": "success", "result": "fine"}
    assert report.steps == 3


@pytest.mark.parametrize("failure", ["status", "connection"])
def test_a_failed_call_nothing_retried_refuses_the_cassette(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, failure: str
) -> None:
    """The agent gave up after a failure: its replay would make that call and find no answer."""
    sdk, is_async = flavor
    queue_text(fake_provider, sdk, "fine")
    fake_provider.queue_status(500, headers=[("x-should-retry", "false")])
    session = blackbox(mode="record", out=tmp_path / "x.json")
    module: Any = anthropic if sdk == "anthropic" else openai
    closed = client(sdk, is_async, fake_provider)
    closed.base_url = "http://127.0.0.1:9" + ("/v1" if sdk == "openai" else "")

    async def run() -> str:
        answer = await ask(sdk, client(sdk, is_async, fake_provider))
        with pytest.raises(module.APIError):
            await ask(sdk, client(sdk, is_async, fake_provider) if failure == "status" else closed, "more?")
        return answer

    assert asyncio.run(run()) == "fine"
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.finish(result="fine")
    reason = "HTTP 500" if failure == "status" else "ConnectError"
    assert str(caught.value) == (
        f"model call 2 failed ({reason}) and was never retried: a cassette holds only answered calls, so a "
        "replay could not fail it the same way. Nothing was written; record again when the provider answers."
    )
    assert list(tmp_path.iterdir()) == []


# -- requests that are not model calls ------------------------------------------------------------


def test_a_request_that_is_not_a_model_call_is_warned_about_while_recording(
    flavor: tuple[str, bool], tmp_path: Path
) -> None:
    """``models.list`` to a remote host: sent while recording, refused in a
    replay (no warning for loopback, which a replay sends on)."""
    sdk, is_async = flavor
    session = blackbox(mode="record", out=tmp_path / "run.json")
    api = remote_client(sdk, is_async)

    async def other_call() -> Any:
        return await settle(api.models.list())

    with pytest.warns(UnreplayableWarning) as warned:
        asyncio.run(other_call())
    assert [str(w.message) for w in warned] == [
        f"record mode: GET {REMOTE}/v1/models is not a model call, so a replay cannot "
        "answer it (it would need the network, and is refused there). Make it inside a wrapped tool (a "
        "replay returns the tool's recorded result without running it), or skip it when the session "
        "replays."
    ]

    async def in_a_tool() -> Any:
        return await other_call()

    counted = session.tool("count", in_a_tool if is_async else lambda: asyncio.run(other_call()))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreplayableWarning)
        asyncio.run(settle(counted()))  # inside a wrapped tool: a replay never sends it
    session.finish()
    assert [s["type"] for s in load_trace(tmp_path / "run.json")["steps"]] == ["tool_call", "tool_result"]


def side_call_refusal(mode: str, fake: FakeProvider) -> str:
    return (
        f"{mode} mode: POST {fake.anthropic_base_url}/v1/messages/count_tokens is the SDK side call "
        "messages.count_tokens, not a model call: a cassette cannot hold it, so it is never sent unrecorded "
        "nor answered in a replay. Make it inside a wrapped tool (blackbox.tool): the recording keeps its "
        "result and a replay returns it without calling the provider"
    )


def count_tokens(api: Any) -> Any:
    """``messages.count_tokens``, awaited when the client is async."""
    messages = [{"role": "user", "content": "hi"}]
    return asyncio.run(settle(api.messages.count_tokens(model=MODELS["anthropic"], messages=messages)))


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_an_sdk_side_call_is_refused_while_recording_and_never_sent(
    fake_provider: FakeProvider, tmp_path: Path, is_async: bool, provider_keys: pytest.MonkeyPatch
) -> None:
    session = blackbox(mode="record", out=tmp_path / "run.json")
    with pytest.raises(anthropic.APIError):
        count_tokens(client("anthropic", is_async, fake_provider))
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.finish()
    assert str(caught.value) == side_call_refusal("record", fake_provider)
    assert fake_provider.requests == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flavor", [("anthropic", False), ("anthropic", True)], indirect=True)
def test_an_sdk_side_call_is_refused_in_a_replay_without_reaching_a_server(
    recorded: tuple[Path, Any, str],
    fake_provider: FakeProvider,
    flavor: tuple[str, bool],
    offline: Callable[[], list[str]],
) -> None:
    """The fake provider is on loopback, which a replay lets through: a side call is refused all the same."""
    path, _, _ = recorded
    seen = len(fake_provider.requests)
    attempts = offline()
    session = blackbox(mode="replay", cassette=path)
    with pytest.raises(anthropic.APIError):
        count_tokens(client("anthropic", flavor[1], fake_provider))
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.finish()
    assert str(caught.value) == side_call_refusal("replay", fake_provider)
    assert len(fake_provider.requests) == seen
    assert attempts == []
