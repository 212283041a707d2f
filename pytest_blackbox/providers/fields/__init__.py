"""Every field of a provider request and response, named: compared or given back, dropped on purpose,
or refused.

A field Blackbox does not know is an API addition a cassette could neither compare (in a request) nor
give back (in a response), so it must never be dropped silently: each protocol lists the top-level
fields of its request (those compared, and those dropped on purpose because they change how the
answer travels, is billed or cached, not what it says) and, at every level it reads, the fields of
its response (the response, its choices, candidates, output items, content blocks and parts, and the
stream's events and deltas) it gives back or drops on purpose (ids, usage, timings, fingerprints:
docs/providers.md lists them). Any other field with a value (``null`` counts as absent, as the SDKs
read it) is refused, named by its path (``request.x_new``, ``choices[0].message.reasoning_content``),
unless the run accepts losing it (the ``drop_fields`` setting). Each table also names the fields and
kinds it refuses on purpose, so a test can pin that the tables cover every field of the SDKs' request
parameter and response types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ...vocabulary import field_pattern as field_pattern
from ..sse import event_object, parse_events
from . import anthropic, gemini, openai_chat, openai_responses
from .shapes import Fields, Kinds, Shape, unknown_fields

__all__ = [
    "REQUEST_ROOT",
    "TABLES",
    "Fields",
    "Kinds",
    "Shape",
    "Table",
    "field_pattern",
    "unknown_in_request",
    "unknown_in_response",
    "unknown_in_stream",
]


@dataclass(frozen=True)
class Table:
    """One protocol's fields: its request's top-level fields (and a level below where the protocol
    nests its settings: Responses ``text``, Gemini ``generationConfig``), its response (a JSON answer,
    or what its stream ends with) and its stream events (``by_type``: an event's path starts with its
    ``type``, as Anthropic and Responses name events; otherwise a chunk's path is that of the response
    it is a piece of)."""

    request: Shape
    response: Shape
    event: Shape
    by_type: bool
    #: The stream's closing response is checked too (Responses: its closing event carries it whole).
    answer_in_stream: bool = False


TABLES: Final[Mapping[str, Table]] = {
    "anthropic": Table(anthropic.REQUEST, anthropic.MESSAGE, anthropic.EVENTS, by_type=True),
    "openai_chat": Table(openai_chat.REQUEST, openai_chat.COMPLETION, openai_chat.CHUNK, by_type=False),
    "openai_responses": Table(
        openai_responses.REQUEST,
        openai_responses.RESPONSE,
        openai_responses.EVENTS,
        by_type=True,
        answer_in_stream=True,
    ),
    "gemini": Table(gemini.REQUEST, gemini.RESPONSE, gemini.RESPONSE, by_type=False),
}
#: Where a request's field paths start, so ``drop_fields`` tells them from a response's.
REQUEST_ROOT: Final = "request"


def unknown_in_request(protocol: str, body: Any) -> list[str]:
    """The paths (``request.x_new``) of the fields of a request body its protocol's table does not know."""
    return list(unknown_fields(body, TABLES[protocol].request, REQUEST_ROOT))


def unknown_in_response(protocol: str, body: Any) -> list[str]:
    """The paths of the fields of a JSON response its protocol's table does not know, in order."""
    return list(unknown_fields(body, TABLES[protocol].response, ""))


def unknown_in_stream(protocol: str, body: bytes, answer: Any) -> list[str]:
    """The paths of the fields of a whole event stream's events (and of what it ends with, where that
    is the response itself) its protocol's table does not know, each once, in order."""
    table = TABLES[protocol]
    found: dict[str, None] = {}
    for position, event in enumerate(parse_events(body)):
        if event.data.startswith("[DONE]"):
            break
        data = event_object(event, position)
        root = str(data.get("type")) if table.by_type else ""
        found.update(dict.fromkeys(unknown_fields(data, table.event, root)))
    if table.answer_in_stream:
        found.update(dict.fromkeys(unknown_fields(answer, table.response, "")))
    return list(found)
