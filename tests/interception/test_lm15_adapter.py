"""DSPy's native transports beside httpx: what they send reaches the interceptor's handlers, sync and
async, and nothing is touched while no interceptor runs."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import socket
from typing import Any

import pytest

from pytest_blackbox.interception import (
    Forward,
    Interceptor,
    ModelRequest,
    OtherRequest,
    Reply,
    UpstreamResponse,
)
from pytest_blackbox.providers import ROUTES
from pytest_blackbox.testing.fake_provider import FakeProvider

if importlib.util.find_spec("dspy") is None:
    pytest.skip("DSPy is not installed (pip install 'pytest-blackbox[frameworks]')", allow_module_level=True)


class _Transports:
    """DSPy's transports, imported when a test first uses them: importing DSPy costs seconds, which
    every worker collecting this module would pay. Imported by name, too: DSPy's vendored package
    carries type information that would make mypy read ``dspy`` itself as typed, which it is not."""

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module("dspy._vendor.lm15.transports"), name)


transports = _Transports()

Sent = tuple[int, list[tuple[str, str]], bytes]
CHAT = json.dumps({"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}).encode()


def chat(root: str, *headers: tuple[str, str]) -> Any:
    return transports.TransportRequest(
        "POST", root + "/v1/chat/completions", [("content-type", "application/json"), *headers], CHAT
    )


def send(request: Any, is_async: bool) -> Sent:
    """One request through a new transport of DSPy's, read to its end."""
    if not is_async:
        with transports.StdlibTransport() as sync, sync.stream(request) as response:
            return response.status, list(response.headers), response.read()

    async def go() -> Sent:
        async with transports.StdlibAsyncTransport() as transport, transport.stream(request) as response:
            return response.status, list(response.headers), await response.read()

    return asyncio.run(go())


def refuse(request: Any) -> Reply | Forward:
    raise AssertionError(f"not expected here: {request}")


@pytest.fixture(params=[False, True], ids=["sync", "async"])
def is_async(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def test_a_reply_answers_a_model_call_without_a_connection(
    fake_provider: FakeProvider, is_async: bool
) -> None:
    seen: list[ModelRequest] = []

    def on_model(request: ModelRequest) -> Reply:
        seen.append(request)
        return Reply(201, b'{"answer": 1}', [("content-type", "application/json"), ("x-a", "b")])

    with Interceptor(on_model, refuse, routes=ROUTES):
        status, headers, body = send(chat(fake_provider.base_url), is_async)
    assert (status, body) == (201, b'{"answer": 1}')
    assert ("x-a", "b") in headers
    [request] = seen
    assert (request.route, request.body, request.is_async) == ("openai_chat", CHAT, is_async)
    assert ("content-type", "application/json") in request.headers
    assert fake_provider.requests == []


@pytest.mark.parametrize("gzip", [False, True], ids=["plain", "gzip"])
def test_a_forward_sends_the_request_and_shows_the_whole_answer(
    fake_provider: FakeProvider, is_async: bool, gzip: bool
) -> None:
    """The transport decodes a gzip answer (when asked for one) itself: the handler sees it decoded,
    without the header."""
    fake_provider.queue_openai_text("Hello.", gzip=gzip)
    answers: list[UpstreamResponse] = []
    with Interceptor(lambda _: Forward(answers.append), refuse, routes=ROUTES):
        accept = [("accept-encoding", "gzip")] if gzip else []
        status, headers, body = send(chat(fake_provider.base_url, *accept), is_async)
    [answer] = answers
    assert status == answer.status == 200
    assert body == answer.body and json.loads(body)["choices"][0]["message"]["content"] == "Hello."
    encodings = [value for name, value in headers if name.lower() == "content-encoding"]
    assert encodings == (["gzip"] if gzip else [])
    assert "content-encoding" not in dict(answer.headers)
    assert [request.json for request in fake_provider.requests] == [json.loads(CHAT)]


def test_a_forward_goes_to_its_target(fake_provider: FakeProvider, is_async: bool) -> None:
    fake_provider.queue_openai_text("Elsewhere.")
    target = fake_provider.base_url + "/v1/chat/completions"
    with Interceptor(lambda _: Forward(lambda _: None, target=target), refuse, routes=ROUTES):
        status, _, _ = send(chat("http://127.0.0.1:9"), is_async)
    assert status == 200 and len(fake_provider.requests) == 1


def test_a_forward_that_cannot_connect_tells_the_handler(is_async: bool) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        root = f"http://127.0.0.1:{unused.getsockname()[1]}"
    failures: list[BaseException] = []
    forward = Forward(lambda _: None, failures.append)
    with Interceptor(lambda _: forward, refuse, routes=ROUTES), pytest.raises(transports.TransportError):
        send(chat(root), is_async)
    assert len(failures) == 1 and isinstance(failures[0], transports.TransportError)


def test_other_requests_go_to_the_other_handler(fake_provider: FakeProvider, is_async: bool) -> None:
    seen: list[OtherRequest] = []

    def on_other(request: OtherRequest) -> Reply:
        seen.append(request)
        return Reply(404, b"no")

    request = transports.TransportRequest("GET", fake_provider.base_url + "/v1/models")
    with Interceptor(refuse, on_other, routes=ROUTES):
        assert send(request, is_async)[0::2] == (404, b"no")
    assert [(other.method, other.url) for other in seen] == [("GET", request.url)]


def test_without_an_interceptor_the_transports_send_as_they_are(
    fake_provider: FakeProvider, is_async: bool
) -> None:
    with Interceptor(refuse, refuse, routes=ROUTES):
        pass  # the transports are wrapped once; the wrapping stays, and asks nobody
    fake_provider.queue_openai_text("Direct.")
    status, _, body = send(chat(fake_provider.base_url), is_async)
    assert status == 200 and b"Direct." in body
    assert len(fake_provider.requests) == 1
