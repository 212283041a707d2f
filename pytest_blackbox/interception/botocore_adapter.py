"""botocore beside httpx: what a boto3 client sends is decided on through botocore's own event system.

boto3 sends through botocore, which sends through urllib3 and never through httpx. botocore emits
``before-send`` with each prepared request just before sending it, and sends nothing when a handler
returns a response: the hook its ``Stubber`` and moto answer from. :func:`before_send` is that
handler: the innermost interceptor's ``decide`` is asked, as the httpx transport asks it, so model
calls reach the same ``on_model`` and everything else the same ``on_other``. A :class:`Reply`
becomes botocore's ``AWSResponse`` carrying its bytes (an event stream included, which botocore then
reads as it would off the wire); a :class:`Forward` whose handler asks to see the answer is sent
here, read to its end (a stream too: the client then reads the copy) and shown to ``on_response``;
any other request is left to botocore to send.

A handler reaches a client through ``botocore.handlers.BUILTIN_HANDLERS``, which every botocore
session registers when it is created and copies into each client it builds: :func:`install` adds it
once (the pytest plugin arranges it as soon as botocore is imported, so clients built at import are
covered); outside pytest, :func:`install` adds it when an interceptor starts with botocore loaded.
A session created before that is not seen. When the innermost respx router is not an
interceptor's, botocore requests are left alone (respx never sees urllib3). botocore stays
optional: it is never imported here. See docs/engine.md#model-calls.
"""

from __future__ import annotations

import importlib
import io
import sys
from collections.abc import Iterator
from typing import Any

import httpx

from ..vocabulary import BOTOCORE_HANDLER_MARK
from .decoding import decode_body
from .handler import Forward, Reply, UpstreamResponse
from .mocker import innermost
from .transport import reply_headers

__all__ = ["before_send", "install", "is_installed"]

_CHUNK = 64 * 1024


def install() -> None:
    """Register :func:`before_send` for every botocore session created from now on (once).

    Only once botocore is loaded: a run that never imports boto3 does not pay for importing it (the
    pytest plugin registers the handler itself as botocore loads).
    """
    handlers = sys.modules.get("botocore.handlers")
    if handlers is not None and not is_installed(handlers.BUILTIN_HANDLERS):
        handlers.BUILTIN_HANDLERS.append(("before-send", before_send))


def is_installed(handlers: list[tuple[Any, ...]]) -> bool:
    """Whether a Blackbox ``before-send`` handler is among botocore's built-in ``handlers`` already."""
    return any(getattr(spec[1], BOTOCORE_HANDLER_MARK, False) for spec in handlers if len(spec) > 1)


def before_send(request: Any, **_: Any) -> Any:
    """botocore's ``before-send`` handler: an ``AWSResponse`` answers the request, ``None`` sends it."""
    decide = innermost()
    if decide is None:
        return None
    url = httpx.URL(request.url)
    headers = httpx.Headers([(name, _text(value)) for name, value in request.headers.items()])
    decision = decide(request.method, url, headers, _body(request.body), False)
    if isinstance(decision, Reply):
        return _response(request.url, decision.status, reply_headers(decision), decision.body)
    if decision is None or (decision.on_response is None and decision.target is None):
        return None
    return _forward(request, decision)


setattr(before_send, BOTOCORE_HANDLER_MARK, True)


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
    headers = [(name.lower(), _text(value)) for name, value in sent.headers.items()]
    if forward.on_response is not None:
        forward.on_response(UpstreamResponse(sent.status_code, headers, decode_body(raw, headers)))
    return _response(request.url, sent.status_code, headers, raw)


def _response(url: str, status: int, headers: list[tuple[str, str]], body: bytes) -> Any:
    """botocore's ``AWSResponse`` for bytes already read: what its parsers and event streams read."""
    awsrequest: Any = importlib.import_module("botocore.awsrequest")
    return awsrequest.AWSResponse(url, status, awsrequest.HeadersDict(headers), _Raw(body))


class _Raw(io.BytesIO):
    """A read body, as botocore reads a urllib3 response: whole (``read``) or in chunks (``stream``)."""

    def stream(self, amt: int = _CHUNK, decode_content: bool | None = None) -> Iterator[bytes]:
        while chunk := self.read(amt):
            yield chunk
