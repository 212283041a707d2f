"""The fake provider's Anthropic Messages API: messages, their SSE events, errors.

On ``POST /v1/messages``, and as Vertex AI serves it, on ``…/publishers/anthropic/models/{model}:rawPredict``
(``:streamRawPredict``), where the model is in the path and not in the body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

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
    asks_stream,
    compact,
    halves,
    joined,
    model_of,
    said,
    sse,
    tokens,
)

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def script(ids: Ids, text: str | None, calls: Calls, *, gzip: bool, envelope: Envelope = PLAIN) -> Script:
    def message(request: ReceivedRequest) -> dict[str, Any]:
        built = _message(request, ids, text, calls)
        if envelope.stop is not None:
            built.update(stop_reason=envelope.stop, stop_sequence=envelope.stop_sequence)
        return built

    return _script(ids, message, gzip=gzip)


def content_script(ids: Ids, blocks: Sequence[Mapping[str, Any]], stop_reason: str, *, gzip: bool) -> Script:
    """A message whose content is ``blocks`` as given (server tools, citations, several texts)."""

    def message(request: ReceivedRequest) -> dict[str, Any]:
        content = [dict(block) for block in blocks]
        return {**_message(request, ids, None, ()), "content": content, "stop_reason": stop_reason}

    return _script(ids, message, gzip=gzip)


def _script(ids: Ids, build: Callable[[ReceivedRequest], dict[str, Any]], *, gzip: bool) -> Script:
    def respond(request: ReceivedRequest) -> ScriptedResponse:
        message = build(request)
        headers = (("request-id", ids.make("req_01", 22)),)
        return answer(
            message, headers, (lambda: _events(message)) if asks_stream(request) else None, gzip=gzip
        )

    return respond


def _message(request: ReceivedRequest, ids: Ids, text: str | None, calls: Calls) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text is not None else []
    content += [
        {"type": "tool_use", "id": ids.make("toolu_01", 22), "name": name, "input": dict(tool_input)}
        for name, tool_input in calls
    ]
    return {
        "id": ids.make("msg_01", 22),
        "type": "message",
        "role": "assistant",
        "model": model_of(request, _vertex_model(request.path) or "claude-sonnet-4-5"),
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": tokens(request.body),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": tokens(json.dumps(content)),
            "service_tier": "standard",
        },
    }


def _streamed_block(block: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(content_block_start block, its deltas): text and tool input in two deltas each, a text's
    citations one ``citations_delta`` each, a tool result block whole in its start (as the API sends)."""
    if block["type"] == "text":
        citations = block.get("citations") or []
        opening = {"type": "text", "text": "", **({"citations": []} if citations else {})}
        deltas = [{"type": "citations_delta", "citation": citation} for citation in citations]
        return opening, deltas + [{"type": "text_delta", "text": piece} for piece in halves(block["text"])]
    if "input" not in block:
        return block, []
    pieces = halves(compact(block["input"]))
    return {**block, "input": {}}, [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]


def _events(message: dict[str, Any]) -> Iterator[bytes]:
    """The event sequence of a streamed message; text and tool input are split in two deltas each."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield sse("message_start", {"type": "message_start", "message": start})
    yield sse("ping", {"type": "ping"})
    for index, block in enumerate(message["content"]):
        opening, deltas = _streamed_block(block)
        yield sse(
            "content_block_start", {"type": "content_block_start", "index": index, "content_block": opening}
        )
        for delta in deltas:
            yield sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": index})
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    final_usage = {"output_tokens": usage["output_tokens"]}
    yield sse("message_delta", {"type": "message_delta", "delta": stop, "usage": final_usage})
    yield sse("message_stop", {"type": "message_stop"})


def _held(body: dict[str, Any]) -> list[Said]:
    return [
        said(
            joined(m.get("content"), ("text",)),
            [
                (b.get("name"), b.get("input"))
                for b in m.get("content") or []
                if isinstance(b, dict) and b.get("type") == "tool_use"
            ],
        )
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "assistant"
    ]


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}


#: Claude on Vertex AI: the model (``claude-sonnet-4-5@20250929``) in the path.
_VERTEX = re.compile(r"/publishers/anthropic/models/([^/:]+):(?:rawPredict|streamRawPredict)$")


def _vertex_model(path: str) -> str | None:
    found = _VERTEX.search(path)
    return unquote(found.group(1)) if found else None


def _matches(path: str) -> bool:
    return path.endswith("/v1/messages") or _VERTEX.search(path) is not None


PROTOCOL = Protocol("/v1/messages", _matches, _held, _error_body)
