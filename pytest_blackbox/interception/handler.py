"""What passes between the interception layer and its handler: the requests it hands over, the answers
it takes back, and what it reports of a forwarded call. See docs/engine.md#model-calls.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Decide",
    "Forward",
    "ModelHandler",
    "ModelRequest",
    "OtherHandler",
    "OtherRequest",
    "Reply",
    "UpstreamResponse",
    "checked",
    "header_list",
]


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
    """A model call as the SDK sent it; header names are lower-cased, the body is the raw bytes.

    ``route`` is the name of the model route it matched (the caller's names, see ``Interceptor``).
    """

    route: str
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
        target: str | None = None,
    ) -> None:
        self.on_response = on_response
        #: Called (then the error re-raised) when no complete answer arrives: a connection error, a
        #: timeout, a body cut short. Lets the handler stop waiting for an answer that will never come.
        self.on_failure = on_failure
        #: The URL to send the request to instead of its own (``None``: its own): a base URL the
        #: handler pointed elsewhere for other processes, put back for this one.
        self.target = target

    def failed(self, error: BaseException) -> None:
        """Tell the handler no complete answer will come."""
        if self.on_failure is not None:
            self.on_failure(error)


ModelHandler = Callable[[ModelRequest], "Reply | Forward"]
OtherHandler = Callable[[OtherRequest], "Reply | Forward"]
#: What answers one request (method, URL, headers and body of the client's own request, whether the
#: client is async): a :class:`Reply`, a :class:`Forward`, or ``None`` to pass it through untouched.
Decide = Callable[[str, Any, Any, bytes, bool], "Reply | Forward | None"]


def checked(decision: object) -> Reply | Forward:
    """A handler's decision, which must be a :class:`Reply` or a :class:`Forward`."""
    if isinstance(decision, (Reply, Forward)):
        return decision
    raise TypeError(f"an interception handler must return Reply or Forward, not {type(decision).__name__}")


def header_list(headers: Any) -> list[tuple[str, str]]:
    """httpx or httpx2 headers as handlers see them: ``(name, value)`` pairs, names lower-cased.

    Every name and every value decoded as ASCII in one call each, which is what ``headers.encoding``
    finds for any request of an SDK: that property decodes every header once more to find it (and
    ``multi_items`` reads it twice per header). Only a header that is not ASCII, or holds a line
    break, has them decoded one by one in the headers' own encoding.
    """
    raw = headers.raw
    try:
        names = b"\n".join(map(_NAME, raw)).decode("ascii").lower().split("\n")
        values = b"\n".join(map(_VALUE, raw)).decode("ascii").split("\n")
    except UnicodeDecodeError:
        names = values = []
    if len(names) == len(values) == len(raw):  # no line break in any (the one-line split holds)
        return list(zip(names, values, strict=True))
    encoding = headers.encoding
    return [(name.decode(encoding).lower(), value.decode(encoding)) for name, value in raw]


_NAME, _VALUE = operator.itemgetter(0), operator.itemgetter(1)
