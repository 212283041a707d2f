"""Requests of an ``aiohttp.ClientSession``: the same routes and handlers as httpx, over 127.0.0.1 only."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
import respx

from pytest_blackbox.interception import (
    Forward,
    Interceptor,
    InterceptorMocker,
    ModelRequest,
    OtherRequest,
    Reply,
    UpstreamResponse,
)
from pytest_blackbox.providers import ROUTES, SSE_HEADERS
from pytest_blackbox.testing.fake_provider import FakeProvider, ScriptedResponse

CHAT_PATH = "/v1/chat/completions"
GEMINI_STREAM_PATH = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
EVENTS = b'data: {"n":1}\n\ndata: {"n":2}\n\n'


async def post(url: str, body: Any, **options: Any) -> tuple[int, str, str]:
    """Status, content type and body text, read the way google-genai reads a JSON answer."""
    async with aiohttp.ClientSession() as session, session.post(url, json=body, **options) as response:
        return response.status, response.headers["content-type"], await response.text()


async def stream_lines(url: str) -> list[bytes]:
    """The lines of an event stream, read as they come (google-genai's ``content.iter_any``)."""
    body, query = b'{"contents":[]}', {"alt": "sse"}
    async with aiohttp.ClientSession() as session, session.post(url, params=query, data=body) as answer:
        return [chunk async for chunk in answer.content.iter_any()]


def never(_: object) -> Reply:
    raise AssertionError("this request does not reach the handler")


async def test_a_reply_answers_a_model_call_without_a_socket(fake_provider: FakeProvider) -> None:
    seen: list[ModelRequest] = []

    def on_model(request: ModelRequest) -> Reply:
        seen.append(request)
        return Reply(200, b'{"answer":"canned"}')

    with Interceptor(on_model, routes=ROUTES):
        url = fake_provider.base_url + CHAT_PATH
        answer = await post(url, {"model": "gpt-test"}, headers={"X-Trace": "a"})

    assert answer == (200, "application/json", '{"answer":"canned"}')
    [request] = seen
    assert (request.route, request.method, request.url, request.is_async) == (
        "openai_chat",
        "POST",
        fake_provider.base_url + CHAT_PATH,
        True,
    )
    assert json.loads(request.body) == {"model": "gpt-test"}
    assert ("x-trace", "a") in request.headers
    assert ("content-type", "application/json") in request.headers
    assert fake_provider.requests == []


async def test_a_replied_event_stream_reads_as_one_from_the_wire(fake_provider: FakeProvider) -> None:
    with Interceptor(lambda request: Reply(200, EVENTS, list(SSE_HEADERS)), routes=ROUTES):
        chunks = await stream_lines(fake_provider.base_url + GEMINI_STREAM_PATH)
    assert b"".join(chunks) == EVENTS
    assert fake_provider.requests == []


async def test_an_error_reply_raises_when_the_session_asks_aiohttp_to(fake_provider: FakeProvider) -> None:
    with Interceptor(lambda request: Reply(429, b'{"error":"slow down"}'), routes=ROUTES):
        assert await post(fake_provider.base_url + CHAT_PATH, {}) == (
            429,
            "application/json",
            '{"error":"slow down"}',
        )
        with pytest.raises(aiohttp.ClientResponseError) as caught:
            await post(fake_provider.base_url + CHAT_PATH, {}, raise_for_status=True)
    assert caught.value.status == 429


@pytest.mark.parametrize("gzip", [False, True], ids=["plain", "gzip"])
async def test_forward_reaches_upstream_and_shows_the_decoded_answer(
    gzip: bool, fake_provider: FakeProvider
) -> None:
    upstream: list[UpstreamResponse] = []
    fake_provider.queue_openai_text("from upstream", gzip=gzip)
    with Interceptor(lambda request: Forward(upstream.append), routes=ROUTES):
        status, _, text = await post(fake_provider.base_url + CHAT_PATH, {"model": "gpt-test"})
    [answer] = upstream
    assert status == answer.status == 200
    assert json.loads(text)["choices"][0]["message"]["content"] == "from upstream"
    assert json.loads(answer.body) == json.loads(text)
    assert (("content-encoding", "gzip") in answer.headers) is gzip
    assert [(r.method, r.path) for r in fake_provider.requests] == [("POST", CHAT_PATH)]


async def test_forward_of_an_event_stream_hands_over_all_of_it(fake_provider: FakeProvider) -> None:
    upstream: list[UpstreamResponse] = []
    fake_provider.queue(ScriptedResponse(200, chunks=[b'data: {"n":1}\n\n', b'data: {"n":2}\n\n']))
    with Interceptor(lambda request: Forward(upstream.append), routes=ROUTES):
        chunks = await stream_lines(fake_provider.base_url + GEMINI_STREAM_PATH)
    assert b"".join(chunks) == upstream[0].body == EVENTS
    assert upstream[0].complete
    assert fake_provider.requests[0].path == GEMINI_STREAM_PATH


async def test_a_failed_forward_tells_the_handler(fake_provider: FakeProvider) -> None:
    failures: list[BaseException] = []
    url = fake_provider.base_url + CHAT_PATH
    fake_provider.stop()
    with (
        Interceptor(lambda request: Forward(lambda answer: None, failures.append), routes=ROUTES),
        pytest.raises(aiohttp.ClientConnectionError),
    ):
        await post(url, {})
    [failure] = failures
    assert isinstance(failure, aiohttp.ClientConnectionError)


async def test_other_traffic_goes_to_on_other_and_the_patch_ends_with_the_last_interceptor(
    fake_provider: FakeProvider,
) -> None:
    others: list[OtherRequest] = []

    def on_other(request: OtherRequest) -> Forward:
        others.append(request)
        return Forward()

    models = fake_provider.base_url + "/v1beta/models"
    fake_provider.queue(
        ScriptedResponse(200, {"models": []}),
        ScriptedResponse(200, {"models": ["m"]}),
        ScriptedResponse(200, {"answer": "upstream"}),
    )
    with Interceptor(never, on_other, routes=ROUTES):
        with Interceptor(never, routes=ROUTES):
            assert (await post(models, {}))[2] == '{"models":[]}'
        assert others == []
        assert (await post(models, {}))[2] == '{"models":["m"]}'
        with pytest.raises(AssertionError, match="does not reach the handler"):
            await post(fake_provider.base_url + CHAT_PATH, {})
    assert [(request.method, request.url, request.is_async) for request in others] == [("POST", models, True)]
    assert (await post(fake_provider.base_url + CHAT_PATH, {}))[2] == '{"answer":"upstream"}'
    assert [request.path for request in fake_provider.requests] == [
        "/v1beta/models",
        "/v1beta/models",
        CHAT_PATH,
    ]


async def answer_of(url: str) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, header pairs in order and body of an aiohttp ``POST``."""
    async with aiohttp.ClientSession() as session, session.post(url, json={}) as response:
        return response.status, list(response.headers.items()), await response.read()


@pytest.mark.parametrize("body", [b"", b'{"answer": 1}'], ids=["empty", "json"])
async def test_a_router_registered_after_the_interceptor_leaves_it_the_same_answers(
    body: bytes, fake_provider: FakeProvider
) -> None:
    """The interceptor decides directly while it is the innermost router; once a router of the user's is
    registered after it, aiohttp requests are routed through respx like httpx ones: the same answer for
    a model call, the user's mock for its route, and a forwarded call still shown to the handler."""
    url = fake_provider.base_url + CHAT_PATH
    reply = Reply(201, body, [("content-type", "application/json"), ("x-kept", "yes")])
    seen: list[UpstreamResponse] = []
    decisions: list[Reply | Forward] = [reply, reply, Forward(seen.append)]
    fake_provider.queue(ScriptedResponse(200, {"answer": "upstream"}))
    with Interceptor(lambda request: decisions.pop(0), routes=ROUTES):
        direct = await answer_of(url)
        with respx.mock(using=InterceptorMocker.name, assert_all_called=True) as user:
            user.get("https://example.test/x").respond(200, json={"from": "user mock"})
            routed = await answer_of(url)
            async with aiohttp.ClientSession() as session, session.get("https://example.test/x") as mocked:
                assert await mocked.json() == {"from": "user mock"}
            forwarded = await answer_of(url)

    assert routed == direct
    assert direct[0] == 201
    assert direct[2] == body
    assert ("x-kept", "yes") in direct[1]
    assert forwarded[2] == b'{"answer":"upstream"}'
    assert [(answer.status, json.loads(answer.body)) for answer in seen] == [(200, {"answer": "upstream"})]
    assert [request.path for request in fake_provider.requests] == [CHAT_PATH]
