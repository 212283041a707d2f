"""Gemini responses → ``model_output``: the one candidate's text and calls, its finish reason, streams.

See docs/providers.md#google-gemini-google-genai.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ...trace.model import ModelOutput, Omitted, Stop, ToolCallRef
from .. import choices as several
from ..common import (
    CallIds,
    final_answer,
    json_copy,
    label,
    list_field,
    malformed,
    require_object,
    tool_calls_output,
    unsupported,
)
from ..content import ordered_output, server_result
from ..envelope import with_envelope
from ..sse import event_object, parse_events, stream_problem
from .parts import (
    CODE_PARTS,
    NOT_RECORDED,
    CodeIds,
    Conversation,
    Item,
    bind_calls,
    content_parts,
    read_item,
    turn_parts,
)

#: Wire finish reason → neutral stop (a replay sends each back as the reason it came from).
FINISH_REASONS: Final[dict[str, Stop | None]] = {
    "STOP": None,
    "MAX_TOKENS": "length",
    "SAFETY": "refusal",
    "RECITATION": "recitation",
    "BLOCKLIST": "blocklist",
    "PROHIBITED_CONTENT": "prohibitedContent",
    "SPII": "personalData",
    "LANGUAGE": "language",
    "MALFORMED_FUNCTION_CALL": "malformedCall",
    "UNEXPECTED_TOOL_CALL": "unexpectedCall",
    "TOO_MANY_TOOL_CALLS": "tooManyCalls",
    "OTHER": "other",
}
#: Candidate fields only server-side features produce; a replay could not give them back.
_SERVER_CANDIDATE_FIELDS: Final = ("logprobsResult",)
#: Candidate metadata the built-in tools return → the tool it is recorded under.
METADATA_TOOLS: Final = {"groundingMetadata": "googleSearch", "urlContextMetadata": "urlContext"}


def normalize_response(
    body: Any, ids: CallIds, conversation: Conversation | None = None, *, whole_text: bool = False
) -> ModelOutput:
    """The ``model_output`` payload for a generateContent response body.

    Everything is checked before an id is assigned, so a refused response assigns no ``call-N``.
    Each call is bound to its place after ``conversation`` (the request's messages), so a later
    history without ids finds it; without a conversation, id-less calls get new ids only. Built-in
    tools' results (candidate metadata, code execution parts) make the output's ``content`` ordered.
    ``whole_text``: a stream sent the answer's text in one chunk, where google-genai parses it into
    ``parsed``; a replay then sends it whole too (``omitted: ["textPieces"]``).
    """
    response = require_object(body, "the response body", "response")
    candidates = response.get("candidates")
    if isinstance(candidates, list) and len(candidates) > 1:  # candidateCount > 1
        ones = several.split_choices(response, "candidates")
        outputs = [
            normalize_response(one, ids, conversation if n == 0 else None) for n, one in enumerate(ones)
        ]
        if conversation is not None:
            bind_calls(ids, conversation, list(outputs))
        return several.with_choices(outputs)
    candidate = _candidate(response)
    items = _response_content(candidate)
    stop = _stop(candidate.get("finishReason"), has_calls=any(kind == "functionCall" for kind, _ in items))
    for field in _SERVER_CANDIDATE_FIELDS:
        if candidate.get(field) is not None:
            unsupported(f"{field} in a response", NOT_RECORDED, f"candidates[0].{field}")
    results = [
        server_result("", tool, json_copy(candidate[field]))
        for field, tool in METADATA_TOOLS.items()
        if candidate.get(field) is not None
    ]

    def call_id(position: int, provider_id: str | None, name: str) -> str:
        neutral = ids.neutral(provider_id, name) if provider_id is not None else ids.fresh()
        if conversation is not None:
            ids.bind(conversation.call_key(position), neutral, name)
        return neutral

    code = CodeIds(ids, conversation, answer=True)
    if not results and not any(kind in CODE_PARTS for kind, _ in items):
        return _plain_output(items, call_id, stop, _omitted(candidate, code, whole_text))
    found = [{**result, "toolCallId": ids.fresh_server()} for result in results]
    parts = found + turn_parts(items, code, call_id, "candidates[0].content")
    return with_envelope(ordered_output(parts, stop), omitted=_omitted(candidate, code, whole_text))


def _plain_output(
    items: list[Item], call_id: Callable[[int, str | None, str], str], stop: Stop | None, omitted: Any
) -> ModelOutput:
    """A response of text and function calls: the text joined, then the calls (as every reader expects)."""
    text = "".join(value for kind, value in items if kind == "text")
    calls: list[ToolCallRef] = []
    for position, (provider_id, name, args) in enumerate(v for kind, v in items if kind == "functionCall"):
        calls.append(
            {"toolCallId": call_id(position, provider_id, name), "toolName": name, "toolInput": args}
        )
    if calls:
        return with_envelope(
            tool_calls_output(calls, text, "length" if stop == "length" else None), omitted=omitted
        )
    return with_envelope(final_answer(text, stop), omitted=omitted)


def _omitted(candidate: dict[str, Any], code: CodeIds, whole_text: bool) -> tuple[Omitted, ...]:
    """The wire fields this response left out that a replay otherwise sends (and, for a stream whose
    text came whole, the pieces a replay otherwise cuts it into)."""
    omitted: tuple[Omitted, ...] = () if "index" in candidate else ("candidateIndex",)
    omitted += ("codeExecutionId",) if code.without_id else ()
    return omitted + (("textPieces",) if whole_text else ())


def _candidate(response: dict[str, Any]) -> dict[str, Any]:
    candidates = list_field(response, "candidates", "response")
    if not candidates:
        feedback = response.get("promptFeedback")
        reason = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if reason is not None:
            unsupported(
                f"a blocked prompt (blockReason {label(reason)})",
                "a replay could not return it",
                "promptFeedback.blockReason",
            )
        malformed("candidates", "a list with one candidate", "response")
    return require_object(candidates[0], "candidates[0]", "response")


def _response_content(candidate: dict[str, Any]) -> list[Item]:
    content = candidate.get("content")
    if content is None:
        return []
    at = "candidates[0].content"
    items: list[Item] = []
    for where, kind, value in content_parts(require_object(content, at, "response"), at, "response"):
        if kind == "functionResponse":
            unsupported("a functionResponse part in a response", "a model answers with text and calls", where)
        items.append(read_item(where, kind, value, "response"))
    return items


def _stop(reason: Any, *, has_calls: bool) -> Stop | None:
    if has_calls and reason not in ("STOP", "MAX_TOKENS", None):
        unsupported(
            f"finishReason {label(reason)} together with function calls",
            "a replay returns this stop with text alone",
            "finishReason",
        )
    if reason == "CONTINUATION":
        unsupported(
            "finishReason CONTINUATION (an answer continued in a further request)",
            "a replay answers each request as a whole",
            "finishReason",
        )
    if not isinstance(reason, str) or reason not in FINISH_REASONS:
        unsupported(
            f"finishReason {label(reason)}",
            f"a replay could return only {', '.join(FINISH_REASONS)}",
            "finishReason",
        )
    return FINISH_REASONS[reason]


def collect_stream(body: bytes) -> dict[str, Any]:
    """The response a complete ``alt=sse`` stream adds up to, ready for :func:`normalize_response`.

    Each event is a response chunk: the parts of the one candidate are concatenated in order, its
    other fields (the finish reason) and the response's own fields are the last ones sent. An
    ``error`` chunk, or a stream that ends before a finish reason, is refused.
    """
    return collect_chunks(body)[0]


def collect_chunks(body: bytes) -> tuple[dict[str, Any], bool]:
    """:func:`collect_stream`'s response, and whether one chunk alone carried the answer's text
    (thoughts aside): google-genai parses each chunk's text on its own into ``parsed``, so only such
    a chunk had the whole structured output parsed."""
    streams = several.split_stream(body, "candidates")
    if streams is not None:  # candidateCount > 1
        return several.join_choices([collect_stream(stream) for stream in streams], "candidates"), False
    response: dict[str, Any] = {}
    candidate: dict[str, Any] | None = None
    indexed = False  # whether the chunks number their candidate (the API may leave index out)
    parts: list[Any] = []
    text_chunks = 0
    for position, event in enumerate(parse_events(body)):
        chunk = event_object(event, position)
        error = chunk.get("error")
        if error is not None:
            status = error.get("status") if isinstance(error, dict) else None
            stream_problem(f"reported an error ({label(status)}) at event {position}")
        for key, value in chunk.items():
            if key != "candidates":
                response[key] = value
        for raw in list_field(chunk, "candidates", "response"):
            piece = require_object(raw, "candidates[0]", "response")
            if piece.get("index", 0) != 0:
                unsupported(
                    "a stream whose one candidate is not index 0", several.INDEX_ADVICE, f"event {position}"
                )
            indexed = indexed or "index" in piece
            content = piece.get("content")
            if isinstance(content, dict):
                parts.extend(list_field(content, "parts", "response"))
                text_chunks += _has_text(content.get("parts"))
            candidate = candidate if candidate is not None else {}
            candidate.update(
                (key, value)
                for key, value in piece.items()
                if key not in ("content", "index") and value is not None
            )
    if candidate is None:
        if response.get("promptFeedback") is None:
            stream_problem("has no candidates (it was cut short)", cut_short=True)
        return response, False  # a blocked prompt: normalize_response names the reason
    if candidate.get("finishReason") is None:
        stream_problem("ended before a finishReason (it was cut short)", cut_short=True)
    index = {"index": 0} if indexed else {}
    response["candidates"] = [{"content": {"parts": parts, "role": "model"}, **candidate, **index}]
    return response, text_chunks == 1


def _has_text(parts: Any) -> bool:
    """Whether a chunk's parts hold answer text (not a thought)."""
    return any(isinstance(p, dict) and p.get("text") and not p.get("thought") for p in parts or [])
