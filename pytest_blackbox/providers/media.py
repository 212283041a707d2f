"""Media parts from every protocol's image, document, audio and file blocks: one neutral family.

A block's bytes (base64 or a ``data:`` URI) become ``sha256``, ``byteLength`` and ``data`` (dropped
again by a digest recording, see ``trace.media``); a URL or a provider file id is kept as the agent
sent it and compared as is (nothing is fetched). The few block fields that change what the model sees
are kept under neutral names; any other field is refused, naming it. See
docs/cassette-format.md#media-parts.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Literal

from ..trace.media import MEDIA_PART
from .common import label, malformed, require_str, unsupported

__all__ = [
    "MediaKind",
    "bytes_part",
    "check_fields",
    "data_uri_part",
    "message_content",
    "reference_part",
    "text_or_media",
    "with_extras",
]

MediaKind = Literal["image", "document", "audio", "file"]

_DATA_URI: Final = re.compile(r"data:([^;,]*)((?:;[^;,]*)*);base64,(.*)", re.S)
_FIELD_ADVICE: Final = "a replay compares only the fields Blackbox records, so this one would not be compared"


def check_fields(block: Mapping[str, Any], allowed: Iterable[str], at: str) -> None:
    """Refuse any field of a media block (or its source) that is not recorded, naming it."""
    known = set(allowed)
    for key, value in block.items():
        if key not in known and value is not None:
            unsupported(f"the field {key} of a media block", _FIELD_ADVICE, f"{at}.{key}")


def bytes_part(kind: MediaKind, media_type: Any, data: Any, at: str) -> dict[str, Any]:
    """A media part for bytes sent as base64: their digest, length and (for inline cassettes) the data."""
    text = require_str(data, at)
    try:
        # google-genai sends the URL-safe alphabet; the other SDKs the standard one.
        altchars = b"-_" if "-" in text or "_" in text else None
        raw = base64.b64decode(text, altchars, validate=True)
    except (binascii.Error, ValueError):
        malformed(at, "base64 data")
    part: dict[str, Any] = {"type": MEDIA_PART, "kind": kind}
    if isinstance(media_type, str) and media_type:
        part["mediaType"] = media_type
    part["sha256"] = hashlib.sha256(raw).hexdigest()
    part["byteLength"] = len(raw)
    # Kept in the standard alphabet: no "-" or "_" that a credential scan could read as a key.
    part["data"] = text if altchars is None else text.replace("-", "+").replace("_", "/")
    return part


def data_uri_part(kind: MediaKind, uri: str, at: str) -> dict[str, Any] | None:
    """A media part for a ``data:…;base64,…`` URI, or ``None`` when ``uri`` is not one."""
    found = _DATA_URI.fullmatch(uri)
    if found is None:
        if uri.startswith("data:"):
            malformed(at, "a base64 data: URI (data:<media type>;base64,<data>)")
        return None
    return bytes_part(kind, found.group(1), found.group(3), at)


def reference_part(kind: MediaKind, key: Literal["url", "fileId"], value: Any, at: str) -> dict[str, Any]:
    """A media part for a URL or a provider file id: the agent's own value, compared as is."""
    return {"type": MEDIA_PART, "kind": kind, key: require_str(value, at)}


def with_extras(part: dict[str, Any], extras: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """``part`` with the neutral extras that are set (``None`` is not set), in the order given."""
    for key, value in extras:
        if value is not None:
            part[key] = value
    return part


def message_content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """A message's (or a tool result's) content: its text joined with a blank line when it is only
    text (as every cassette without media holds it), else its text and media parts in order."""
    if all(part["type"] == "text" for part in parts):
        return "\n\n".join(part["text"] for part in parts)
    return parts


# -- Anthropic Messages: image and document blocks ---------------------------------------------

#: Fields of an image or document block that are not recorded and change nothing the model sees.
_ANTHROPIC_IGNORED: Final = ("type", "source", "cache_control")
_ANTHROPIC_DOCUMENT: Final = ("title", "context", "citations")


def anthropic_block(block: dict[str, Any], at: str) -> dict[str, Any]:
    """The media part of an Anthropic ``image`` or ``document`` block (``at`` names the block)."""
    kind: MediaKind = "image" if block.get("type") == "image" else "document"
    document = kind == "document"
    check_fields(block, _ANTHROPIC_IGNORED + (_ANTHROPIC_DOCUMENT if document else ()), at)
    source = block.get("source")
    if not isinstance(source, dict):
        malformed(f"{at}.source", "a JSON object")
    part = _anthropic_source(kind, source, f"{at}.source")
    if not document:
        return part
    citations = block.get("citations")
    enabled = citations.get("enabled") if isinstance(citations, dict) else None
    if citations is not None:
        check_fields(citations, ("enabled",), f"{at}.citations")
    return with_extras(
        part, (("title", block.get("title")), ("context", block.get("context")), ("citations", enabled))
    )


def _anthropic_source(kind: MediaKind, source: dict[str, Any], at: str) -> dict[str, Any]:
    origin = source.get("type")
    if origin == "base64":
        check_fields(source, ("type", "media_type", "data"), at)
        return bytes_part(kind, source.get("media_type"), source.get("data"), f"{at}.data")
    if origin == "url":
        check_fields(source, ("type", "url"), at)
        return reference_part(kind, "url", source.get("url"), f"{at}.url")
    if origin == "file":
        check_fields(source, ("type", "file_id"), at)
        return reference_part(kind, "fileId", source.get("file_id"), f"{at}.file_id")
    if origin == "text" and kind == "document":
        check_fields(source, ("type", "media_type", "data"), at)
        part: dict[str, Any] = {"type": MEDIA_PART, "kind": kind}
        return with_extras(
            part,
            (
                ("mediaType", source.get("media_type")),
                ("text", require_str(source.get("data"), f"{at}.data")),
            ),
        )
    if origin == "content" and kind == "document":
        check_fields(source, ("type", "content"), at)
        return {
            "type": MEDIA_PART,
            "kind": kind,
            "content": anthropic_content(source.get("content"), f"{at}.content"),
        }
    unsupported(
        f"{kind} source type {label(origin)}",
        "use a base64, url, file, text or content source",
        f"{at}.type",
    )


def anthropic_content(content: Any, at: str) -> list[dict[str, Any]]:
    """Text, image and document blocks (a tool result's or a content document's) as parts, in order."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        malformed(at, "a string or a list of content blocks")
    return mixed_content(content, at, _anthropic_media)


def _anthropic_media(block: dict[str, Any], at: str) -> dict[str, Any] | None:
    return anthropic_block(block, at) if block.get("type") in ("image", "document") else None


def mixed_content(
    content: list[Any],
    at: str,
    read_media: Callable[[dict[str, Any], str], dict[str, Any] | None],
    text_types: tuple[str, ...] = ("text",),
) -> list[dict[str, Any]]:
    """A content list as text and media parts, in order; a block that is neither is refused."""
    parts: list[dict[str, Any]] = []
    for index, block in enumerate(content):
        where = f"{at}[{index}]"
        if not isinstance(block, dict):
            malformed(where, "a JSON object")
        kind = block.get("type")
        if kind in text_types:
            parts.append({"type": "text", "text": require_str(block.get("text"), f"{where}.text")})
        elif (part := read_media(block, where)) is not None:
            parts.append(part)
        else:
            unsupported(
                f"{label(kind)} content",
                "only text and media (image, document, audio, file) can be recorded here",
                where,
            )
    return parts


def text_or_media(
    content: Any,
    at: str,
    as_text: Callable[[Any, str], str],
    read_media: Callable[[dict[str, Any], str], dict[str, Any] | None],
    media_types: tuple[str, ...],
    text_types: tuple[str, ...] = ("text",),
) -> str | list[dict[str, Any]]:
    """OpenAI content: read by ``as_text`` (as every cassette without media holds it) unless it
    holds a block of one of the ``media_types``; then its text and media parts, in order."""
    if not isinstance(content, list) or not any(
        isinstance(block, dict) and block.get("type") in media_types for block in content
    ):
        return as_text(content, at)
    return message_content(mixed_content(content, at, read_media, text_types))


def _object(value: Any, at: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        malformed(at, "a JSON object")
    return value


def _bytes_or_uri(
    kind: MediaKind, value: Any, at: str, key: Literal["url", "fileId"] = "url"
) -> dict[str, Any]:
    """A ``data:`` URI's bytes, else the value as a URL (or file id) reference."""
    text = require_str(value, at)
    return data_uri_part(kind, text, at) or reference_part(kind, key, text, at)


def _audio(block: dict[str, Any], at: str) -> dict[str, Any]:
    audio = _object(block.get("input_audio"), f"{at}.input_audio")
    check_fields(audio, ("data", "format"), f"{at}.input_audio")
    audio_format = audio.get("format")
    media_type = f"audio/{audio_format}" if isinstance(audio_format, str) else None
    return bytes_part("audio", media_type, audio.get("data"), f"{at}.input_audio.data")


def _file_data(value: Any, at: str) -> dict[str, Any]:
    """OpenAI ``file_data``: a ``data:`` URI, or bare base64 (the media type then unknown)."""
    text = require_str(value, at)
    return data_uri_part("file", text, at) or bytes_part("file", None, text, at)


# -- OpenAI Chat Completions: image_url, input_audio and file parts ----------------------------

CHAT_MEDIA: Final = ("image_url", "input_audio", "file")


def chat_media(block: dict[str, Any], at: str) -> dict[str, Any] | None:
    """The media part of a Chat Completions content part, or ``None`` for a part of another type."""
    kind = block.get("type")
    if kind not in CHAT_MEDIA:
        return None
    check_fields(block, ("type", kind), at)
    if kind == "input_audio":
        return _audio(block, at)
    inner = _object(block.get(kind), f"{at}.{kind}")
    if kind == "image_url":
        check_fields(inner, ("url", "detail"), f"{at}.image_url")
        part = _bytes_or_uri("image", inner.get("url"), f"{at}.image_url.url")
        return with_extras(part, (("detail", inner.get("detail")),))
    check_fields(inner, ("file_data", "file_id", "filename"), f"{at}.file")
    if inner.get("file_data") is not None:
        part = _file_data(inner["file_data"], f"{at}.file.file_data")
    elif inner.get("file_id") is not None:
        part = reference_part("file", "fileId", inner["file_id"], f"{at}.file.file_id")
    else:
        malformed(f"{at}.file", "a file with file_data or file_id")
    return with_extras(part, (("name", inner.get("filename")),))


# -- OpenAI Responses: input_image, input_file and input_audio parts ---------------------------

RESPONSES_MEDIA: Final = ("input_image", "input_file", "input_audio")


def responses_media(block: dict[str, Any], at: str) -> dict[str, Any] | None:
    """The media part of a Responses content part, or ``None`` for a part of another type."""
    kind = block.get("type")
    if kind == "input_audio":
        check_fields(block, ("type", "input_audio"), at)
        return _audio(block, at)
    if kind == "input_image":
        check_fields(block, ("type", "image_url", "file_id", "detail"), at)
        if block.get("image_url") is not None:
            part = _bytes_or_uri("image", block["image_url"], f"{at}.image_url")
        elif block.get("file_id") is not None:
            part = reference_part("image", "fileId", block["file_id"], f"{at}.file_id")
        else:
            malformed(at, "an input_image with image_url or file_id")
        return with_extras(part, (("detail", block.get("detail")),))
    if kind != "input_file":
        return None
    check_fields(block, ("type", "file_data", "file_id", "file_url", "filename"), at)
    if block.get("file_data") is not None:
        part = _file_data(block["file_data"], f"{at}.file_data")
    elif block.get("file_url") is not None:
        part = reference_part("file", "url", block["file_url"], f"{at}.file_url")
    elif block.get("file_id") is not None:
        part = reference_part("file", "fileId", block["file_id"], f"{at}.file_id")
    else:
        malformed(at, "an input_file with file_data, file_url or file_id")
    return with_extras(part, (("name", block.get("filename")),))


# -- Gemini: inlineData and fileData parts -----------------------------------------------------

GEMINI_MEDIA: Final = ("inlineData", "fileData")


def gemini_media(key: str, value: Any, at: str) -> dict[str, Any]:
    """The media part of a Gemini ``inlineData`` or ``fileData`` part (``at`` names the part)."""
    where = f"{at}.{key}"
    blob = _object(value, where)
    kind = _gemini_kind(blob.get("mimeType") or blob.get("mime_type"))
    if key == "inlineData":
        check_fields(blob, ("mimeType", "mime_type", "data", "displayName", "display_name"), where)
        part = bytes_part(
            kind, blob.get("mimeType") or blob.get("mime_type"), blob.get("data"), f"{where}.data"
        )
    else:
        check_fields(
            blob, ("mimeType", "mime_type", "fileUri", "file_uri", "displayName", "display_name"), where
        )
        part = {"type": MEDIA_PART, "kind": kind}
        with_extras(part, (("mediaType", blob.get("mimeType") or blob.get("mime_type")),))
        part["url"] = require_str(blob.get("fileUri") or blob.get("file_uri"), f"{where}.fileUri")
    return with_extras(part, (("name", blob.get("displayName") or blob.get("display_name")),))


def _gemini_kind(media_type: Any) -> MediaKind:
    """Gemini says only a media type: images, audio and documents by it, anything else a file."""
    text = media_type if isinstance(media_type, str) else ""
    if text.startswith("image/"):
        return "image"
    if text.startswith("audio/"):
        return "audio"
    if text in ("application/pdf", "text/plain"):
        return "document"
    return "file"
