"""The Interceptor against the real SDKs, over real sockets on 127.0.0.1 only."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
import respx

from pytest_blackbox.errors import BlackboxUsageError
from pytest_blackbox.interception import (
    Forward,
    Interceptor,
    InterceptorMocker,
    ModelRequest,
    OtherRequest,
    Reply,
    UpstreamResponse,
)
from pytest_blackbox.providers import ROUTES
from pytest_blackbox.testing.fake_provider import FakeProvider, ScriptedResponse

ANTHROPIC_BODY = {
    "id": "msg_canned",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "canned answer"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 0, "output_tokens": 0},
}
CHAT_BODY = {
    "id": "chatcmpl-canned",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-test",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "canned answer", "refusal": None},
            "finish_reason": "stop",
            "logprobs": None,
        }
    ],
}


def responses_body(text: str, response_id: str) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": 0,
        "model": "gpt-test",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_out",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


CANNED: dict[str, dict[str, Any]] = {
    "anthropic": ANTHROPIC_BODY,
    "openai_chat": CHAT_BODY,
    "openai_responses": responses_body("canned answer", "resp_canned"),
}
USER_MESSAGES: Any = [{"role": "user", "content": "ping"}]
EXPECTED_BODY = {
    "anthropic": {"max_tokens": 16, "messages": USER_MESSAGES, "model": "claude-test"},
    "openai_chat": {"messages": USER_MESSAGES, "model": "gpt-test"},
    "openai_responses": {"input": "ping", "model": "gpt-test"},
}
EXPECTED_PATH = {
    "anthropic": "/v1/messages",
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
}

Call = Callable[[str], Awaitable[tuple[str, str]]]
"""call(base_url) -> (answer text, response id) as the SDK parsed them."""


async def anthropic_sync(base_url: str) -> tuple[str, str]:
    with anthropic.Anthropic(api_key="sk-ant-test", base_url=base_url, max_retries=0) as client:
        message = client.messages.create(model="claude-test", max_tokens=16, messages=USER_MESSAGES)
    return message.content[0].text, message.id  # type: ignore[union-attr]


async def anthropic_async(base_url: str, http_client: httpx2.AsyncClient | None = None) -> tuple[str, str]:
    async with anthropic.AsyncAnthropic(
        api_key="sk-ant-test", base_url=base_url, max_retries=0, http_client=http_client
    ) as client:
        message = await client.messages.create(model="claude-test", max_tokens=16, messages=USER_MESSAGES)
    return message.content[0].text, message.id  # type: ignore[union-attr]


async def anthropic_aiohttp(base_url: str) -> tuple[str, str]:
    return await anthropic_async(base_url, anthropic.DefaultAioHttpClient())


def openai_sync_client(base_url: str, http_client: Any = None) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=base_url + "/v1", max_retries=0, http_client=http_client)


def openai_async_client(base_url: str, http_client: Any = None) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key="sk-test", base_url=base_url + "/v1", max_retries=0, http_client=http_client
    )


async def chat_sync(base_url: str, http_client: Any = None) -> tuple[str, str]:
    with openai_sync_client(base_url, http_client) as client:
        completion = client.chat.completions.create(model="gpt-test", messages=USER_MESSAGES)
    return completion.choices[0].message.content or "", completion.id


async def chat_async(base_url: str, http_client: Any = None) -> tuple[str, str]:
    async with openai_async_client(base_url, http_client) as client:
        completion = await client.chat.completions.create(model="gpt-test", messages=USER_MESSAGES)
    return completion.choices[0].message.content or "", completion.id


async def responses_sync(base_url: str) -> tuple[str, str]:
    with openai_sync_client(base_url) as client:
        response = client.responses.create(model="gpt-test", input="ping")
    return response.output_text, response.id


async def responses_async(base_url: str) -> tuple[str, str]:
    async with openai_async_client(base_url) as client:
        response = await client.responses.create(model="gpt-test", input="ping")
    return response.output_text, response.id


@dataclass(frozen=True)
class Variant:
    route: str
    is_async: bool
    call: Call


VARIANTS = {
    "anthropic-sync": Variant("anthropic", False, anthropic_sync),
    "anthropic-async": Variant("anthropic", True, anthropic_async),
    "anthropic-aiohttp": Variant("anthropic", True, anthropic_aiohttp),
    "chat-sync": Variant("openai_chat", False, chat_sync),
    "chat-async": Variant("openai_chat", True, chat_async),
    "chat-aiohttp": Variant("openai_chat", True, lambda url: chat_async(url, openai.DefaultAioHttpClient())),
    "chat-legacy-httpx-sync": Variant("openai_chat", False, lambda url: chat_sync(url, httpx.Client())),
    "chat-legacy-httpx-async": Variant("openai_chat", True, lambda url: chat_async(url, httpx.AsyncClient())),
    "responses-sync": Variant("openai_responses", False, responses_sync),
    "responses-async": Variant("openai_responses", True, responses_async),
}
variants = pytest.mark.parametrize("variant", list(VARIANTS.values()), ids=list(VARIANTS))


def canned_reply(request: ModelRequest) -> Reply:
    return Reply(200, json.dumps(CANNED[request.route]).encode())


def script(fake: FakeProvider, route: str, *, gzip: bool) -> None:
    if route == "anthropic":
        fake.queue_anthropic_text("from upstream", gzip=gzip)
    elif route == "openai_chat":
        fake.queue_openai_text("from upstream", gzip=gzip)
    else:
        fake.queue(ScriptedResponse(200, responses_body("from upstream", "resp_upstream"), gzip=gzip))


@variants
async def test_reply_answers_every_client_without_a_socket(
    variant: Variant, fake_provider: FakeProvider
) -> None:
    seen: list[ModelRequest] = []

    def on_model(request: ModelRequest) -> Reply:
        seen.append(request)
        return canned_reply(request)

    with Interceptor(on_model, routes=ROUTES):
        text, response_id = await variant.call(fake_provider.base_url)

    assert (text, response_id) == ("canned answer", CANNED[variant.route]["id"])
    assert [(r.route, r.method, r.url, r.is_async) for r in seen] == [
        (variant.route, "POST", fake_provider.base_url + EXPECTED_PATH[variant.route], variant.is_async)
    ]
    assert json.loads(seen[0].body) == EXPECTED_BODY[variant.route]
    assert ("content-type", "application/json") in seen[0].headers
    assert all(name == name.lower() for name, _ in seen[0].headers)
    assert fake_provider.requests == []


@variants
@pytest.mark.parametrize("gzip", [False, True], ids=["plain", "gzip"])
async def test_forward_reaches_upstream_and_shows_the_decoded_answer(
    variant: Variant, gzip: bool, fake_provider: FakeProvider
) -> None:
    upstream: list[UpstreamResponse] = []
    script(fake_provider, variant.route, gzip=gzip)

    with Interceptor(lambda request: Forward(upstream.append), routes=ROUTES):
        text, response_id = await variant.call(fake_provider.base_url)

    assert text == "from upstream"
    [answer] = upstream
    assert answer.status == 200
    assert ("content-type", "application/json") in answer.headers
    assert (("content-encoding", "gzip") in answer.headers) is gzip
    assert json.loads(answer.body)["id"] == response_id
    assert [(r.method, r.path) for r in fake_provider.requests] == [("POST", EXPECTED_PATH[variant.route])]
    assert json.loads(fake_provider.requests[0].body) == EXPECTED_BODY[variant.route]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
async def test_forward_without_callback_passes_the_response_through(
    is_async: bool, fake_provider: FakeProvider
) -> None:
    fake_provider.queue_openai_text("untouched", gzip=True)
    call = chat_async if is_async else chat_sync
    with Interceptor(lambda request: Forward(), routes=ROUTES):
        text, _ = await call(fake_provider.base_url)
    assert text == "untouched"
    assert len(fake_provider.requests) == 1


async def test_forward_of_a_stream_hands_over_the_whole_event_stream(fake_provider: FakeProvider) -> None:
    upstream: list[UpstreamResponse] = []
    fake_provider.queue_anthropic_text("Hello")
    with Interceptor(lambda request: Forward(upstream.append), routes=ROUTES):
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=fake_provider.base_url, max_retries=0)
        with client.messages.stream(model="claude-test", max_tokens=16, messages=USER_MESSAGES) as stream:
            pieces = list(stream.text_stream)
            final = stream.get_final_message()
    assert (pieces, final.stop_reason) == (["He", "llo"], "end_turn")
    assert ("content-type", "text/event-stream") in upstream[0].headers
    assert upstream[0].body.startswith(b"event: message_start\ndata: ")
    assert upstream[0].body.endswith(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')


def test_concurrent_forwards_each_get_their_own_answer(fake_provider: FakeProvider) -> None:
    from concurrent.futures import ThreadPoolExecutor

    for index in range(6):
        fake_provider.queue_openai_text(f"answer {index}")
    delivered: dict[str, str] = {}

    def on_model(request: ModelRequest) -> Forward:
        marker = json.loads(request.body)["messages"][0]["content"]

        def on_response(response: UpstreamResponse) -> None:
            delivered[marker] = json.loads(response.body)["id"]

        return Forward(on_response)

    def ask(marker: str) -> tuple[str, str]:
        with openai_sync_client(fake_provider.base_url) as client:
            completion = client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": marker}]
            )
        return marker, completion.id

    with Interceptor(on_model, routes=ROUTES), ThreadPoolExecutor(max_workers=6) as pool:
        results = dict(pool.map(ask, [f"question {index}" for index in range(6)]))

    assert delivered == results
    assert len(set(results.values())) == 6


@pytest.mark.parametrize(
    ("base_url", "route", "url"),
    [
        ("http://localhost:{port}/proxy", "anthropic", "http://localhost:{port}/proxy/v1/messages"),
        ("http://gateway.invalid/a/b", "anthropic", "http://gateway.invalid/a/b/v1/messages"),
        (
            "http://127.0.0.1:{port}/openai/deployments/gpt",
            "openai_chat",
            "http://127.0.0.1:{port}/openai/deployments/gpt/chat/completions",
        ),
    ],
    ids=["path-prefix", "other-host", "azure-style"],
)
async def test_routes_match_by_path_suffix_on_any_host(
    base_url: str, route: str, url: str, fake_provider: FakeProvider
) -> None:
    port = fake_provider.base_url.rsplit(":", 1)[1]
    seen: list[ModelRequest] = []

    def on_model(request: ModelRequest) -> Reply:
        seen.append(request)
        return canned_reply(request)

    with Interceptor(on_model, routes=ROUTES):
        if route == "anthropic":
            with anthropic.Anthropic(
                api_key="k", base_url=base_url.format(port=port), max_retries=0
            ) as client:
                client.messages.create(model="claude-test", max_tokens=16, messages=USER_MESSAGES)
        else:
            with openai.OpenAI(api_key="k", base_url=base_url.format(port=port), max_retries=0) as oclient:
                oclient.chat.completions.create(model="gpt-test", messages=USER_MESSAGES)

    assert [(r.route, r.url) for r in seen] == [(route, url.format(port=port))]
    assert fake_provider.requests == []


def test_near_miss_paths_and_methods_are_not_model_calls(fake_provider: FakeProvider) -> None:
    others: list[OtherRequest] = []

    def on_other(request: OtherRequest) -> Reply:
        others.append(request)
        return Reply(200, b'{"input_tokens":3}')

    def on_model(request: ModelRequest) -> Reply:
        raise AssertionError("not a model call")

    with Interceptor(on_model, on_other, routes=ROUTES), httpx2.Client() as client:
        counted = client.post(fake_provider.base_url + "/v1/messages/count_tokens", json={"model": "m"})
        listed = client.get(fake_provider.base_url + "/v1/chat/completions")

    assert counted.json() == {"input_tokens": 3}
    assert listed.status_code == 200
    assert [(r.method, r.url, r.body, r.is_async) for r in others] == [
        ("POST", fake_provider.base_url + "/v1/messages/count_tokens", b'{"model":"m"}', False),
        ("GET", fake_provider.base_url + "/v1/chat/completions", b"", False),
    ]
    assert fake_provider.requests == []


PLAIN_CLIENTS = {
    "httpx2-sync": (httpx2.Client, False),
    "httpx2-async": (httpx2.AsyncClient, True),
    "httpx-sync": (httpx.Client, False),
    "httpx-async": (httpx.AsyncClient, True),
}
plain_clients = pytest.mark.parametrize(
    "client_class,is_async", PLAIN_CLIENTS.values(), ids=list(PLAIN_CLIENTS)
)


async def get(client_class: Any, is_async: bool, url: str) -> Any:
    if is_async:
        async with client_class() as client:
            return await client.get(url)
    with client_class() as client:
        return client.get(url)


@plain_clients
async def test_other_traffic_passes_through_by_default(
    client_class: Any, is_async: bool, fake_provider: FakeProvider
) -> None:
    fake_provider.queue(ScriptedResponse(200, {"status": "ok"}))
    with Interceptor(canned_reply, routes=ROUTES):
        response = await get(client_class, is_async, fake_provider.base_url + "/status")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})
    assert [(r.method, r.path) for r in fake_provider.requests] == [("GET", "/status")]


@plain_clients
async def test_on_other_refusal_reaches_the_caller(
    client_class: Any, is_async: bool, fake_provider: FakeProvider
) -> None:
    def refuse(request: OtherRequest) -> Reply:
        raise BlackboxUsageError(f"offline replay: refused {request.method} {request.url}")

    with Interceptor(canned_reply, refuse, routes=ROUTES), pytest.raises(BlackboxUsageError) as refused:
        await get(client_class, is_async, fake_provider.base_url + "/status")
    assert str(refused.value) == f"offline replay: refused GET {fake_provider.base_url}/status"
    assert fake_provider.requests == []


@plain_clients
async def test_httpx_errors_become_the_clients_own_exception_class(
    client_class: Any, is_async: bool, fake_provider: FakeProvider
) -> None:
    def fail(request: OtherRequest) -> Reply:
        raise httpx.ConnectTimeout("simulated timeout")

    library = httpx if client_class in (httpx.Client, httpx.AsyncClient) else httpx2
    with (
        Interceptor(canned_reply, fail, routes=ROUTES),
        pytest.raises(library.ConnectTimeout, match=r"^simulated timeout$"),
    ):
        await get(client_class, is_async, fake_provider.base_url + "/status")


async def test_a_forward_to_an_other_request_reaches_upstream(fake_provider: FakeProvider) -> None:
    fake_provider.queue(ScriptedResponse(201, {"made": True}, gzip=True))
    upstream: list[UpstreamResponse] = []
    with Interceptor(canned_reply, lambda request: Forward(upstream.append), routes=ROUTES):
        response = httpx2.post(
            fake_provider.base_url + "/things", json={}, headers={"accept-encoding": "gzip"}
        )
    assert (response.status_code, response.json()) == (201, {"made": True})
    assert (upstream[0].status, json.loads(upstream[0].body)) == (201, {"made": True})


def test_a_handler_returning_anything_else_is_a_type_error(fake_provider: FakeProvider) -> None:
    with Interceptor(lambda request: None, routes=ROUTES), pytest.raises(TypeError) as wrong:  # type: ignore[arg-type,return-value]
        httpx2.post(fake_provider.base_url + "/v1/messages", json={})
    assert str(wrong.value) == "an interception handler must return Reply or Forward, not NoneType"


class Abort(BaseException):
    """Like pytest.fail: not an Exception, so the SDKs neither wrap nor retry it."""


def test_a_base_exception_from_the_handler_surfaces_unretried(fake_provider: FakeProvider) -> None:
    calls: list[ModelRequest] = []

    def on_model(request: ModelRequest) -> Reply:
        calls.append(request)
        raise Abort("cassette miss")

    client = anthropic.Anthropic(api_key="k", base_url=fake_provider.base_url)  # default max_retries=2
    with Interceptor(on_model, routes=ROUTES), pytest.raises(Abort, match=r"^cassette miss$"):
        client.messages.create(model="claude-test", max_tokens=16, messages=USER_MESSAGES)
    assert len(calls) == 1


def test_reply_status_and_headers_reach_the_sdk(fake_provider: FakeProvider) -> None:
    body = b'{"type":"error","error":{"type":"invalid_request_error","message":"no such step"}}'
    reply = Reply(400, body, [("content-type", "application/json"), ("x-should-retry", "false")])
    calls: list[ModelRequest] = []

    def on_model(request: ModelRequest) -> Reply:
        calls.append(request)
        return reply

    client = anthropic.Anthropic(api_key="k", base_url=fake_provider.base_url)
    with Interceptor(on_model, routes=ROUTES), pytest.raises(anthropic.BadRequestError) as error:
        client.messages.create(model="claude-test", max_tokens=16, messages=USER_MESSAGES)
    assert error.value.status_code == 400
    assert error.value.response.headers["x-should-retry"] == "false"
    assert error.value.body == json.loads(body)
    assert len(calls) == 1


ORIGINALS = {
    "httpx2.Client": httpx2.Client._transport_for_url,
    "httpx2.AsyncClient": httpx2.AsyncClient._transport_for_url,
    "httpx.Client": httpx.Client._transport_for_url,
    "httpx.AsyncClient": httpx.AsyncClient._transport_for_url,
}


def current_transport_methods() -> dict[str, object]:
    return {
        "httpx2.Client": httpx2.Client._transport_for_url,
        "httpx2.AsyncClient": httpx2.AsyncClient._transport_for_url,
        "httpx.Client": httpx.Client._transport_for_url,
        "httpx.AsyncClient": httpx.AsyncClient._transport_for_url,
    }


@pytest.mark.parametrize("using", ["httpcore", "httpx"])
@pytest.mark.parametrize("interceptor_first", [True, False], ids=["interceptor-first", "user-first"])
def test_a_users_own_respx_keeps_answering(
    using: str, interceptor_first: bool, fake_provider: FakeProvider
) -> None:
    interceptor = Interceptor(canned_reply, routes=ROUTES)
    user = respx.mock(using=using, assert_all_called=True)
    user.get("https://example.test/x").respond(200, json={"from": "user mock"})
    first, second = (interceptor, user) if interceptor_first else (user, interceptor)

    with first, second:
        answer = httpx.get("https://example.test/x")
        text, _ = anthropic_sync_now(fake_provider.base_url)

    assert answer.json() == {"from": "user mock"}
    assert text == "canned answer"
    assert current_transport_methods() == ORIGINALS
    assert fake_provider.requests == []


@pytest.mark.parametrize("body", [b"", b'{"answer": 1}'], ids=["empty", "json"])
def test_a_router_registered_after_the_interceptor_leaves_it_the_same_answers(
    body: bytes, fake_provider: FakeProvider
) -> None:
    """The interceptor answers directly while it is the innermost router; a router registered after it
    on the same mocker (respx routing, falling back to the interceptor for what it leaves) changes
    nothing the client gets: same status, headers and body, and other traffic still passes through."""
    url = fake_provider.base_url + "/v1/messages"
    reply = Reply(201, body, [("content-type", "application/json"), ("x-kept", "yes")])
    with Interceptor(lambda request: reply, routes=ROUTES):
        direct = httpx2.post(url, json={})
        with respx.mock(using=InterceptorMocker.name, assert_all_called=True) as user:
            user.get("https://example.test/x").respond(200, json={"from": "user mock"})
            routed = httpx2.post(url, json={})
            mocked = httpx.get("https://example.test/x")
            httpx2.get(fake_provider.base_url + "/v1/models")

    assert (routed.status_code, routed.headers.multi_items(), routed.content) == (
        direct.status_code,
        direct.headers.multi_items(),
        direct.content,
    )
    assert direct.status_code == 201
    assert direct.content == body
    assert direct.headers["x-kept"] == "yes"
    assert mocked.json() == {"from": "user mock"}
    assert [request.path for request in fake_provider.requests] == ["/v1/models"]
    assert current_transport_methods() == ORIGINALS


def anthropic_sync_now(base_url: str) -> tuple[str, str]:
    with anthropic.Anthropic(api_key="k", base_url=base_url, max_retries=0) as client:
        message = client.messages.create(model="claude-test", max_tokens=16, messages=USER_MESSAGES)
    return message.content[0].text, message.id  # type: ignore[union-attr]


def test_stop_unpatches_everything(fake_provider: FakeProvider) -> None:
    calls: list[ModelRequest] = []

    def on_model(request: ModelRequest) -> Reply:
        calls.append(request)
        return canned_reply(request)

    interceptor = Interceptor(on_model, routes=ROUTES)
    interceptor.start()
    interceptor.start()
    assert interceptor.active
    assert current_transport_methods() != ORIGINALS
    interceptor.stop()
    interceptor.stop()

    assert not interceptor.active
    assert current_transport_methods() == ORIGINALS
    fake_provider.queue_anthropic_text("direct")
    assert anthropic_sync_now(fake_provider.base_url)[0] == "direct"
    assert calls == []
    assert len(fake_provider.requests) == 1


def test_nested_interceptors_innermost_answers(fake_provider: FakeProvider) -> None:
    def answering(text: str) -> Callable[[ModelRequest], Reply]:
        body = {**ANTHROPIC_BODY, "content": [{"type": "text", "text": text}]}
        return lambda request: Reply(200, json.dumps(body).encode())

    with Interceptor(answering("outer"), routes=ROUTES):
        assert anthropic_sync_now(fake_provider.base_url)[0] == "outer"
        with Interceptor(answering("inner"), routes=ROUTES):
            assert anthropic_sync_now(fake_provider.base_url)[0] == "inner"
        assert anthropic_sync_now(fake_provider.base_url)[0] == "outer"
        assert current_transport_methods() != ORIGINALS
    assert current_transport_methods() == ORIGINALS
    assert fake_provider.requests == []


def test_an_interceptor_can_be_restarted(fake_provider: FakeProvider) -> None:
    interceptor = Interceptor(canned_reply, routes=ROUTES)
    for _ in range(2):
        with interceptor:
            assert anthropic_sync_now(fake_provider.base_url)[0] == "canned answer"
        assert current_transport_methods() == ORIGINALS
    assert fake_provider.requests == []


@pytest.mark.parametrize(
    ("raised", "expected"),
    [(httpx.ReadTimeout, anthropic.APITimeoutError), (httpx.ConnectError, anthropic.APIConnectionError)],
    ids=["read-timeout", "connect-error"],
)
def test_sdks_classify_httpx_errors_as_real_failures(
    raised: type[httpx.RequestError], expected: type[Exception], fake_provider: FakeProvider
) -> None:
    def on_model(request: ModelRequest) -> Reply:
        raise raised("simulated")

    with Interceptor(on_model, routes=ROUTES), pytest.raises(expected) as failure:
        anthropic_sync_now(fake_provider.base_url)
    assert type(failure.value.__cause__) is getattr(httpx2, raised.__name__)
