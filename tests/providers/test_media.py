"""Every protocol's image, document, audio and file blocks as media parts: sources, extras, refusals.

Bodies are built from the providers' documented wire shapes (docs/cassette-format.md#media-parts).
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from pytest_blackbox.errors import BlackboxUnsupportedError
from pytest_blackbox.providers import CallIds, anthropic, gemini, openai_chat, openai_responses
from pytest_blackbox.trace.media import media_parts, without_bytes

DATA = b"%PDF-1.7 not really"
B64 = base64.b64encode(DATA).decode()
DIGEST = hashlib.sha256(DATA).hexdigest()
#: Bytes whose base64 is all "+" and "/": "-" and "_" in the URL-safe alphabet.
SIGNS = b"\xfb\xff\xbf" * 3
GEMINI_PATH = "/v1beta/models/gemini-2.5-flash:generateContent"


def bytes_part(kind: str, media_type: str | None, **extras: Any) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "media", "kind": kind}
    if media_type is not None:
        part["mediaType"] = media_type
    return {**part, "sha256": DIGEST, "byteLength": len(DATA), "data": B64, **extras}


def user_content(provider: Any, body: dict[str, Any], **kwargs: Any) -> Any:
    return provider.normalize_request(body, CallIds(), **kwargs)["messages"][-1]["content"]


def anthropic_user(*blocks: Any) -> Any:
    body = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": [*blocks]}]}
    return user_content(anthropic, body)


@pytest.mark.parametrize(
    ("block", "part"),
    [
        (
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}},
            bytes_part("image", "image/png"),
        ),
        (
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            {"type": "media", "kind": "image", "url": "https://example.com/a.png"},
        ),
        (
            {"type": "document", "source": {"type": "file", "file_id": "file_01"}, "cache_control": {}},
            {"type": "media", "kind": "document", "fileId": "file_01"},
        ),
        (
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": B64},
                "title": "Spec",
                "context": "the 2024 one",
                "citations": {"enabled": True},
            },
            bytes_part("document", "application/pdf", title="Spec", context="the 2024 one", citations=True),
        ),
        (
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "plain words"},
            },
            {"type": "media", "kind": "document", "mediaType": "text/plain", "text": "plain words"},
        ),
        (
            {
                "type": "document",
                "source": {"type": "content", "content": [{"type": "text", "text": "chunk"}]},
            },
            {"type": "media", "kind": "document", "content": [{"type": "text", "text": "chunk"}]},
        ),
    ],
    ids=[
        "base64-image",
        "url-image",
        "file-document",
        "pdf-with-extras",
        "text-document",
        "content-document",
    ],
)
def test_anthropic_blocks(block: dict[str, Any], part: dict[str, Any]) -> None:
    assert anthropic_user({"type": "text", "text": "see"}, block) == [{"type": "text", "text": "see"}, part]


def test_anthropic_tool_result_with_an_image_keeps_its_content_as_parts() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}}
    messages = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "shot", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "t"}, image],
                }
            ],
        },
    ]
    [result] = user_content(anthropic, {"model": "m", "max_tokens": 8, "messages": messages})
    assert result["result"] == [{"type": "text", "text": "t"}, bytes_part("image", "image/png")]


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        (
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}", "detail": "high"}},
            bytes_part("image", "image/png", detail="high"),
        ),
        (
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            {"type": "media", "kind": "image", "url": "https://example.com/a.png"},
        ),
        (
            {"type": "input_audio", "input_audio": {"data": B64, "format": "mp3"}},
            bytes_part("audio", "audio/mp3"),
        ),
        (
            {
                "type": "file",
                "file": {"file_data": f"data:application/pdf;base64,{B64}", "filename": "a.pdf"},
            },
            bytes_part("file", "application/pdf", name="a.pdf"),
        ),
        ({"type": "file", "file": {"file_data": B64}}, bytes_part("file", None)),
        (
            {"type": "file", "file": {"file_id": "file-abc"}},
            {"type": "media", "kind": "file", "fileId": "file-abc"},
        ),
    ],
    ids=["data-uri-image", "url-image", "audio", "file-data-uri", "file-bare-base64", "file-id"],
)
def test_chat_parts(part: dict[str, Any], expected: dict[str, Any]) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": [part]}]}
    assert user_content(openai_chat, body) == [expected]


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        (
            {"type": "input_image", "image_url": f"data:image/jpeg;base64,{B64}", "detail": "low"},
            bytes_part("image", "image/jpeg", detail="low"),
        ),
        (
            {"type": "input_image", "file_id": "file-1"},
            {"type": "media", "kind": "image", "fileId": "file-1"},
        ),
        (
            {"type": "input_file", "file_url": "https://example.com/a.pdf", "filename": "a.pdf"},
            {"type": "media", "kind": "file", "url": "https://example.com/a.pdf", "name": "a.pdf"},
        ),
        (
            {"type": "input_audio", "input_audio": {"data": B64, "format": "wav"}},
            bytes_part("audio", "audio/wav"),
        ),
    ],
    ids=["data-uri-image", "file-id-image", "file-url", "audio"],
)
def test_responses_parts(part: dict[str, Any], expected: dict[str, Any]) -> None:
    body = {
        "model": "m",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "see"}, part]}],
    }
    assert user_content(openai_responses, body) == [{"type": "text", "text": "see"}, expected]


def test_a_responses_function_output_with_a_file_keeps_its_content_as_parts() -> None:
    items = [
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [{"type": "input_text", "text": "here"}, {"type": "input_file", "file_data": B64}],
        },
    ]
    [result] = user_content(openai_responses, {"model": "m", "input": items})
    assert result["result"] == [{"type": "text", "text": "here"}, bytes_part("file", None)]


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        (
            {"inlineData": {"mimeType": "application/pdf", "data": B64}},
            bytes_part("document", "application/pdf"),
        ),
        (
            {"inlineData": {"mimeType": "audio/ogg", "data": base64.urlsafe_b64encode(SIGNS).decode()}},
            {
                "type": "media",
                "kind": "audio",
                "mediaType": "audio/ogg",
                "sha256": hashlib.sha256(SIGNS).hexdigest(),
                "byteLength": len(SIGNS),
                "data": "+/+/+/+/+/+/",
            },
        ),
        (
            {
                "fileData": {
                    "mimeType": "video/mp4",
                    "fileUri": "https://example.com/f/1",
                    "displayName": "clip",
                }
            },
            {
                "type": "media",
                "kind": "file",
                "mediaType": "video/mp4",
                "url": "https://example.com/f/1",
                "name": "clip",
            },
        ),
    ],
    ids=["pdf", "url-safe-audio", "file-uri"],
)
def test_gemini_parts(part: dict[str, Any], expected: dict[str, Any]) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "see"}, part]}]}
    assert user_content(gemini, body, path=GEMINI_PATH) == [{"type": "text", "text": "see"}, expected]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: anthropic_user({"type": "image", "source": {"type": "base64", "data": "not base64!"}}),
            "messages[0].content[0].source.data must be base64 data",
        ),
        (
            lambda: anthropic_user({"type": "image", "source": {"type": "url", "url": "u"}, "title": "T"}),
            "the field title of a media block is not supported yet; a replay compares only the fields "
            "Blackbox records, so this one would not be compared (messages[0].content[0].title)",
        ),
        (
            lambda: user_content(
                openai_chat,
                {
                    "messages": [
                        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x"}}]}
                    ]
                },
            ),
            "messages[0].content[0].image_url.url must be a base64 data: URI",
        ),
        (
            lambda: user_content(
                gemini,
                {
                    "contents": [
                        {"role": "model", "parts": [{"inlineData": {"mimeType": "image/png", "data": B64}}]}
                    ]
                },
                path=GEMINI_PATH,
            ),
            "a inlineData part in a model content is not supported yet; a model content is recorded as its "
            "text and function calls (contents[0].parts[0])",
        ),
    ],
    ids=["bad-base64", "image-title", "bad-data-uri", "gemini-model-media"],
)
def test_refusals_name_the_field(call: Any, message: str) -> None:
    with pytest.raises(BlackboxUnsupportedError) as caught:
        call()
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_without_bytes_drops_data_everywhere_and_copies_only_what_it_changes() -> None:
    text_only = {"messages": [{"role": "user", "content": "hi"}], "tools": []}
    assert without_bytes(text_only) is text_only
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}}
    messages = [
        {"role": "user", "content": "plain"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "shot", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [image]}]},
    ]
    payload = anthropic.normalize_request({"model": "m", "max_tokens": 8, "messages": messages}, CallIds())
    stripped = without_bytes(payload)
    assert [part.get("data") for part in media_parts(payload)] == [B64]
    assert [part.get("data") for part in media_parts(stripped)] == [None]
    assert stripped["messages"][0] is payload["messages"][0]
    assert media_parts(stripped)[0]["sha256"] == DIGEST
