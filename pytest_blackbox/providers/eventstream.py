"""The AWS event-stream framing (``application/vnd.amazon.eventstream``) Amazon Bedrock streams in.

Each message is binary: a prelude (total length, headers length, the prelude's CRC32), headers
(a one-byte name length, the name, a type byte and the typed value), the payload and the CRC32 of
everything before it. Bedrock's streams carry JSON payloads and name each event in the
``:event-type`` header (``:message-type`` is ``event``, or ``exception`` for an error, whose kind is
in ``:exception-type``).

Reading follows the SDK decoders: a message the body ends in the middle of is dropped, so a stream
cut short lacks its closing event and the protocol module refuses it; a message whose checksum does
not match is refused outright. See docs/providers.md#anthropic-on-amazon-bedrock.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .common import label
from .sse import stream_problem

__all__ = ["EVENT_STREAM_HEADERS", "EventMessage", "encode_message", "parse_messages", "read_events"]

#: The headers a replayed Bedrock stream is served with.
EVENT_STREAM_HEADERS: Final = (("content-type", "application/vnd.amazon.eventstream"),)

_PRELUDE: Final = struct.Struct(">III")
_CRC: Final = struct.Struct(">I")
_STRING: Final = 7
#: Header value type → the fixed width of its value (``None``: a two-byte length comes first).
_WIDTHS: Final[dict[int, int | None]] = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 6: None, 7: None, 8: 8, 9: 16}


@dataclass(frozen=True)
class EventMessage:
    """One message of a stream: its string headers (others are kept as raw bytes) and payload."""

    headers: dict[str, Any]
    payload: bytes

    @property
    def kind(self) -> str:
        """``:event-type`` of an event, ``:exception-type`` of an exception (empty when absent)."""
        if self.headers.get(":message-type", "event") == "event":
            return str(self.headers.get(":event-type", ""))
        return str(self.headers.get(":exception-type") or self.headers.get(":error-code") or "")

    @property
    def is_event(self) -> bool:
        return bool(self.headers.get(":message-type", "event") == "event")


def encode_message(event_type: str, payload: Any) -> bytes:
    """One ``event`` message carrying ``payload`` as compact JSON, as Bedrock sends its events."""
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    headers = b"".join(
        _string_header(name, value)
        for name, value in _event_headers(event_type).items()  # order as Bedrock sends them
    )
    total = _PRELUDE.size + len(headers) + len(body) + _CRC.size
    prelude = struct.pack(">II", total, len(headers))
    prelude += _CRC.pack(zlib.crc32(prelude))
    message = prelude + headers + body
    return message + _CRC.pack(zlib.crc32(message))


def _event_headers(event_type: str) -> Mapping[str, str]:
    return {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}


def _string_header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode("utf-8"), value.encode("utf-8")
    return (
        bytes([len(raw_name)]) + raw_name + bytes([_STRING]) + struct.pack(">H", len(raw_value)) + raw_value
    )


def parse_messages(body: bytes) -> list[EventMessage]:
    """Every complete message of a stream body, in order (a message cut off at the end is dropped)."""
    messages: list[EventMessage] = []
    offset = 0
    while len(body) - offset >= _PRELUDE.size:
        total, headers_length, prelude_crc = _PRELUDE.unpack_from(body, offset)
        if zlib.crc32(body[offset : offset + 8]) != prelude_crc:
            stream_problem(
                f"has a damaged event-stream message (its prelude checksum, message {len(messages)})"
            )
        if len(body) - offset < total:
            break
        message = body[offset : offset + total]
        if zlib.crc32(message[:-4]) != _CRC.unpack_from(message, total - 4)[0]:
            stream_problem(f"has a damaged event-stream message (its checksum, message {len(messages)})")
        start = _PRELUDE.size
        headers = _headers(message[start : start + headers_length], len(messages))
        messages.append(EventMessage(headers, message[start + headers_length : total - 4]))
        offset += total
    return messages


def _headers(raw: bytes, position: int) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    offset = 0
    try:
        while offset < len(raw):
            name_length = raw[offset]
            name = raw[offset + 1 : offset + 1 + name_length].decode("utf-8")
            offset += 1 + name_length
            kind = raw[offset]
            offset += 1
            width = _WIDTHS[kind]
            if width is None:
                (width,) = struct.unpack_from(">H", raw, offset)
                offset += 2
            value = raw[offset : offset + width]
            headers[name] = value.decode("utf-8") if kind == _STRING else value
            offset += width
    except (IndexError, KeyError, struct.error, UnicodeDecodeError):
        stream_problem(f"has event-stream headers Blackbox cannot read (message {position})")
    return headers


def read_events(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Every complete event of a stream body as (event type, JSON payload); an exception is refused."""
    events: list[tuple[str, dict[str, Any]]] = []
    for position, message in enumerate(parse_messages(body)):
        if not message.is_event:
            stream_problem(f"reported an error ({label(message.kind or None)}) at message {position}")
        events.append((message.kind, _payload(message, position)))
    return events


def _payload(message: EventMessage, position: int) -> dict[str, Any]:
    """A message's JSON object payload, or a refusal naming its position in the stream."""
    try:
        value = json.loads(message.payload)
    except ValueError:
        stream_problem(f"has an event whose payload is not JSON (message {position})")
    if not isinstance(value, dict):
        stream_problem(f"has an event whose payload is not a JSON object (message {position})")
    return value
