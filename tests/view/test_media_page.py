"""Media parts on the run page and in ``blackbox inspect``: thumbnails, badges, the extensions line.

The cassette is built from media parts as docs/cassette-format.md#media-parts describes them.
"""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.analysis.view import render_run_html
from pytest_blackbox.cli import main
from pytest_blackbox.trace.io import save_trace
from pytest_blackbox.trace.model import Trace
from pytest_blackbox.trace.recorder import TraceRecorder

from .conftest import meta, parse_page


def png(width: int, height: int) -> bytes:
    """A real PNG of one colour, so a browser can decode the thumbnail."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xcc\x22\x22" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


IMAGE = png(4, 3)
DIGEST = hashlib.sha256(IMAGE).hexdigest()


def media(data: bytes, media_type: str = "image/png", *, inline: bool) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "media", "kind": "image", "mediaType": media_type}
    part["sha256"] = hashlib.sha256(data).hexdigest()
    part["byteLength"] = len(data)
    if inline:
        part["data"] = base64.b64encode(data).decode()
    return part


def media_run(*parts: dict[str, Any]) -> Trace:
    """A run whose first request holds ``parts`` and whose second a tool result with an inline image."""
    recorder = TraceRecorder("media-run", 1000)
    call = {"toolCallId": "call-0", "toolName": "screenshot", "toolInput": {}}
    user = {"role": "user", "content": [{"type": "text", "text": "look"}, *parts]}
    recorder.append("model_input", {"messages": [user], "tools": []}, 1000)
    recorder.append("model_output", {"type": "tool_calls", "calls": [call]}, 1001)
    result = [{"type": "text", "text": "the screen:"}, media(IMAGE, inline=True)]
    tool_result = {"type": "tool_result", "toolCallId": "call-0", "toolName": "screenshot", "result": result}
    history = [user, {"role": "assistant", "content": [{"type": "tool_use", **call}]}]
    second = {"messages": [*history, {"role": "user", "content": [tool_result]}], "tools": []}
    recorder.append("model_input", second, 1002)
    recorder.append("model_output", {"type": "final_answer", "text": "done"}, 1003)
    recorder.append("metadata", {"event": "run_completed", "status": "success", "result": "done"}, 1004)
    return recorder.trace()


DOCUMENT = {"type": "media", "kind": "document", "url": "https://example.com/spec.pdf", "title": "Spec"}


def test_inline_images_are_thumbnails_and_the_rest_digest_badges() -> None:
    trace = media_run(media(IMAGE, inline=True), media(b"other", inline=False), DOCUMENT)
    page = parse_page(render_run_html(trace, verify_report=verify_trace(trace)))
    images = page.find_all("img")
    uri = "data:image/png;base64," + base64.b64encode(IMAGE).decode()
    assert [image.attrs["src"] for image in images] == [uri, uri]  # the prompt's, and the tool result's
    badges = [node.text() for node in page.find_all("div", "media")]
    assert badges[1] == f"image · image/png · 5 bytes · sha256 {hashlib.sha256(b'other').hexdigest()[:12]}…"
    assert badges[2] == "document · “Spec” · url https://example.com/spec.pdf"
    assert badges[0] == f"image · image/png · {len(IMAGE)} bytes · sha256 {DIGEST[:12]}…"
    assert meta(page)["Extensions"] == (
        "media parts (docs/cassette-format.md#media-parts); "
        "the original Blackbox (arda-ulas/blackbox) cannot replay them"
    )


def test_only_clean_raster_images_become_thumbnails() -> None:
    svg = media(b"<svg onload='x()'/>", "image/svg+xml", inline=True)
    forged = {**media(IMAGE, inline=True), "data": 'AAAA" onerror="x()'}
    page = parse_page(render_run_html(media_run(svg, forged)))
    assert len(page.find_all("img")) == 1  # the tool result's image only


def test_the_policy_allows_images_from_data_uris_only() -> None:
    page = parse_page(render_run_html(media_run()))
    policy = page.one("meta", http_equiv="Content-Security-Policy").attrs["content"]
    assert "; img-src data:; " in policy and policy.count("img-src") == 1


def test_a_run_without_media_names_no_extension() -> None:
    recorder = TraceRecorder("plain", 1000)
    recorder.append("model_input", {"messages": [{"role": "user", "content": "hi"}], "tools": []}, 1000)
    assert "Extensions" not in meta(parse_page(render_run_html(recorder.trace())))


def test_inspect_names_the_extensions_a_cassette_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "media.json"
    save_trace(media_run(DOCUMENT), path)
    assert main(["inspect", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[7] == (
        "Extensions:   media parts (docs/cassette-format.md#media-parts); "
        "the original Blackbox (arda-ulas/blackbox) cannot replay them"
    )
    assert lines[8] == "Status:       success"
