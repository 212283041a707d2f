"""aiohttp beside httpx: what an ``aiohttp.ClientSession`` sends is decided on like an httpx request.

google-genai's ``client.aio`` and other libraries send through a raw ``aiohttp.ClientSession``, which
the client-level patch of ``mocker`` never sees. While an interceptor is active this module patches
``ClientSession._request`` (as aioresponses does) and decides on each request the way the httpx
transport does: the innermost interceptor's ``decide`` is asked directly, and only when the innermost
router is someone else's is the request turned into the httpx request respx reads and routed through
the same registry. Either way model calls reach the same ``on_model`` and everything else the same
``on_other``, whoever opened the session and whenever its library was imported. A :class:`Reply`
becomes an ``aiohttp.ClientResponse`` carrying its bytes; a :class:`Forward` sends the original
request and shows its answer to ``on_response`` once it has been read to its end (an event stream
included: the client then reads it from that copy). What the interceptor itself sends on through an
aiohttp-based httpx transport (the anthropic and openai ``DefaultAioHttpClient``) was decided on
already and passes untouched. aiohttp stays optional: nothing is imported unless it is installed.
See docs/engine.md#model-calls.
"""

from __future__ import annotations

import asyncio
import functools
import http
import importlib
import importlib.util
import inspect
import json
import sys
import threading
from collections.abc import Callable
from typing import Any

import httpx
from respx.models import PassThrough

from .decoding import decode_body
from .handler import Forward, Reply, UpstreamResponse
from .mocker import innermost, route_async
from .transport import forward_of, reply_headers, routed_already, routing_request

__all__ = ["start", "stop", "stream_reader"]

_lock = threading.Lock()
_users = 0
_undo: list[Callable[[], None]] = []


def start() -> None:
    """Patch aiohttp while at least one interceptor runs (the first start patches)."""
    global _users
    with _lock:
        _users += 1
        if _users == 1:
            _patch_aiohttp()


def stop() -> None:
    """Undo the patch once the last interceptor stops."""
    global _users
    with _lock:
        _users -= 1
        if _users == 0:
            while _undo:
                _undo.pop()()


def _patch_aiohttp() -> None:
    module = sys.modules.get("aiohttp")
    if module is None:
        if importlib.util.find_spec("aiohttp") is None:
            return
        module = importlib.import_module("aiohttp")
    session_class: Any = module.ClientSession
    original = session_class._request
    session_class._request = _patched(original)
    _undo.append(lambda: setattr(session_class, "_request", original))


@functools.lru_cache(maxsize=4)
def _patched(original: Callable[..., Any]) -> Callable[..., Any]:
    """``ClientSession._request`` deciding on each request first; made once per original, since every
    session of a test run patches and unpatches it."""

    @functools.wraps(original)
    async def _request(self: Any, method: str, str_or_url: Any, *args: Any, **kwargs: Any) -> Any:
        send = functools.partial(original, self, method, str_or_url, *args, **kwargs)
        if routed_already():
            return await send()
        request = _routing_request(self, method, str_or_url, kwargs)
        decision = await _decision(request)
        if decision is None:
            return await send()
        if isinstance(decision, Forward):
            return await _forward(send, decision, _decompresses(self, kwargs))
        response = _client_response(self, request, decision.status, reply_headers(decision), decision.body)
        await _raise_for_status(self, response, kwargs)
        return response

    return _request


async def _decision(request: httpx.Request) -> Reply | Forward | None:
    """What answers the request: the innermost interceptor's ``decide``, or respx when the innermost
    router is someone else's (``None``: nothing answers it, so it is sent as it is)."""
    decide = innermost()
    if decide is not None:
        return decide(request.method, request.url, request.headers, request.content, True)
    try:
        answer = await route_async(request)
    except PassThrough as signal:
        return forward_of(signal) or Forward()
    if answer is None:
        return None
    encoding = answer.headers.encoding
    headers = [(name.decode(encoding), value.decode(encoding)) for name, value in answer.headers.raw]
    return Reply(answer.status_code, answer.content, headers)


def _routing_request(session: Any, method: str, str_or_url: Any, kwargs: dict[str, Any]) -> httpx.Request:
    """The httpx request the routers read, from what ``ClientSession._request`` was given."""
    build_url = getattr(session, "_build_url", None)
    url = httpx.URL(str(build_url(str_or_url) if build_url is not None else str_or_url))
    if kwargs.get("params"):
        url = url.copy_merge_params(dict(kwargs["params"]))
    headers = httpx.Headers(dict(getattr(session, "_default_headers", None) or {}))
    headers.update(_pairs(kwargs.get("headers")))
    body = _body(kwargs, headers)
    return routing_request(method.upper(), str(url), headers.raw, body, {}, is_async=True)


def _pairs(headers: Any) -> list[tuple[str, str]]:
    if headers is None:
        return []
    items = headers.items() if hasattr(headers, "items") else headers
    return [(str(name), str(value)) for name, value in items]


def _body(kwargs: dict[str, Any], headers: httpx.Headers) -> bytes:
    """The body as the wire will carry it: ``json=``, or ``data=`` as bytes, text or a form."""
    if kwargs.get("json") is not None:
        headers.setdefault("content-type", "application/json")
        return json.dumps(kwargs["json"]).encode("utf-8")
    data = kwargs.get("data")
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, dict):
        headers.setdefault("content-type", "application/x-www-form-urlencoded")
        return str(httpx.QueryParams(data)).encode("ascii")
    return b""


def _decompresses(session: Any, kwargs: dict[str, Any]) -> bool:
    """Whether aiohttp undoes the content-encoding before the body is read (its default)."""
    per_request = kwargs.get("auto_decompress")
    return bool(getattr(session, "_auto_decompress", True) if per_request is None else per_request)


async def _forward(send: Callable[[], Any], forward: Forward, decompressed: bool) -> Any:
    """Send the original request; a handler that asked to see the answer gets the whole of it."""
    if forward.on_response is None:
        return await send()
    try:
        response = await send()
        raw = await response.read()
    except BaseException as error:
        forward.failed(error)
        raise
    headers = [(name.lower(), value) for name, value in response.headers.items()]
    body = raw if decompressed else decode_body(raw, headers)
    forward.on_response(UpstreamResponse(response.status, headers, body))
    response.content = stream_reader(raw, asyncio.get_running_loop())
    return response


def _client_response(
    session: Any, request: httpx.Request, status: int, headers: list[tuple[str, str]], body: bytes
) -> Any:
    """An ``aiohttp.ClientResponse`` already read from the wire: ``headers`` and ``body`` as given."""
    aiohttp: Any = importlib.import_module("aiohttp")
    multidict: Any = importlib.import_module("multidict")
    loop = asyncio.get_running_loop()
    url = aiohttp.client.URL(str(request.url))
    request_headers = multidict.CIMultiDictProxy(multidict.CIMultiDict(request.headers.multi_items()))
    options: dict[str, Any] = {
        "writer": None,
        "continue100": None,
        "timer": importlib.import_module("aiohttp.helpers").TimerNoop(),
        "request_info": aiohttp.RequestInfo(url, request.method, request_headers, url),
        "traces": [],
        "loop": loop,
        "session": session,
    }
    if "stream_writer" in _response_parameters(aiohttp.ClientResponse):
        options["stream_writer"] = _SentWriter()
    response = aiohttp.ClientResponse(request.method, url, **options)
    pairs = list(headers)
    response._headers = multidict.CIMultiDictProxy(multidict.CIMultiDict(pairs))
    response._raw_headers = tuple((name.encode("latin-1"), value.encode("latin-1")) for name, value in pairs)
    response.status = status
    response.reason = _reason(status)
    response.content = stream_reader(body, loop)
    return response


@functools.cache
def _response_parameters(response_class: type[Any]) -> frozenset[str]:
    """The keyword parameters of this aiohttp's ``ClientResponse`` (they changed across releases)."""
    return frozenset(inspect.signature(response_class).parameters)


class _SentWriter:
    """What a ``ClientResponse`` asks of the writer of a request that was never written."""

    output_size = 0


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def stream_reader(body: bytes, loop: asyncio.AbstractEventLoop) -> Any:
    """A finished ``aiohttp.StreamReader`` holding ``body``, for every way a client reads one."""
    aiohttp: Any = importlib.import_module("aiohttp")
    protocol = importlib.import_module("aiohttp.client_proto").ResponseHandler(loop=loop)
    reader = aiohttp.StreamReader(protocol, 2**16, loop=loop)
    if body:
        reader.feed_data(body)
    reader.feed_eof()
    return reader


async def _raise_for_status(session: Any, response: Any, kwargs: dict[str, Any]) -> None:
    """What aiohttp does with an error status when the session or the request asks it to raise."""
    check = kwargs.get("raise_for_status")
    if check is None:
        check = getattr(session, "_raise_for_status", False)
    if check is True:
        response.raise_for_status()
    elif callable(check):
        await check(response)
