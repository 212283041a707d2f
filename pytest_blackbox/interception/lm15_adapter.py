"""DSPy's own engine beside httpx: what its HTTP transports send is decided on like an httpx request.

DSPy's default engine (lm15, which DSPy ships inside its package) sends over sockets of its own,
through two transport classes with one method each: ``StdlibTransport.stream`` and
``StdlibAsyncTransport._do_stream`` take a ``TransportRequest`` (method, URL, headers, body) and
return a response whose iteration yields the body. That is lm15's own seam (its test doubles are
transports), so this module wraps those two methods, on the classes, so every transport is covered
whenever it was built: the innermost interceptor's ``decide`` is asked, as the httpx transport asks
it, and model calls reach the same ``on_model``, everything else the same ``on_other``. A
:class:`Reply` becomes the transport's own response type carrying its bytes; a :class:`Forward`
whose handler asks to see the answer is sent, read to its end (an event stream too: the client then
reads the copy) and shown to ``on_response``; anything else is sent as it is. When the innermost
respx router is not an interceptor's, the request is left alone (respx never sees these sockets).

The classes are wrapped once per process, when an interceptor first starts with DSPy loaded, or as
soon as DSPy's transports are imported after that; DSPy stays optional and is never imported here.
See docs/engine.md#model-calls.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import AsyncIterator, Callable
from types import ModuleType
from typing import Any

import httpx

from ..importwatch import when_imported
from .handler import Decide, Forward, Reply, UpstreamResponse
from .mocker import innermost
from .transport import reply_headers

__all__ = ["install"]

#: The package holding DSPy's transports (and its response types).
_TRANSPORTS = "dspy._vendor.lm15.transports"
_MARK = "_pytest_blackbox_wrapped"
_lock = threading.Lock()


def install() -> None:
    """Wrap DSPy's transports now if they are loaded, else as soon as they are (once per process)."""
    when_imported((_TRANSPORTS,), _wrap)


def _wrap(module: ModuleType) -> None:
    """Wrap both classes once: a second wrapping would decide on each request twice."""
    sync_class: Any = module.StdlibTransport
    async_class: Any = module.StdlibAsyncTransport
    with _lock:
        if getattr(sync_class.stream, _MARK, False):
            return
        sync_class.stream = _sync_stream(module, sync_class.stream)
        async_class._do_stream = _async_stream(module, async_class._do_stream)


def _sync_stream(module: ModuleType, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def stream(self: Any, request: Any) -> Any:
        decide = innermost()
        decision = None if decide is None else _decision(decide, request, is_async=False)
        if isinstance(decision, Reply):
            return _response(module, decision.status, reply_headers(decision), decision.body)
        if decision is None or (decision.on_response is None and decision.target is None):
            return original(self, request)
        try:
            with original(self, _target(request, decision)) as sent:
                raw = sent.read()
        except BaseException as error:
            decision.failed(error)
            raise
        return _answered(module, decision, sent, raw)

    setattr(stream, _MARK, True)
    return stream


def _async_stream(module: ModuleType, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def do_stream(self: Any, request: Any) -> Any:
        decide = innermost()
        decision = None if decide is None else _decision(decide, request, is_async=True)
        if isinstance(decision, Reply):
            return _response(module, decision.status, reply_headers(decision), decision.body, is_async=True)
        if decision is None or (decision.on_response is None and decision.target is None):
            return await original(self, request)
        try:
            sent = await original(self, _target(request, decision))
            try:
                raw = await sent.read()
            finally:
                await sent.aclose()
        except BaseException as error:
            decision.failed(error)
            raise
        return _answered(module, decision, sent, raw, is_async=True)

    return do_stream


def _decision(decide: Decide, request: Any, *, is_async: bool) -> Reply | Forward | None:
    """What answers the request, asked as the httpx transport asks (its URL and headers as httpx's)."""
    headers = httpx.Headers(list(request.headers))
    return decide(request.method.upper(), httpx.URL(request.url), headers, bytes(request.body), is_async)


def _target(request: Any, forward: Forward) -> Any:
    """The request to send: its own, or sent to the forward's target (a base URL put back)."""
    return request if forward.target is None else dataclasses.replace(request, url=forward.target)


def _answered(module: ModuleType, forward: Forward, sent: Any, body: bytes, *, is_async: bool = False) -> Any:
    """Show the whole answer to the handler, and hand the client a response carrying the same bytes.

    The transport undoes a content-encoding itself and keeps the header: the handler sees the body
    as it is, without the header, and the client gets both as the transport gave them.
    """
    headers = [(name.lower(), value) for name, value in sent.headers]
    if forward.on_response is not None:
        decoded = [(name, value) for name, value in headers if name != "content-encoding"]
        forward.on_response(UpstreamResponse(sent.status, decoded, body))
    return _response(module, sent.status, list(sent.headers), body, is_async=is_async)


def _response(
    module: ModuleType, status: int, headers: list[tuple[str, str]], body: bytes, *, is_async: bool = False
) -> Any:
    """The transport's own response, already read from the wire: ``headers`` and ``body`` as given."""
    if is_async:
        return module.AsyncTransportResponse(
            status=status,
            reason=_reason(status),
            headers=headers,
            http_version="HTTP/1.1",
            chunks=_async_chunks(body),
            release=_async_release,
        )
    return module.TransportResponse(
        status=status,
        reason=_reason(status),
        headers=headers,
        http_version="HTTP/1.1",
        chunks=iter((body,)),
        release=_release,
    )


def _reason(status: int) -> str:
    return httpx.codes.get_reason_phrase(status)


def _release(body_consumed: bool) -> None:
    """Nothing to give back: the body was never on a connection of the pool."""


async def _async_release(body_consumed: bool) -> None:
    """Nothing to give back: the body was never on a connection of the pool."""


async def _async_chunks(body: bytes) -> AsyncIterator[bytes]:
    yield body
