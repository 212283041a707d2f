"""Route the SDKs' model calls to a handler at the HTTP-client level, with respx as the routing engine.

anthropic >= 1 and openai >= 3 send through httpx2, which respx's own mockers never see, and the SDKs'
aiohttp backend replaces the transport that pool-level mockers patch. Patching
``Client._transport_for_url`` on the httpx2 *and* httpx client classes sees every request of every
client, whatever its transport, base URL or proxy mounts, without touching SDK classes and without
asking the user for an ``http_client``. google-genai's async client can bypass httpx2 for aiohttp;
``aiohttp_guard`` steers it back, or refuses the call.

This module knows nothing about cassettes: it hands each model request to ``on_model`` and either
answers with the handler's :class:`Reply` or forwards the original request upstream (:class:`Forward`).

How a :class:`Forward` reaches the transport: the route's side effect stores the ``Forward`` in the
respx request's ``extensions`` under a private key and returns the request, which is respx's own
pass-through signal. The wrapper transport catches respx's ``PassThrough`` (it carries that respx
request), takes the ``Forward`` back out and sends the *original* request through the real transport.
The respx request is a copy made per call, so the marker never leaks into what goes on the wire and
concurrent calls cannot see each other's callbacks.

If ``on_response`` is set, a JSON answer is read completely before it is called. An event stream
(``text/event-stream``) is not: the client reads it chunk by chunk as the upstream sends it, through a
tee that keeps a copy, and ``on_response`` is called once, when the stream ends or when the client
closes it early (then with ``complete=False``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType, TracebackType
from typing import Any, ClassVar, Literal

import httpx
import respx
from respx.mocks import Mocker
from respx.models import PassThrough

from . import aiohttp_guard

__all__ = [
    "MODEL_ROUTES",
    "Forward",
    "Interceptor",
    "InterceptorMocker",
    "ModelHandler",
    "ModelRequest",
    "ModelRoute",
    "OtherHandler",
    "OtherRequest",
    "Reply",
    "UpstreamResponse",
    "decode_body",
]

ModelRoute = Literal["anthropic", "openai_chat", "openai_responses", "gemini"]

MODEL_ROUTES: dict[ModelRoute, str] = {
    "anthropic": r"/v1/messages$",
    "openai_chat": r"/chat/completions$",
    "openai_responses": r"/responses$",
    "gemini": r"/(?:models|tunedModels)/[^/:]+:(?:generateContent|streamGenerateContent)$",
}
"""Path suffixes, not hosts: base URLs, gateways, proxies and Azure endpoints all end in these paths."""
_MODEL_PATHS = re.compile("|".join(MODEL_ROUTES.values()))

_FORWARD_KEY = "pytest_blackbox.forward"
_IS_ASYNC_KEY = "pytest_blackbox.is_async"
_OTHER_ROUTE_NAME = "pytest_blackbox.other"


@dataclass(frozen=True)
class OtherRequest:
    """A request to anything but a model route, as the client sent it."""

    method: str
    url: str
    headers: list[tuple[str, str]]
    body: bytes
    is_async: bool


@dataclass(frozen=True)
class ModelRequest:
    """A model call as the SDK sent it; header names are lower-cased, the body is the raw bytes."""

    route: ModelRoute
    method: str
    url: str
    headers: list[tuple[str, str]]
    body: bytes
    is_async: bool


@dataclass(frozen=True)
class Reply:
    """A synthesized answer; the client receives exactly these bytes and headers."""

    status: int
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=lambda: [("content-type", "application/json")])


@dataclass(frozen=True)
class UpstreamResponse:
    """The real upstream answer; ``body`` is decoded by its content-encoding.

    An encoding that cannot be decoded here (unknown, or ``br`` without a brotli package, or a corrupt
    or cut-off body) leaves ``body`` as the raw bytes; the ``content-encoding`` header then says so.
    ``complete`` is False when the client closed an event stream before it ended (other than right
    after an OpenAI ``data: [DONE]`` terminator, where that SDK always stops reading): ``body`` then
    holds only what had arrived, decoded as far as it goes, and may not be a whole answer.
    """

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    complete: bool = True


class Forward:
    """Send the original request to the real upstream; ``on_response`` then sees the answer once.

    For a JSON answer, ``on_response`` runs after the whole body has been read and before the client
    receives it. For an event stream it runs when the stream has been read to its end, or when the
    client closes it before that, on the thread (or task) reading the stream. It must not raise: an
    exception would reach the SDK as a transport or stream failure, which anthropic retries.
    """

    def __init__(
        self,
        on_response: Callable[[UpstreamResponse], None] | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.on_response = on_response
        #: Called (then the error re-raised) when no complete answer arrives: a connection error, a
        #: timeout, a body cut short. Lets the handler stop waiting for an answer that will never come.
        self.on_failure = on_failure


ModelHandler = Callable[[ModelRequest], "Reply | Forward"]
OtherHandler = Callable[[OtherRequest], "Reply | Forward"]
_SideEffect = Callable[[httpx.Request], "httpx.Response | httpx.Request"]


class InterceptorMocker(Mocker):
    """respx mocker patching ``_transport_for_url`` of the httpx2 and httpx clients.

    Selected with ``using="blackbox"``. Routers are consulted newest first, so the innermost of nested
    :class:`Interceptor` s answers while it is active and the outer one takes over again once it stops.
    """

    name = "blackbox"
    targets: ClassVar[list[str]] = [
        *(
            ["httpx2._client.Client", "httpx2._client.AsyncClient"]
            if importlib.util.find_spec("httpx2") is not None
            else []
        ),
        "httpx._client.Client",
        "httpx._client.AsyncClient",
    ]
    target_methods: ClassVar[list[str]] = ["_transport_for_url"]

    @classmethod
    def register(cls, router: respx.Router) -> None:
        cls.routers.insert(0, router)

    @classmethod
    def mock(cls, spec: Callable[..., Any]) -> Callable[..., Any]:
        def _transport_for_url(client: Any, url: Any) -> _InterceptTransport:
            lib = httpx if isinstance(client, (httpx.Client, httpx.AsyncClient)) else _httpx2()
            return _InterceptTransport(spec(client, url), lib)

        return _transport_for_url


def _httpx2() -> ModuleType:
    return importlib.import_module("httpx2")


class _InterceptTransport:
    """Wraps a client's real transport: respx decides, the real transport sends what passes through.

    ``lib`` is the client's HTTP library (httpx or httpx2); the two share one API but no types, so the
    library-specific request, response and transport objects are typed ``Any`` here.
    """

    def __init__(self, real: Any, lib: ModuleType) -> None:
        self._real = aiohttp_guard.Routed(real)
        self._lib = lib

    def handle_request(self, request: Any) -> Any:
        body = request.read()
        try:
            answer = _route_sync(_respx_request(request, body, is_async=False))
        except PassThrough as signal:
            return self._forward(request, _forward_of(signal))
        except httpx.RequestError as error:
            native = self._native_error(error, request)
            if native is None:
                raise
            raise native from error
        if answer is None:
            return self._real.handle_request(request)
        return self._from_respx(answer, _raw_sync(answer.stream))

    async def handle_async_request(self, request: Any) -> Any:
        body = await request.aread()
        try:
            answer = await _route_async(_respx_request(request, body, is_async=True))
        except PassThrough as signal:
            return await self._aforward(request, _forward_of(signal))
        except httpx.RequestError as error:
            native = self._native_error(error, request)
            if native is None:
                raise
            raise native from error
        if answer is None:
            return await self._real.handle_async_request(request)
        return self._from_respx(answer, await _raw_async(answer.stream))

    def _forward(self, request: Any, forward: Forward | None) -> Any:
        if forward is None or forward.on_response is None:
            return self._real.handle_request(request)
        try:
            response = self._real.handle_request(request)
            if _is_event_stream(response):
                sync_tee, _ = _tee_types(self._lib)
                return self._with_stream(response, sync_tee(response.stream, _tap(response, forward)))
            try:
                raw = b"".join(response.stream)
            finally:
                response.close()
        except BaseException as error:
            _report_failure(forward, error)
            raise
        return self._deliver(response, raw, forward.on_response)

    async def _aforward(self, request: Any, forward: Forward | None) -> Any:
        if forward is None or forward.on_response is None:
            return await self._real.handle_async_request(request)
        try:
            response = await self._real.handle_async_request(request)
            if _is_event_stream(response):
                _, async_tee = _tee_types(self._lib)
                return self._with_stream(response, async_tee(response.stream, _tap(response, forward)))
            try:
                raw = b"".join([chunk async for chunk in response.stream])
            finally:
                await response.aclose()
        except BaseException as error:
            _report_failure(forward, error)
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
        headers = _header_list(response.headers)
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

    def _native_error(self, error: httpx.RequestError, request: Any) -> BaseException | None:
        """The same-named exception of an httpx2 client's library, so the SDK classifies it as a real
        failure (``ReadTimeout`` → ``APITimeoutError``); None when the error is already native."""
        if self._lib is httpx:
            return None
        native = getattr(self._lib, type(error).__name__, None)
        if isinstance(native, type) and issubclass(native, self._lib.RequestError):
            return native(str(error), request=request)  # type: ignore[no-any-return]
        return None


def _report_failure(forward: Forward, error: BaseException) -> None:
    if forward.on_failure is not None:
        forward.on_failure(error)


def _is_event_stream(response: Any) -> bool:
    content_type: str = response.headers.get("content-type", "")
    return content_type.strip().lower().startswith("text/event-stream")


#: An SSE ``data: [DONE]`` event at the very end of a body: the OpenAI stream terminator.
_DONE_AT_END = re.compile(rb"(?:\A|[\r\n])data: ?\[DONE\](?:\r\n|\r|\n){2}\Z")


class _Tap:
    """Keeps a copy of a stream's bytes as they pass and reports once: at the stream's end, when the
    client closes it early (``complete=False``), or when reading it fails (``on_failure``).

    The OpenAI SDK stops reading at ``data: [DONE]`` and closes the stream before the body formally
    ends, so a stream closed right after that terminator counts as complete.
    """

    def __init__(self, status: int, headers: list[tuple[str, str]], forward: Forward) -> None:
        self._status = status
        self._headers = headers
        self._forward = forward
        self._chunks: list[bytes] = []
        self._reported = False

    def keep(self, chunk: bytes) -> None:
        self._chunks.append(chunk)

    def report(self, *, complete: bool) -> None:
        if self._reported or self._forward.on_response is None:
            return
        self._reported = True
        raw = b"".join(self._chunks)
        if complete:
            body = decode_body(raw, self._headers)
        else:
            body = _decode_prefix(raw, self._headers)
            complete = _DONE_AT_END.search(body) is not None
        self._forward.on_response(UpstreamResponse(self._status, self._headers, body, complete))

    def fail(self, error: BaseException) -> None:
        if self._reported:
            return
        self._reported = True
        _report_failure(self._forward, error)


def _tap(response: Any, forward: Forward) -> _Tap:
    return _Tap(response.status_code, _header_list(response.headers), forward)


class _SyncTee:
    """The client's view of an upstream stream: every chunk is passed on as soon as it arrives."""

    def __init__(self, upstream: Any, tap: _Tap) -> None:
        self._upstream = upstream
        self._tap = tap

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self._upstream:
                self._tap.keep(chunk)
                yield chunk
        except Exception as error:
            self._tap.fail(error)
            raise
        self._tap.report(complete=True)

    def close(self) -> None:
        try:
            self._upstream.close()
        finally:
            self._tap.report(complete=False)


class _AsyncTee:
    """The async twin of :class:`_SyncTee`."""

    def __init__(self, upstream: Any, tap: _Tap) -> None:
        self._upstream = upstream
        self._tap = tap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._upstream:
                self._tap.keep(chunk)
                yield chunk
        except Exception as error:
            self._tap.fail(error)
            raise
        self._tap.report(complete=True)

    async def aclose(self) -> None:
        try:
            await self._upstream.aclose()
        finally:
            self._tap.report(complete=False)


@functools.cache
def _tee_types(lib: ModuleType) -> tuple[type[Any], type[Any]]:
    """The tees as subclasses of ``lib``'s byte-stream classes, which its ``Response`` insists on."""
    return (
        type("SyncTee", (_SyncTee, lib.SyncByteStream), {}),
        type("AsyncTee", (_AsyncTee, lib.AsyncByteStream), {}),
    )


def _route_sync(request: httpx.Request) -> httpx.Response | None:
    """respx's registry leaves its handlers untyped; this states what they return."""
    handler: Callable[[httpx.Request], httpx.Response | None] = InterceptorMocker.handler
    return handler(request)


async def _route_async(request: httpx.Request) -> httpx.Response | None:
    handler: Callable[[httpx.Request], Awaitable[httpx.Response | None]] = InterceptorMocker.async_handler
    return await handler(request)


def _raw_sync(stream: httpx.SyncByteStream | httpx.AsyncByteStream) -> bytes:
    """The still-encoded bytes: respx has pre-read the response, which only decoded its copy."""
    if not isinstance(stream, httpx.SyncByteStream):
        raise TypeError("a respx route answered a sync client with an async-only response stream")
    return b"".join(stream)


async def _raw_async(stream: httpx.SyncByteStream | httpx.AsyncByteStream) -> bytes:
    if not isinstance(stream, httpx.AsyncByteStream):
        raise TypeError("a respx route answered an async client with a sync-only response stream")
    return b"".join([chunk async for chunk in stream])


def _respx_request(request: Any, body: bytes, *, is_async: bool) -> httpx.Request:
    """A fresh httpx request for the respx router; our markers go into its private copy of extensions."""
    extensions = {**request.extensions, _IS_ASYNC_KEY: is_async}
    return httpx.Request(
        request.method, str(request.url), headers=request.headers.raw, content=body, extensions=extensions
    )


def _forward_of(signal: PassThrough) -> Forward | None:
    forward = signal.request.extensions.get(_FORWARD_KEY)
    return forward if isinstance(forward, Forward) else None


def _header_list(headers: Any) -> list[tuple[str, str]]:
    return [(name.lower(), value) for name, value in headers.multi_items()]


def _brotli_decompress() -> Callable[[bytes], bytes] | None:
    for module_name in ("brotli", "brotlicffi"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        decompress: Callable[[bytes], bytes] = module.decompress
        return decompress
    return None


def _inflate(data: bytes) -> bytes:
    """``deflate`` is zlib-wrapped by the standard but sent raw by some servers; accept both."""
    try:
        return zlib.decompress(data)
    except zlib.error:
        return zlib.decompress(data, -zlib.MAX_WBITS)


def _gunzip(data: bytes) -> bytes:
    return zlib.decompress(data, 16 + zlib.MAX_WBITS)


def _codings(headers: list[tuple[str, str]]) -> list[str]:
    return [
        coding.strip().lower()
        for name, value in headers
        if name.lower() == "content-encoding"
        for coding in value.split(",")
        if coding.strip() and coding.strip().lower() != "identity"
    ]


def decode_body(raw: bytes, headers: list[tuple[str, str]]) -> bytes:
    """Undo the body's content-encodings (last applied first); undecodable bodies come back raw."""
    codings = _codings(headers)
    decoders: dict[str, Callable[[bytes], bytes] | None] = {
        "gzip": _gunzip,
        "x-gzip": _gunzip,
        "deflate": _inflate,
        "br": _brotli_decompress(),
    }
    body = raw
    for coding in reversed(codings):
        decoder = decoders.get(coding)
        if decoder is None:
            return raw
        try:
            body = decoder(body)
        except Exception:
            return raw
    return body


def _decode_prefix(raw: bytes, headers: list[tuple[str, str]]) -> bytes:
    """What the start of a body decodes to, for a stream closed before its end.

    gzip and deflate decode incrementally, so a cut-off body still yields the text that arrived;
    any other encoding is decoded as a whole body would be.
    """
    body = raw
    for coding in reversed(_codings(headers)):
        if coding not in ("gzip", "x-gzip", "deflate"):
            return decode_body(raw, headers)
        wbits = 16 + zlib.MAX_WBITS if coding != "deflate" else zlib.MAX_WBITS
        try:
            body = _decompress_prefix(body, wbits)
        except zlib.error:
            return raw
    return body


def _decompress_prefix(data: bytes, wbits: int) -> bytes:
    try:
        return zlib.decompressobj(wbits).decompress(data)
    except zlib.error:
        if wbits != zlib.MAX_WBITS:
            raise
        return zlib.decompressobj(-zlib.MAX_WBITS).decompress(data)


def _is_async(request: httpx.Request) -> bool:
    return bool(request.extensions.get(_IS_ASYNC_KEY, False))


def _model_request(route: ModelRoute, request: httpx.Request) -> ModelRequest:
    headers = _header_list(request.headers)
    return ModelRequest(route, request.method, str(request.url), headers, request.content, _is_async(request))


def _other_request(request: httpx.Request) -> OtherRequest:
    headers = _header_list(request.headers)
    return OtherRequest(request.method, str(request.url), headers, request.content, _is_async(request))


def _resolve(decision: Reply | Forward, request: httpx.Request) -> httpx.Response | httpx.Request:
    """Turn a handler's decision into what a respx side effect returns (the request = pass through)."""
    if isinstance(decision, Reply):
        return httpx.Response(decision.status, headers=decision.headers, content=decision.body)
    if isinstance(decision, Forward):
        request.extensions[_FORWARD_KEY] = decision
        return request
    raise TypeError(f"an interception handler must return Reply or Forward, not {type(decision).__name__}")


class _Router(respx.MockRouter):
    """A router that keeps no call history: every request of a long agent run carries the whole
    conversation so far, and nobody reads these calls back."""

    def record(
        self,
        request: httpx.Request,
        *,
        response: httpx.Response | None = None,
        route: respx.Route | None = None,
    ) -> None:
        return None


class Interceptor:
    """While active, every model call of every httpx2/httpx client goes to ``on_model``.

    ``on_model`` must return a :class:`Reply` or a :class:`Forward` and should not raise. Anything it
    raises reaches the SDK from inside the transport: an ``Exception`` is wrapped and retried by
    anthropic (not by openai), while a ``BaseException`` that is not an ``Exception`` (such as
    ``pytest.fail``'s) surfaces at once, un-retried.

    All other traffic goes to ``on_other``; with ``on_other=None`` it passes through untouched, so a
    user's own ``respx.mock`` (patching the connection pools below) still answers it. ``on_other`` may
    refuse a request by raising; the exception propagates to the caller the same way (httpx exceptions
    are re-raised as the same-named httpx2 exception for httpx2 clients).

    Interceptors nest: the most recently started one answers, and ``stop`` removes the patches once the
    last one stops. Stop them in reverse start order, like any ``unittest.mock`` patch.
    """

    def __init__(self, on_model: ModelHandler, on_other: OtherHandler | None = None) -> None:
        self._on_model = on_model
        self._on_other = on_other
        self._active = False
        self._router = _Router(using=InterceptorMocker.name, assert_all_called=False, assert_all_mocked=True)
        for route_name, path_regex in MODEL_ROUTES.items():
            self._router.route(method="POST", path__regex=path_regex, name=route_name).mock(
                side_effect=self._model_side_effect(route_name)
            )
        catch_all = self._router.route(name=_OTHER_ROUTE_NAME)
        if on_other is None:
            catch_all.pass_through()
        else:
            catch_all.mock(side_effect=_other_side_effect(on_other))

    @property
    def active(self) -> bool:
        return self._active

    def start(self) -> None:
        if not self._active:
            self._router.start()
            aiohttp_guard.start(_MODEL_PATHS)
            self._active = True

    def stop(self) -> None:
        if self._active:
            self._active = False
            aiohttp_guard.stop()
            self._router.stop(quiet=True)

    def __enter__(self) -> Interceptor:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _model_side_effect(self, route: ModelRoute) -> _SideEffect:
        def side_effect(request: httpx.Request) -> httpx.Response | httpx.Request:
            return _resolve(self._on_model(_model_request(route, request)), request)

        return side_effect


def _other_side_effect(on_other: OtherHandler) -> _SideEffect:
    def side_effect(request: httpx.Request) -> httpx.Response | httpx.Request:
        return _resolve(on_other(_other_request(request)), request)

    return side_effect
