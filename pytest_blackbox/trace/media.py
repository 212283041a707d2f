"""Media parts of a ``model_input``: finding them, and the form a cassette or a comparison keeps.

A media part (``{"type": "media", "kind", …}``) stands for an image, document, audio clip or file a
request sent. Its ``data`` (the bytes, base64) is optional: a cassette recorded with ``media="digest"``
keeps only ``sha256`` and ``byteLength``, so requests are compared by digest, whichever way each side
was recorded. See docs/cassette-format.md#media-parts.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar, cast

__all__ = ["MEDIA_PART", "has_media", "media_parts", "without_bytes"]

#: The ``type`` of a media part.
MEDIA_PART: Final = "media"
P = TypeVar("P")


def media_parts(payload: Any) -> list[dict[str, Any]]:
    """Every media part of a ``model_input`` payload, in order (nested document content included)."""
    found: list[dict[str, Any]] = []
    if isinstance(payload, dict) and isinstance(payload.get("messages"), list):
        for message in payload["messages"]:
            if isinstance(message, dict):
                _collect(message.get("content"), found)
    return found


def has_media(payload: Any) -> bool:
    """Whether a ``model_input`` payload holds a media part."""
    return bool(media_parts(payload))


def without_bytes(payload: P) -> P:
    """The payload with every media part's ``data`` left out: what a digest cassette holds and what a
    replay compares. The payload itself is returned when it has no bytes to leave out (so a text-only
    request is never copied); otherwise only the objects on the way to a media part are copied."""
    if not isinstance(payload, dict) or not isinstance(payload.get("messages"), list):
        return payload
    messages = payload["messages"]
    changed = False
    stripped: list[Any] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        new = _strip_list(content)
        if new is not None:
            message = {**message, "content": new}
            changed = True
        stripped.append(message)
    return cast(P, {**payload, "messages": stripped}) if changed else payload


def _children(part: dict[str, Any]) -> Any:
    """The list of parts inside a part: a tool result's mixed content, a document's content blocks."""
    if part.get("type") == "tool_result":
        return part.get("result")
    if part.get("type") == MEDIA_PART:
        return part.get("content")
    return None


def _collect(parts: Any, found: list[dict[str, Any]]) -> None:
    if not isinstance(parts, list):
        return
    for part in parts:
        if isinstance(part, dict):
            if part.get("type") == MEDIA_PART:
                found.append(part)
            _collect(_children(part), found)


def _strip_list(parts: Any) -> list[Any] | None:
    """A copy of a parts list without bytes, or ``None`` when nothing in it had any."""
    if not isinstance(parts, list):
        return None
    result: list[Any] | None = None
    for position, part in enumerate(parts):
        new = _strip_part(part) if isinstance(part, dict) else None
        if new is not None:
            if result is None:
                result = list(parts)
            result[position] = new
    return result


def _strip_part(part: dict[str, Any]) -> dict[str, Any] | None:
    inner = _strip_list(_children(part))
    if part.get("type") != MEDIA_PART or "data" not in part:
        if inner is None:
            return None
        key = "result" if part.get("type") == "tool_result" else "content"
        return {**part, key: inner}
    new = {key: value for key, value in part.items() if key != "data"}
    if inner is not None:
        new["content"] = inner
    return new
