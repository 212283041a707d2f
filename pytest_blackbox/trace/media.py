"""Media parts of a ``model_input``: finding them, and the form a cassette or a comparison keeps.

A media part (``{"type": "media", "kind", …}``) stands for an image, document, audio clip or file a
request sent. Its ``data`` (the bytes, base64) is optional: a cassette recorded with ``media="digest"``
keeps only ``sha256`` and ``byteLength``, so requests are compared by digest, whichever way each side
was recorded. See docs/cassette-format.md#media-parts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final, TypeGuard, TypeVar, cast

from .prefix import same_start

__all__ = ["MEDIA_PART", "is_part_list", "media_parts", "message_parts", "without_bytes"]

#: The ``type`` of a media part.
MEDIA_PART: Final = "media"
P = TypeVar("P")


def message_parts(payload: Any) -> Iterator[dict[str, Any]]:
    """Every message part of a ``model_input`` payload, in order, with the parts nested in a tool
    result's content list and in a content document."""
    if isinstance(payload, dict) and isinstance(payload.get("messages"), list):
        for message in payload["messages"]:
            if isinstance(message, dict):
                yield from _walk(message.get("content"))


def media_parts(payload: Any) -> list[dict[str, Any]]:
    """Every media part of a ``model_input`` payload, in order."""
    return [part for part in message_parts(payload) if part.get("type") == MEDIA_PART]


def without_bytes(payload: P) -> P:
    """The payload with every media part's ``data`` left out: what a digest cassette holds and what a
    replay compares. The payload itself is returned when it has no bytes to leave out (so a text-only
    request is never copied); otherwise only the objects on the way to a media part are copied.

    Each message is looked at once: a session hands the same normalized message object to every
    request that repeats it (``CallIds.normalized``), so a long conversation is not walked again on
    every call: the messages the last payload started with are taken as they were (``same_start``),
    and the rest are looked up by identity.
    """
    global _LAST
    if not isinstance(payload, dict) or not isinstance(payload.get("messages"), list):
        return payload
    messages = payload["messages"]
    before, stripped_before, first_before = _LAST
    kept = same_start(messages, before)
    added = messages[kept:]
    new = [_stripped_message(message) for message in added]
    # where the first message that lost bytes is: among the kept ones as before, else among the new
    first = first_before if first_before < kept else kept + same_start(new, added)
    if first == len(messages):  # nothing lost bytes: the messages are their own stripped form
        unchanged = list(messages)
        _LAST = (unchanged, unchanged, first)
        return payload
    stripped = stripped_before[:kept] + new
    _LAST = (list(messages), stripped[:], first)
    return cast(P, {**payload, "messages": stripped})


#: The last payload's messages, what they became (the same list when none lost bytes), and the index
#: of the first one that lost bytes (their number if none did): the next request of a conversation
#: starts with the very same objects.
_LAST: tuple[list[Any], list[Any], int] = ([], [], 0)


#: Messages with bytes to leave out, already looked at, by identity (kept alive with them):
#: ``id → (message, stripped)``.
_SEEN: dict[int, tuple[Any, Any]] = {}
_SEEN_MAX: Final = 16384


def _stripped_message(message: Any) -> Any:
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list) or not any(map(_may_hold_bytes, content)):
        return message  # looking at it again costs less than remembering it
    entry = _SEEN.get(id(message))
    if entry is not None and entry[0] is message:
        return entry[1]
    new = _strip_list(content)
    result = message if new is None else {**message, "content": new}
    if len(_SEEN) >= _SEEN_MAX:
        _SEEN.clear()
    _SEEN[id(message)] = (message, result)
    return result


def _may_hold_bytes(part: Any) -> bool:
    """Whether a message part is one :func:`_strip_part` looks into: a media part, or a tool result
    whose value is a list (which may be media parts)."""
    if not isinstance(part, dict):
        return False
    kind = part.get("type")
    return kind == MEDIA_PART or (kind == "tool_result" and isinstance(part.get("result"), list))


def is_part_list(value: Any) -> TypeGuard[list[dict[str, Any]]]:
    """Whether a tool result's value is text and media parts (its content held media) rather than a
    value of the tool's own: a list of ``text`` and ``media`` parts with at least one ``media``."""
    if not isinstance(value, list):
        return False
    types = [item.get("type") if isinstance(item, dict) else None for item in value]
    return MEDIA_PART in types and all(kind in ("text", MEDIA_PART) for kind in types)


def _children(part: dict[str, Any]) -> Any:
    """The list of parts inside a part: a tool result's mixed content, a document's content blocks."""
    if part.get("type") == "tool_result":
        result = part.get("result")
        return result if is_part_list(result) else None
    if part.get("type") == MEDIA_PART:
        return part.get("content")
    return None


def _walk(parts: Any) -> Iterator[dict[str, Any]]:
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, dict):
                yield part
                yield from _walk(_children(part))


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
