"""decode_body: what on_response sees of a compressed upstream body."""

from __future__ import annotations

import gzip
import importlib.util
import zlib

import pytest

from pytest_blackbox.interception.decoding import decode_body, decode_prefix

BODY = b'{"id":"msg_01","content":[]}'


def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    ("encoded", "encoding"),
    [
        (gzip.compress(BODY, mtime=0), "gzip"),
        (gzip.compress(BODY, mtime=0), "x-gzip"),
        (zlib.compress(BODY), "deflate"),
        (raw_deflate(BODY), "deflate"),
        (gzip.compress(zlib.compress(BODY), mtime=0), "deflate, gzip"),
        (gzip.compress(BODY, mtime=0), " GZIP "),
        (BODY, "identity"),
    ],
    ids=["gzip", "x-gzip", "deflate-zlib", "deflate-raw", "stacked", "case-and-space", "identity"],
)
def test_known_encodings_are_undone(encoded: bytes, encoding: str) -> None:
    assert (
        decode_body(encoded, [("content-type", "application/json"), ("Content-Encoding", encoding)]) == BODY
    )


def test_a_body_without_content_encoding_is_unchanged() -> None:
    assert decode_body(BODY, [("content-type", "application/json")]) == BODY


@pytest.mark.parametrize(
    ("raw", "encoding"),
    [(b"\x28\xb5\x2f\xfd garbage", "zstd"), (b"not gzip at all", "gzip"), (gzip.compress(BODY)[:12], "gzip")],
    ids=["unknown-coding", "corrupt", "truncated"],
)
def test_undecodable_bodies_come_back_raw(raw: bytes, encoding: str) -> None:
    assert decode_body(raw, [("content-encoding", encoding)]) == raw


def test_an_undecodable_outer_coding_leaves_the_whole_body_raw() -> None:
    raw = gzip.compress(BODY, mtime=0)
    assert decode_body(raw, [("content-encoding", "gzip, zstd")]) == raw


@pytest.mark.skipif(
    any(importlib.util.find_spec(name) for name in ("brotli", "brotlicffi")),
    reason="a brotli package is installed",
)
def test_br_without_a_brotli_package_comes_back_raw() -> None:
    assert decode_body(b"\x8b\x03\x80hello\x03", [("content-encoding", "br")]) == b"\x8b\x03\x80hello\x03"


# -- the start of a stream closed before its end -----------------------------------------------

STREAM = b"event: a\ndata: {}\n\n" * 20


def flushed(compressor: zlib._Compress, data: bytes) -> bytes:
    """What a streaming server has sent after flushing ``data``: a valid start, not a whole body."""
    return compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)


@pytest.mark.parametrize(
    ("wbits", "encoding"),
    [(16 + zlib.MAX_WBITS, "gzip"), (zlib.MAX_WBITS, "deflate"), (-zlib.MAX_WBITS, "deflate")],
    ids=["gzip", "deflate-zlib", "deflate-raw"],
)
def test_a_cut_off_compressed_stream_decodes_as_far_as_it_goes(wbits: int, encoding: str) -> None:
    start = flushed(zlib.compressobj(wbits=wbits), STREAM)
    assert decode_prefix(start, [("content-encoding", encoding)]) == STREAM
    assert decode_body(start, [("content-encoding", encoding)]) == start  # a whole-body decode gives up


def test_a_cut_off_body_in_another_encoding_is_decoded_as_a_whole_body() -> None:
    assert decode_prefix(b"plain", []) == b"plain"
    assert decode_prefix(b"\x28\xb5\x2f\xfd", [("content-encoding", "zstd")]) == b"\x28\xb5\x2f\xfd"
    assert decode_prefix(b"not gzip", [("content-encoding", "gzip")]) == b"not gzip"
