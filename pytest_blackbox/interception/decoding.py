"""Undoing a response body's content-encodings, so handlers see the text the provider sent.

The client still receives the untouched bytes; only the handler's copy is decoded. See
docs/providers.md#streaming.
"""

from __future__ import annotations

import functools
import importlib
import zlib
from collections.abc import Callable

__all__ = ["decode_body", "decode_prefix"]


@functools.cache
def _brotli_decompress() -> Callable[[bytes], bytes] | None:
    """A brotli package's ``decompress``, looked for once (a failed import is not cheap)."""
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
    if not codings:
        return raw
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


def decode_prefix(raw: bytes, headers: list[tuple[str, str]]) -> bytes:
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
