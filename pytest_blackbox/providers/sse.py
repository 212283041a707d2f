"""Server-sent events as the providers stream them: reading a whole recorded body, writing replay events.

Reading follows the SSE rules the SDKs' decoders follow (lines end at CR, LF or CRLF; ``data:`` lines
of one event are joined with a newline; an event is dispatched by a blank line; comment lines are
skipped), so a body is split into the same events the agent's SDK saw. An event the body ends in the
middle of is dropped, as the SDKs drop it: a stream cut short then lacks its closing event and is
refused by the provider module instead of recorded as if it were whole.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final, NoReturn

from ..errors import BlackboxUnsupportedError
from ..trace.canonical import js_stringify

__all__ = [
    "SSE_HEADERS",
    "TEXT_PIECE",
    "SseEvent",
    "StreamCutShort",
    "encode_event",
    "event_object",
    "parse_events",
    "pieces",
    "stream_problem",
]

#: The headers a replayed stream is served with.
SSE_HEADERS: Final = (("content-type", "text/event-stream"), ("cache-control", "no-cache"))

#: Characters per replayed text or JSON delta: fixed, so a replay streams the same events every run.
TEXT_PIECE: Final = 16

_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class SseEvent:
    """One dispatched event: its ``event:`` name (``None`` when the stream sends none) and its data."""

    event: str | None
    data: str


class StreamCutShort(BlackboxUnsupportedError):
    """A stream that ended before its answer did (and reported no error): cut, or closed by the client.

    ``whole`` is the answer when only the stream's closing marker was left unread (Anthropic's
    ``message_stop`` after the ``message_delta`` that names the stop reason): a client that stops
    reading there has read every part of the answer, and a replay's full stream gives it the same.
    """

    def __init__(self, message: str, whole: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.whole = whole


def stream_problem(problem: str, *, cut_short: bool = False, whole: dict[str, Any] | None = None) -> NoReturn:
    """Refuse a streamed body: the call failed or was cut, so there is no whole answer to record.

    ``cut_short``: the body simply stops before the answer's end (no error event): the upstream was
    cut, or the client closed the stream early, which the recording tells apart; ``whole`` as on
    :class:`StreamCutShort`.
    """
    message = f"the streamed response {problem}; the call did not complete, so it is not recorded"
    if cut_short:
        raise StreamCutShort(message, whole)
    raise BlackboxUnsupportedError(message)


def parse_events(body: bytes) -> list[SseEvent]:
    """Every complete event of a stream body, in order."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        stream_problem("is not UTF-8 text")
    events: list[SseEvent] = []
    name: str | None = None
    data: list[str] = []
    lines = _LINE_END.split(text)
    for line in lines[:-1]:  # the last piece has no line end: an unfinished line, like an unfinished event
        if not line:
            if name is not None or data:
                events.append(SseEvent(name, "\n".join(data)))
            name, data = None, []
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return events


def event_object(event: SseEvent, position: int) -> dict[str, Any]:
    """An event's data as a JSON object, or a refusal naming the event's position in the stream."""
    try:
        value = json.loads(event.data)
    except ValueError:
        stream_problem(f"has an event whose data is not JSON (event {position})")
    if not isinstance(value, dict):
        stream_problem(f"has an event whose data is not a JSON object (event {position})")
    return value


def encode_event(event: str | None, data: Any) -> bytes:
    """One event as it goes on the wire: an optional ``event:`` line, one ``data:`` line, a blank line.

    ``data`` is written as compact JSON, whose escapes keep it on one line; a string is written as
    it is (the ``[DONE]`` marker).
    """
    line = data if isinstance(data, str) else js_stringify(data)
    head = f"event: {event}\n" if event is not None else ""
    return f"{head}data: {line}\n\n".encode()


def pieces(text: str) -> list[str]:
    """``text`` cut into :data:`TEXT_PIECE`-character pieces; none for an empty text."""
    return [text[start : start + TEXT_PIECE] for start in range(0, len(text), TEXT_PIECE)]
