"""The transport wrapped around a client's real one: the interceptor decides, the real transport sends
what passes.

The innermost interceptor decides on the client's own request, without respx: its ``decide`` is
asked directly, and a :class:`Reply` becomes the client's own response type. Only when the innermost
router on the mocker is not an interceptor's does respx route a copy of the request (below).

How a :class:`Forward` reaches the transport through respx: the route's side effect stores the
``Forward`` in the respx request's ``extensions`` under a private key and returns the request, which
is respx's own pass-through signal. The wrapper transport catches respx's ``PassThrough`` (it carries
that respx request), takes the ``Forward`` back out and sends the *original* request through the real
transport. The respx request is a copy made per call, so the marker never leaks into what goes on the
wire and concurrent calls cannot see each other's callbacks. See docs/engine.md#model-calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import ModuleType
from typing import Any

import httpx
from respx.models import PassThrough

from .decoding import decode_body
from .handler import Decide, Forward, Reply, UpstreamResponse, header_list
from .tee import tap, tee_types

__all__ = [
    "InterceptTransport",
    "forward_of",
    "is_async",
    "mark_forward",
    "reply_headers",
    "routed",
    "routed_already",
    "routing_request",
]

_FORWARD_KEY = "pytest_blackbox.forward"
_IS_ASYNC_KEY = "pytest_blackbox.is_async"

#: respx's registry as the transport calls it: route a request, or say ``None`` (not mocked).
SyncRoute = Callable[[httpx.Request], "httpx.Response | None"]
AsyncRoute = Callable[[httpx.Request], "Awaitable[httpx.Response | None]"]
#: The innermost interceptor's ``decide`` (``None``: respx routes the request).
Innermost = Callable[[], "Decide | None"]

#: Set while the interceptor sends a request it has decided on through a client's real transport.
_ROUTED: ContextVar[bool] = ContextVar("blackbox_routed", default=False)


class _Routed:
    """A client's real transport, beneath the interceptor: what it sends was decided on already.

    An aiohttp-based transport (the SDKs' ``DefaultAioHttpClient``) sends through an
    ``aiohttp.ClientSession``, which the aiohttp adapter would otherwise decide on a second time.
    """

    def __init__(self, real: Any) -> None:
        self._real = real

    def handle_request(self, request: Any) -> Any:
        return self._real.handle_request(request)

    async def handle_async_request(self, request: Any) -> Any:
        with routed():
            return await self._real.handle_async_request(request)


@contextmanager
def routed() -> Iterator[None]:
    """While the interceptor sends a request it has decided on: the aiohttp adapter lets it pass."""
    token = _ROUTED.set(True)
    try:
        yield
    finally:
        _ROUTED.reset(token)


def routed_already() -> bool:
    """Whether the request being sent now was decided on by the interceptor already."""
    return _ROUTED.get()


class InterceptTransport:
    """Wraps a client's real transport: respx decides, the real transport sends what passes through.

    ``lib`` is the client's HTTP library (httpx or httpx2); the two share one API but no types, so the
    library-specific request, response and transport objects are typed ``Any`` here.
    """

    def __init__(
        self, real: Any, lib: ModuleType, innermost: Innermost, route: SyncRoute, aroute: AsyncRoute
    ) -> None:
        self._real = _Routed(real)
        self._lib = lib
        self._innermost = innermost
        self._route = route
        self._aroute = aroute

    def handle_request(self, request: Any) -> Any:
        body = request.read()
        decide = self._innermost()
        try:
            if decide is not None:
                decision = decide(request.method, request.url, request.headers, body, False)
            else:
                answer = self._route(_respx_request(request, body, is_async=False))
                if answer is None:
                    return self._real.handle_request(request)
                return self._from_respx(answer, _raw_sync(answer.stream))
        except PassThrough as signal:
            decision = forward_of(signal)
        except httpx.RequestError as error:
            native = self._native_error(error, request)
            if native is None:
                raise
            raise native from error
        if isinstance(decision, Reply):
            return self._reply(decision)
        return self._forward(request, decision)

    async def handle_async_request(self, request: Any) -> Any:
        body = await request.aread()
        decide = self._innermost()
        try:
            if decide is not None:
                decision = decide(request.method, request.url, request.headers, body, True)
            else:
                answer = await self._aroute(_respx_request(request, body, is_async=True))
                if answer is None:
                    return await self._real.handle_async_request(request)
                return self._from_respx(answer, await _raw_async(answer.stream))
        except PassThrough as signal:
            decision = forward_of(signal)
        except httpx.RequestError as error:
            native = self._native_error(error, request)
            if native is None:
                raise
            raise native from error
        if isinstance(decision, Reply):
            return self._reply(decision)
        return await self._aforward(request, decision)

    def _retargeted(self, request: Any, forward: Forward | None) -> Any:
        """The request as it is sent: to the forward's target URL, if it names one."""
        if forward is None or forward.target is None:
            return request
        request.url = self._lib.URL(forward.target)
        request.headers["Host"] = request.url.netloc.decode("ascii")
        return request

    def _forward(self, request: Any, forward: Forward | None) -> Any:
        request = self._retargeted(request, forward)
        if forward is None or forward.on_response is None:
            return self._real.handle_request(request)
        try:
            response = self._real.handle_request(request)
            if _is_event_stream(response):
                sync_tee, _ = tee_types(self._lib)
                return self._with_stream(response, sync_tee(response.stream, tap(response, forward)))
            try:
                raw = b"".join(response.stream)
            finally:
                response.close()
        except BaseException as error:
            forward.failed(error)
            raise
        return self._deliver(response, raw, forward.on_response)

    async def _aforward(self, request: Any, forward: Forward | None) -> Any:
        request = self._retargeted(request, forward)
        if forward is None or forward.on_response is None:
            return await self._real.handle_async_request(request)
        try:
            response = await self._real.handle_async_request(request)
            if _is_event_stream(response):
                _, async_tee = tee_types(self._lib)
                return self._with_stream(response, async_tee(response.stream, tap(response, forward)))
            try:
                raw = b"".join([chunk async for chunk in response.stream])
            finally:
                await response.aclose()
        except BaseException as error:
            forward.failed(error)
            raise
        return self._deliver(response, raw, forward.on_response)

    def _with_stream(self, response: Any, stream: Any) -> Any:
        return self._lib.Response(
            response.status_code,
            headers=response.headers.raw,
            stream=stream,
            extensions=dict(response.extensions),
        )

    def _deliver(self, response: Any, raw: bytes, on_response: Callable[[UpstreamResponse], None]) -> Any:
        """Show the decoded answer to ``on_response``, then give the client the untouched raw bytes."""
        headers = header_list(response.headers)
        on_response(UpstreamResponse(response.status_code, headers, decode_body(raw, headers)))
        return self._lib.Response(
            response.status_code,
            headers=response.headers.raw,
            stream=self._lib.ByteStream(raw),
            extensions=dict(response.extensions),
        )

    def _from_respx(self, answer: httpx.Response, raw: bytes) -> Any:
        return self._lib.Response(
            answer.status_code,
            headers=answer.headers.raw,
            stream=self._lib.ByteStream(raw),
            extensions=dict(answer.extensions),
        )

    def _reply(self, reply: Reply) -> Any:
        """The client's own response for a :class:`Reply` (its headers: ``reply_headers``)."""
        return self._lib.Response(
            reply.status, headers=reply_headers(reply), stream=self._lib.ByteStream(reply.body)
        )

    def _native_error(self, error: httpx.RequestError, request: Any) -> BaseException | None:
        """The same-named exception of an httpx2 client's library, so the SDK classifies it as a real
        failure (``ReadTimeout`` → ``APITimeoutError``); None when the error is already native."""
        if self._lib is httpx:
            return None
        native = getattr(self._lib, type(error).__name__, None)
        if isinstance(native, type) and issubclass(native, self._lib.RequestError):
            return native(str(error), request=request)  # type: ignore[no-any-return]
        return None


#: Streamed answers, teed as they pass: SSE, and the AWS event stream Amazon Bedrock streams in.
_STREAM_TYPES = ("text/event-stream", "application/vnd.amazon.eventstream")


def _is_event_stream(response: Any) -> bool:
    content_type: str = response.headers.get("content-type", "")
    return content_type.strip().lower().startswith(_STREAM_TYPES)


def _raw_sync(stream: httpx.SyncByteStream | httpx.AsyncByteStream) -> bytes:
    """The still-encoded bytes: respx has pre-read the response, which only decoded its copy."""
    if not isinstance(stream, httpx.SyncByteStream):
        raise TypeError("a respx route answered a sync client with an async-only response stream")
    return b"".join(stream)


async def _raw_async(stream: httpx.SyncByteStream | httpx.AsyncByteStream) -> bytes:
    if not isinstance(stream, httpx.AsyncByteStream):
        raise TypeError("a respx route answered an async client with a sync-only response stream")
    return b"".join([chunk async for chunk in stream])


def reply_headers(reply: Reply) -> list[tuple[str, str]]:
    """A :class:`Reply`'s headers with the ``Content-Length`` that httpx adds to a response built from
    bytes (as the response respx would have built), whichever client library receives it."""
    headers = reply.headers
    if reply.body and not any(name.lower() == "content-length" for name, _ in headers):
        headers = [*headers, ("Content-Length", str(len(reply.body)))]
    return headers


def _respx_request(request: Any, body: bytes, *, is_async: bool) -> httpx.Request:
    """A fresh httpx request for the respx router; our markers go into its private copy of extensions.

    The client has prepared its request already (``Host``, ``Content-Length``), so the copy takes its
    headers as they are and the body as a stream, which spares httpx preparing them a second time.
    """
    return routing_request(
        request.method, str(request.url), request.headers.raw, body, request.extensions, is_async=is_async
    )


def routing_request(
    method: str,
    url: str,
    raw_headers: list[tuple[bytes, bytes]],
    body: bytes,
    extensions: dict[str, Any],
    *,
    is_async: bool,
) -> httpx.Request:
    """The httpx request the respx routers read, whatever client sent it; the body already read."""
    copy = httpx.Request(
        method,
        url,
        headers=raw_headers,
        stream=httpx.ByteStream(body),
        extensions={**extensions, _IS_ASYNC_KEY: is_async},
    )
    copy.read()
    return copy


def mark_forward(request: httpx.Request, forward: Forward) -> httpx.Request:
    """The pass-through signal a route's side effect returns, carrying the handler's ``Forward``."""
    request.extensions[_FORWARD_KEY] = forward
    return request


def forward_of(signal: PassThrough) -> Forward | None:
    forward = signal.request.extensions.get(_FORWARD_KEY)
    return forward if isinstance(forward, Forward) else None


def is_async(request: httpx.Request) -> bool:
    """Whether the client that sent this (respx) request is an async one."""
    return bool(request.extensions.get(_IS_ASYNC_KEY, False))
