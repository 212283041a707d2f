"""The fake provider's OpenAI Responses API (``POST …/responses``): responses and their SSE events."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .openai_chat import PROCESSING_MS, error_body
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
    arguments,
    asks_stream,
    body_of,
    compact,
    halves,
    joined,
    model_of,
    said,
    sse,
    tokens,
)


def script(ids: Ids, text: str | None, calls: Calls, *, gzip: bool, envelope: Envelope = PLAIN) -> Script:
    def respond(request: ReceivedRequest) -> ScriptedResponse:
        response = _response(request, ids, text, calls, envelope)
        if envelope.stop is not None:
            response.update(status="incomplete", incomplete_details={"reason": envelope.stop})
            for item in response["output"]:
                item["status"] = "incomplete" if item["type"] == "message" else item.get("status")
        headers = (("x-request-id", ids.make("req_", 32)), PROCESSING_MS)
        return answer(
            response, headers, (lambda: _events(response)) if asks_stream(request) else None, gzip=gzip
        )

    return respond


def output_script(ids: Ids, items: Sequence[Mapping[str, Any]], *, gzip: bool) -> Script:
    """A response whose ``output`` is ``items`` as given (built-in tool items, cited text, any order)."""

    def respond(request: ReceivedRequest) -> ScriptedResponse:
        response = {**_response(request, ids, None, ()), "output": [dict(item) for item in items]}
        headers = (("x-request-id", ids.make("req_", 32)), PROCESSING_MS)
        return answer(
            response, headers, (lambda: _events(response)) if asks_stream(request) else None, gzip=gzip
        )

    return respond


def _response(
    request: ReceivedRequest, ids: Ids, text: str | None, calls: Calls, envelope: Envelope = PLAIN
) -> dict[str, Any]:
    """A Responses API response; a request asking for reasoning gets a reasoning item first, as live."""
    body = body_of(request)
    output: list[dict[str, Any]] = []
    if body.get("reasoning") is not None:
        output.append({"id": ids.make("rs_", 48), "type": "reasoning", "summary": []})
    if text is not None:
        part: dict[str, Any] = {"type": "output_text", "text": text, "annotations": []}
        if envelope.text_logprobs:
            part["logprobs"] = [dict(token) for token in envelope.logprobs or ()]
        output.append(
            {
                "id": ids.make("msg_", 48),
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
        )
    output += [
        {
            "id": ids.make("fc_", 48),
            "type": "function_call",
            "call_id": ids.make("call_", 24),
            "name": name,
            "arguments": compact(dict(args)),
            "status": "completed",
        }
        for name, args in calls
    ]
    input_tokens, output_tokens = tokens(request.body), tokens(json.dumps(output))
    extra = {} if envelope.moderation is None else {"moderation": dict(envelope.moderation)}
    conversation = body.get("conversation")
    if conversation is not None:  # the API echoes the conversation a request continues, as an object
        extra["conversation"] = conversation if isinstance(conversation, dict) else {"id": conversation}
    return {
        "id": ids.make("resp_", 48),
        "object": "response",
        "created_at": ids.created(),
        "status": "completed",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "model": model_of(request, "gpt-5"),
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "top_p": 1.0,
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
        **extra,
    }


def _events(response: dict[str, Any]) -> Iterator[bytes]:
    """The event sequence of a streamed response; text and arguments are split in two deltas each."""
    counter = iter(range(1_000_000))

    def event(kind: str, **fields: Any) -> bytes:
        return sse(kind, {"type": kind, **fields, "sequence_number": next(counter)})

    opening = {**response, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=opening)
    yield event("response.in_progress", response=opening)
    for index, item in enumerate(response["output"]):
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            yield event("response.output_item.added", output_index=index, item={**item, "content": []})
            part = item["content"][0]
            yield event("response.content_part.added", **where, content_index=0, part={**part, "text": ""})
            logprobs = {"logprobs": part["logprobs"]} if "logprobs" in part else {}
            for number, piece in enumerate(halves(part["text"])):
                tokens = logprobs if number == 0 or not logprobs else {"logprobs": []}
                yield event("response.output_text.delta", **where, content_index=0, delta=piece, **tokens)
            yield event("response.output_text.done", **where, content_index=0, text=part["text"], **logprobs)
            yield event("response.content_part.done", **where, content_index=0, part=part)
        elif item["type"] == "function_call":
            yield event("response.output_item.added", output_index=index, item={**item, "arguments": ""})
            for piece in halves(item["arguments"]):
                yield event("response.function_call_arguments.delta", **where, delta=piece)
            yield event("response.function_call_arguments.done", **where, arguments=item["arguments"])
        else:
            yield event("response.output_item.added", output_index=index, item=item)
        yield event("response.output_item.done", output_index=index, item=item)
    closing = "response.completed" if response["status"] == "completed" else "response.incomplete"
    yield event(closing, response=response)


def _held(body: dict[str, Any]) -> list[Said]:
    """Responses API input: each run of assistant messages and function calls is one answer."""
    items = body.get("input")
    held: list[Said] = []
    texts: list[str] = []
    calls: list[tuple[Any, Any]] = []
    for item in [*(items if isinstance(items, list) else []), None]:
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind == "function_call" and isinstance(item, dict):
            calls.append((item.get("name"), arguments(item.get("arguments"))))
        elif kind == "message" and isinstance(item, dict) and item.get("role") == "assistant":
            texts.append(joined(item.get("content"), ("output_text", "text")) or "")
        elif kind not in ("reasoning", "web_search_call", "mcp_call", "mcp_list_tools") and (texts or calls):
            held.append(said("".join(texts), calls))
            texts, calls = [], []
    return held


PROTOCOL = Protocol("/responses", lambda path: path.endswith("/responses"), _held, error_body)
