"""The fake provider's Gemini API (``…/models/{model}:generateContent`` and ``:streamGenerateContent``)."""

from __future__ import annotations

import base64
import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .wire import (
    PLAIN,
    Calls,
    Envelope,
    Ids,
    Protocol,
    ReceivedRequest,
    Said,
    Script,
    ScriptedResponse,
    answer,
    compact,
    halves,
    said,
    tokens,
)

_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}
#: ``…/models/{model}:generateContent`` and ``:streamGenerateContent`` (the query string is not part of it).
#: Candidate fields of built-in tools' results, sent with the last chunk of a stream.
_METADATA = ("groundingMetadata", "urlContextMetadata")
_PATH = re.compile(r"/models/([^/:]+):(generateContent|streamGenerateContent)$")


def script(
    ids: Ids,
    text: str | None,
    calls: Calls,
    *,
    call_ids: bool,
    thinking: bool,
    gzip: bool,
    metadata: Mapping[str, Any] | None = None,
    parts: Sequence[Mapping[str, Any]] | None = None,
    envelope: Envelope = PLAIN,
    more: Sequence[tuple[str | None, Calls]] = (),
) -> Script:
    """A generateContent answer. ``metadata`` are built-in tools' candidate fields
    (``groundingMetadata``, ``urlContextMetadata``); ``parts`` replace the parts made of ``text`` and
    ``calls`` (code execution parts, text around them), sent as given; ``more``: the text and calls
    of the candidates after the first (a request with ``candidateCount > 1``)."""

    def respond(request: ReceivedRequest) -> ScriptedResponse:
        response = _response(request, ids, text, calls, call_ids=call_ids, thinking=thinking)
        if parts is not None:
            response["candidates"][0]["content"]["parts"] = [dict(part) for part in parts]
        response["candidates"][0].update(metadata or {})
        for index, (other_text, other_calls) in enumerate(more, start=1):
            other = _response(request, ids, other_text, other_calls, call_ids=call_ids, thinking=False)
            response["candidates"].append({**other["candidates"][0], "index": index})
        if not envelope.candidate_index:
            del response["candidates"][0]["index"]
        if envelope.stop is not None:
            response["candidates"][0]["finishReason"] = envelope.stop
        headers = (("x-gemini-service-tier", "standard"), ("server-timing", "gfet4t7; dur=321"))
        match = _PATH.search(request.path)
        streams = match is not None and match.group(2) == "streamGenerateContent"
        chunks = (lambda: _chunks(response, envelope.text_pieces)) if streams else None
        return answer(response, headers, chunks, gzip=gzip)

    return respond


def _response(
    request: ReceivedRequest, ids: Ids, text: str | None, calls: Calls, *, call_ids: bool, thinking: bool
) -> dict[str, Any]:
    """A generateContent response. ``call_ids`` gives each function call an ``id`` (Gemini 3 does;
    2.x sends none); ``thinking`` adds a thought summary part and a thought signature, as a thinking
    model sends them."""
    parts: list[dict[str, Any]] = []
    if thinking:
        parts.append({"text": "**Planning** I should look this up.", "thought": True})
    if text is not None:
        parts.append({"text": text})
    for index, (name, args) in enumerate(calls):
        function_call: dict[str, Any] = {"name": name, "args": dict(args)}
        if call_ids:
            function_call = {"id": ids.make("", 8).lower(), **function_call}
        part: dict[str, Any] = {"functionCall": function_call}
        if thinking and index == 0:
            part["thoughtSignature"] = base64.b64encode(ids.make("sig", 24).encode()).decode()
        parts.append(part)
    prompt, output = tokens(request.body), tokens(json.dumps(parts))
    match = _PATH.search(request.path)
    return {
        "candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
        },
        "modelVersion": match.group(1) if match is not None else "gemini-2.5-flash",
        "responseId": ids.make("", 22),
    }


def _chunks(response: dict[str, Any], text_pieces: bool) -> Iterator[bytes]:
    """The ``alt=sse`` chunks of a streamed response: each candidate's text in two pieces (whole
    unless ``text_pieces``), then its calls together, its last chunk with the finish reason; several
    candidates stream interleaved, and every chunk has the running usage."""
    head = {"usageMetadata": response["usageMetadata"]}
    tail = {"modelVersion": response["modelVersion"], "responseId": response["responseId"]}
    streams = [list(_candidate_pieces(candidate, text_pieces)) for candidate in response["candidates"]]
    for group in itertools.zip_longest(*streams):
        for piece in group:
            if piece is not None:
                yield f"data: {compact({'candidates': [piece], **head, **tail})}\r\n\r\n".encode()


def _candidate_pieces(candidate: dict[str, Any], text_pieces: bool) -> Iterator[dict[str, Any]]:
    groups: list[list[dict[str, Any]]] = []
    calls: list[dict[str, Any]] = []
    for part in candidate["content"]["parts"]:
        if "functionCall" in part:
            calls.append(part)
        elif "text" in part and not part.get("thought"):
            groups += [
                [{"text": piece}] for piece in (halves(part["text"]) if text_pieces else [part["text"]])
            ]
        else:
            groups.append([part])  # a thought, executable code, its result: a chunk of its own
    groups += [calls] if calls else []
    for index, parts in enumerate(groups or [[]]):
        piece: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if "index" in candidate:
            piece["index"] = candidate["index"]
        if index == max(len(groups), 1) - 1:
            piece["finishReason"] = candidate["finishReason"]
            piece.update((key, candidate[key]) for key in _METADATA if key in candidate)
        yield piece


def _held(body: dict[str, Any]) -> list[Said]:
    return [
        said(
            "".join(p.get("text", "") for p in c.get("parts", []) if "text" in p and not p.get("thought")),
            [
                (p["functionCall"].get("name"), p["functionCall"].get("args"))
                for p in c.get("parts", [])
                if isinstance(p.get("functionCall"), dict)
            ],
        )
        for c in body.get("contents") or []
        if isinstance(c, dict) and c.get("role") == "model"
    ]


def _error_body(status: int, message: str) -> dict[str, Any]:
    state = _STATUSES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return {"error": {"code": status, "message": message, "status": state}}


PROTOCOL = Protocol(":generateContent", lambda path: _PATH.search(path) is not None, _held, _error_body)
