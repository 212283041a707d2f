"""botocore and aiobotocore beside httpx: what a boto3 or aiobotocore client sends is decided on
through botocore's own event system.

boto3 sends through botocore, which sends through urllib3 and never through httpx. botocore emits
``before-send`` with each prepared request just before sending it, and sends nothing when a handler
returns a response: the hook its ``Stubber`` and moto answer from. :func:`before_send` is that
handler: the innermost interceptor's ``decide`` is asked, as the httpx transport asks it, so model
calls reach the same ``on_model`` and everything else the same ``on_other``. A :class:`Reply`
becomes botocore's ``AWSResponse`` carrying its bytes (an event stream included, which botocore then
reads as it would off the wire); a :class:`Forward` whose handler asks to see the answer is sent
here, read to its end (a stream too: the client then reads the copy) and shown to ``on_response``;
any other request is left to botocore to send.

aiobotocore, boto3's async counterpart, builds its sessions from the same built-in handlers and
emits the same ``before-send``, awaiting a handler that returns a coroutine; its emitter swaps a
built-in botocore handler for the async twin ``aiobotocore.hooks`` maps it to. :func:`install` maps
:func:`before_send` to :func:`before_send_async`, which decides the same way and answers with
aiobotocore's ``AioAWSResponse`` over the bytes in an aiohttp ``StreamReader`` (what its parsers,
streaming bodies and event streams read of an aiohttp response), forwarding through aiobotocore's
own aiohttp session.

A handler reaches a client through ``botocore.handlers.BUILTIN_HANDLERS``, which every botocore
session registers when it is created and copies into each client it builds: :func:`install` adds it
once (the pytest plugin arranges it as soon as botocore or aiobotocore is imported, so clients built
at import are covered); outside pytest, :func:`install` adds it when an interceptor starts with
botocore loaded. A session created before that is not seen. When the innermost respx router is not
an interceptor's, botocore requests are left alone (respx never sees urllib3). botocore and
aiobotocore stay optional: neither is ever imported here. See docs/engine.md#model-calls.
"""

from __future__ import annotations

import asyncio
import importlib
import io
import sys
from collections.abc import Iterator
from typing import Any

import httpx

from .aiohttp_adapter import stream_reader
from .decoding import decode_body
from .handler import Forward, Reply, UpstreamResponse
from .mocker import innermost
from .transport import reply_headers, routed

__all__ = ["before_send", "before_send_async", "install"]

_CHUNK = 64 * 1024
#: The list of botocore's built-in handlers :func:`install` last found holding the handler (a
#: botocore imported again has a list of its own).
_added_to: object = None


def install() -> None:
    """Register :func:`before_send` for every botocore session created from now on, and its async twin
    for every aiobotocore session (once each).

    Only once botocore (or aiobotocore) is loaded: a run that never imports boto3 does not pay for
    importing it. The pytest plugin calls this again as each of the two finishes loading.
    """
    global _added_to
    handlers = sys.modules.get("botocore.handlers")
    if handlers is not None and handlers.BUILTIN_HANDLERS is not _added_to:
        if ("before-send", before_send) not in handlers.BUILTIN_HANDLERS:
            handlers.BUILTIN_HANDLERS.append(("before-send", before_send))
        _added_to = handlers.BUILTIN_HANDLERS  # searched once, not at every interceptor's start
    twins = getattr(sys.modules.get("aiobotocore.hooks"), "_HANDLER_MAPPING", None)
    if isinstance(twins, dict):
        twins.setdefault(before_send, before_send_async)


def before_send(request: Any, **_: Any) -> Any:
    """botocore's ``before-send`` handler: an ``AWSResponse`` answers the request, ``None`` sends it."""
    decision = _decision(request, is_async=False)
    if isinstance(decision, Reply):
        return _response(request.url, decision.status, reply_headers(decision), decision.body)
    return None if decision is None else _forward(request, decision)


async def before_send_async(request: Any, **_: Any) -> Any:
    """aiobotocore's ``before-send`` handler: an ``AioAWSResponse`` answers the request, ``None`` sends it."""
    decision = _decision(request, is_async=True)
    if isinstance(decision, Reply):
        return _aio_response(request, decision.status, reply_headers(decision), decision.body)
    return None if decision is None else await _forward_async(request, decision)


def _decision(request: Any, *, is_async: bool) -> Reply | Forward | None:
    """What answers a prepared request: a reply, a forward to send here, or ``None`` (botocore sends it)."""
    decide = innermost()
    if decide is None:
        return None
    url = httpx.URL(request.url)
    decision = decide(request.method, url, httpx.Headers(_headers(request)), _body(request.body), is_async)
    if decision is None or isinstance(decision, Reply):
        return decision
    return None if decision.on_response is None and decision.target is None else decision


def _headers(request: Any) -> list[tuple[str, str]]:
    return [(name, _text(value)) for name, value in request.headers.items()]


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _body(body: Any) -> bytes:
    """The body as the wire will carry it: bytes, text, or a file botocore would read (rewound)."""
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    start = body.tell() if hasattr(body, "tell") else None
    data = body.read()
    if start is not None:
        body.seek(start)
    return data if isinstance(data, bytes) else str(data).encode("utf-8")


def _forward(request: Any, forward: Forward) -> Any:
    """Send the request here (to the forward's target, if it names one) and show the whole answer."""
    if forward.target is not None:
        request.url = forward.target
    try:
        sent = importlib.import_module("botocore.httpsession").URLLib3Session().send(request)
        raw = sent.content
    except BaseException as error:
        forward.failed(error)
        raise
    return _response(request.url, sent.status_code, _shown(forward, sent, raw), raw)


async def _forward_async(request: Any, forward: Forward) -> Any:
    """:func:`_forward` through aiobotocore's aiohttp session, which the aiohttp adapter lets pass."""
    if forward.target is not None:
        request.url = forward.target
    try:
        with routed():
            async with importlib.import_module("aiobotocore.httpsession").AIOHTTPSession() as session:
                sent = await session.send(request)
                raw = await sent.content
    except BaseException as error:
        forward.failed(error)
        raise
    return _aio_response(request, sent.status_code, _shown(forward, sent, raw), raw)


def _shown(forward: Forward, sent: Any, raw: bytes) -> list[tuple[str, str]]:
    """Show the answer botocore received to the forward's handler; its headers, as the reply carries them."""
    headers = [(name.lower(), _text(value)) for name, value in sent.headers.items()]
    if forward.on_response is not None:
        forward.on_response(UpstreamResponse(sent.status_code, headers, decode_body(raw, headers)))
    return headers


def _response(url: str, status: int, headers: list[tuple[str, str]], body: bytes) -> Any:
    """botocore's ``AWSResponse`` for bytes already read: what its parsers and event streams read."""
    awsrequest: Any = importlib.import_module("botocore.awsrequest")
    return awsrequest.AWSResponse(url, status, awsrequest.HeadersDict(headers), _Raw(body))


def _aio_response(request: Any, status: int, headers: list[tuple[str, str]], body: bytes) -> Any:
    """aiobotocore's ``AioAWSResponse`` for bytes already read: what its parsers, streaming bodies and
    event streams read."""
    headers_dict = importlib.import_module("botocore.awsrequest").HeadersDict(headers)
    return importlib.import_module("aiobotocore.awsrequest").AioAWSResponse(
        request.url, status, headers_dict, _AioRaw(request.url, body)
    )


class _AioRaw:
    """A read body, as aiobotocore reads an aiohttp response: whole (``read``), or from its
    ``content`` stream (a streaming body, an event stream); ``url`` names it in a read error."""

    def __init__(self, url: str, body: bytes) -> None:
        self.url = url
        self.content = stream_reader(body, asyncio.get_running_loop())

    async def read(self) -> bytes:
        data: bytes = await self.content.read()
        return data

    def close(self) -> None:
        """Nothing is open: the whole body was read already."""


class _Raw(io.BytesIO):
    """A read body, as botocore reads a urllib3 response: whole (``read``) or in chunks (``stream``)."""

    def stream(self, amt: int = _CHUNK, decode_content: bool | None = None) -> Iterator[bytes]:
        while chunk := self.read(amt):
            yield chunk
