"""The fake provider's OpenAI Chat Completions API (``POST …/chat/completions``), and OpenAI's error shape."""

from __future__ import annotations

import itertools
import json
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
    arguments,
    asks_stream,
    body_of,
    compact,
    joined,
    model_of,
    said,
    sse,
    tokens,
)

_ERROR_TYPES = {429: "requests", 401: "invalid_request_error", 400: "invalid_request_error"}

#: Response headers both OpenAI APIs send (the processing time is fixed, so answers are reproducible).
PROCESSING_MS = ("openai-processing-ms", "321")


def script(
    ids: Ids,
    text: str | None,
    calls: Calls,
    *,
    gzip: bool,
    annotations: Sequence[Mapping[str, Any]] = (),
    envelope: Envelope = PLAIN,
    more: Sequence[tuple[str | None, Calls]] = (),
) -> Script:
    """A completion; ``annotations`` (``url_citation``s of a search model) on its message; ``more``:
    the text and calls of the choices after the first (a request with ``n > 1``)."""

    def respond(request: ReceivedRequest) -> ScriptedResponse:
        completion = _completion(request, ids, text, calls)
        for index, (other_text, other_calls) in enumerate(more, start=1):
            choice = _completion(request, ids, other_text, other_calls)["choices"][0]
            completion["choices"].append({**choice, "index": index})
        completion["choices"][0]["message"]["annotations"] = [dict(item) for item in annotations]
        if envelope.moderation is not None:
            completion["moderation"] = dict(envelope.moderation)
        completion.update(envelope.extras or {})
        completion["choices"][0]["message"].update(envelope.message_extras or {})
        if envelope.stop is not None or not envelope.finish_reason:
            completion["choices"][0]["finish_reason"] = envelope.stop
        for call in completion["choices"][0]["message"].get("tool_calls", []):
            call["function"]["arguments"] = call["function"]["arguments"] if envelope.call_arguments else None
        if envelope.logprobs is not None:
            completion["choices"][0]["logprobs"] = {
                "content": [dict(t) for t in envelope.logprobs],
                "refusal": None,
            }
        headers = (("x-request-id", ids.make("req_", 32)), PROCESSING_MS)
        usage = bool((body_of(request).get("stream_options") or {}).get("include_usage"))
        extras = (dict(envelope.extras or {}), dict(envelope.message_extras or {}))
        chunks = (lambda: _chunks(completion, usage, *extras)) if asks_stream(request) else None
        return answer(completion, headers, chunks, gzip=gzip)

    return respond


def _completion(request: ReceivedRequest, ids: Ids, text: str | None, calls: Calls) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
    if calls:
        message["tool_calls"] = [
            {
                "id": ids.make("call_", 24),
                "type": "function",
                "function": {"name": name, "arguments": compact(dict(args))},
            }
            for name, args in calls
        ]
    prompt_tokens = tokens(request.body)
    completion_tokens = tokens(json.dumps(message))
    return {
        "id": ids.make("chatcmpl-", 29),
        "object": "chat.completion",
        "created": ids.created(),
        "model": model_of(request, "gpt-5"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_b3f1157249",
    }


def _chunks(
    completion: dict[str, Any], include_usage: bool, extras: dict[str, Any], message_extras: dict[str, Any]
) -> Iterator[bytes]:
    """The chunk sequence of a streamed completion, ending with ``data: [DONE]``."""
    head = {key: completion[key] for key in ("id", "created", "model", "service_tier", "system_fingerprint")}
    head.update(object="chat.completion.chunk", **extras)
    streams = [list(_choice_chunks(head, choice, message_extras)) for choice in completion["choices"]]
    for group in itertools.zip_longest(*streams):  # several choices stream interleaved
        yield from (chunk for chunk in group if chunk is not None)
    if include_usage:
        yield sse(None, {**head, "choices": [], "usage": completion["usage"]})
    if "moderation" in completion:
        yield sse(None, {**head, "choices": [], "moderation": completion["moderation"], "usage": None})
    yield sse(None, "[DONE]")


def _choice_chunks(
    head: dict[str, Any], choice: dict[str, Any], message_extras: dict[str, Any]
) -> Iterator[bytes]:
    """One choice's chunks: its role, the server's extras, content, each tool call, and its finish reason."""
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None, logprobs: Any = None) -> bytes:
        one = {"index": choice["index"], "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason}
        return sse(None, {**head, "choices": [one]})

    yield chunk(
        {"role": "assistant", "content": "" if message["content"] is not None else None, "refusal": None}
    )
    for key, value in message_extras.items():
        cut = len(value) // 2 if isinstance(value, str) else None
        yield from (chunk({key: piece}) for piece in ([value[:cut], value[cut:]] if cut else [value]))
    if message["content"]:
        yield chunk({"content": message["content"]}, logprobs=choice["logprobs"])
    for index, call in enumerate(message.get("tool_calls", [])):
        function = call["function"]
        opening = {"index": index, "id": call["id"], "type": "function"}
        empty = "" if function["arguments"] is not None else None
        yield chunk({"tool_calls": [{**opening, "function": {"name": function["name"], "arguments": empty}}]})
        if function["arguments"] is not None:
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": function["arguments"]}}]})
    yield chunk(
        {"annotations": message["annotations"]} if message["annotations"] else {}, choice["finish_reason"]
    )


def _held(body: dict[str, Any]) -> list[Said]:
    return [
        said(
            joined(m.get("content"), ("text", "output_text")),
            [
                (c["function"].get("name"), arguments(c["function"].get("arguments")))
                for c in m.get("tool_calls") or []
                if isinstance(c, dict) and isinstance(c.get("function"), dict)
            ],
        )
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "assistant"
    ]


def error_body(status: int, message: str) -> dict[str, Any]:
    """OpenAI's error shape, for both of its APIs (and any path no other protocol claims)."""
    error_type = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    code = "rate_limit_exceeded" if status == 429 else None
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


PROTOCOL = Protocol("/chat/completions", lambda path: path.endswith("/chat/completions"), _held, error_body)
