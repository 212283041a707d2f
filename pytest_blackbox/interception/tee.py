"""The tee between an upstream event stream and the client: chunks pass on as they arrive, a copy is kept.

The handler's ``on_response`` is called once, when the stream ends or when the client closes it
early (then with ``complete=False``). See docs/providers.md#streaming.
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

from .decoding import decode_body, decode_prefix
from .handler import Forward, UpstreamResponse, header_list

__all__ = ["Tap", "tap", "tee_types"]

#: An SSE ``data: [DONE]`` event at the very end of a body: the OpenAI stream terminator.
_DONE_AT_END = re.compile(rb"(?:\A|[\r\n])data: ?\[DONE\](?:\r\n|\r|\n){2}\Z")


class Tap:
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
            body = decode_prefix(raw, self._headers)
            complete = _DONE_AT_END.search(body) is not None
        self._forward.on_response(UpstreamResponse(self._status, self._headers, body, complete))

    def fail(self, error: BaseException) -> None:
        if self._reported:
            return
        self._reported = True
        self._forward.failed(error)


def tap(response: Any, forward: Forward) -> Tap:
    """A tap for an upstream response of either HTTP library."""
    return Tap(response.status_code, header_list(response.headers), forward)


class _SyncTee:
    """The client's view of an upstream stream: every chunk is passed on as soon as it arrives."""

    def __init__(self, upstream: Any, tap: Tap) -> None:
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

    def __init__(self, upstream: Any, tap: Tap) -> None:
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
def tee_types(lib: ModuleType) -> tuple[type[Any], type[Any]]:
    """The tees as subclasses of ``lib``'s byte-stream classes, which its ``Response`` insists on."""
    return (
        type("SyncTee", (_SyncTee, lib.SyncByteStream), {}),
        type("AsyncTee", (_AsyncTee, lib.AsyncByteStream), {}),
    )
