"""The fake provider: a scripted Anthropic/OpenAI/Gemini HTTP server on 127.0.0.1, to record without a key.

It is a real socket server, so recording through it runs the whole path (SDK, HTTP client,
interception, normalization) as against the real API, with answers shaped like the providers' own
and deterministic (ids and timestamps from a per-server counter). See docs/fake-provider.md.
"""

from __future__ import annotations

import base64
import gzip as gzip_module
import hashlib
import json
import re
import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from ..errors import BlackboxUsageError

__all__ = ["FakeProvider", "ReceivedRequest", "Responder", "ScriptedResponse"]

Responder = Callable[[str, Any], "tuple[int, Any]"]
"""``respond(path, request_json) -> (status, json_body)``; called when nothing is queued."""

_POLL_SECONDS = 0.02  # how soon stop() takes effect; the default half second would dominate test time
_ALPHANUMERIC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z: fixed, so ``created`` fields are reproducible
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OPENAI_ERROR_TYPES = {429: "requests", 401: "invalid_request_error", 400: "invalid_request_error"}
_GEMINI_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}
#: ``…/models/{model}:generateContent`` and ``:streamGenerateContent`` (the query string is not part of it).
_GEMINI_PATH = re.compile(r"/models/([^/:]+):(generateContent|streamGenerateContent)$")


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the server saw it; header names are lower-cased, ``json`` is None if not JSON."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


@dataclass(frozen=True)
class ScriptedResponse:
    """An answer to serve. ``body`` is a JSON value, or bytes sent as they are.

    ``chunks`` (when set) replaces ``body`` and is sent with chunked transfer encoding, one flush per
    chunk, as a real server streams SSE. It may be any iterable, read while sending: a generator can
    wait between chunks (to prove a client sees early events before later ones exist), and one that
    raises cuts the connection there without ending the body, as a dropped upstream does.
    ``gzip`` compresses ``body`` (or each chunk, flushed, so a stream stays incremental) when the
    request accepts gzip.
    """

    status: int
    body: Any = None
    headers: tuple[tuple[str, str], ...] = ()
    gzip: bool = False
    chunks: Iterable[bytes] | None = None


_Script = Callable[[ReceivedRequest], ScriptedResponse]

#: What a scripted answer says, as a conversation holds it: (text or None, ((tool name, input JSON), …)).
_Said = tuple["str | None", tuple[tuple[str, str], ...]]


def _said(text: str | None, calls: Iterable[tuple[Any, Any]]) -> _Said:
    return (text or None, tuple((str(name), json.dumps(args, sort_keys=True)) for name, args in calls))


def _arguments(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return text


def _joined(parts: Any, kinds: tuple[str, ...]) -> str | None:
    """The text of a message's content: a string, or its text parts joined."""
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        return None
    return "".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") in kinds)


def _held(request: ReceivedRequest) -> list[_Said]:
    """The model answers a request's conversation already holds, oldest first (by the API's shape)."""
    body = request.json if isinstance(request.json, dict) else {}
    if _GEMINI_PATH.search(request.path):
        return [
            _said(
                "".join(
                    p.get("text", "") for p in c.get("parts", []) if "text" in p and not p.get("thought")
                ),
                [
                    (p["functionCall"].get("name"), p["functionCall"].get("args"))
                    for p in c.get("parts", [])
                    if isinstance(p.get("functionCall"), dict)
                ],
            )
            for c in body.get("contents") or []
            if isinstance(c, dict) and c.get("role") == "model"
        ]
    if request.path.endswith("/responses"):
        return _responses_held(body.get("input"))
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant"]
    if request.path.endswith("/v1/messages"):
        return [
            _said(
                _joined(m.get("content"), ("text",)),
                [
                    (b.get("name"), b.get("input"))
                    for b in m.get("content") or []
                    if isinstance(b, dict) and b.get("type") == "tool_use"
                ],
            )
            for m in messages
        ]
    return [
        _said(
            _joined(m.get("content"), ("text", "output_text")),
            [
                (c["function"].get("name"), _arguments(c["function"].get("arguments")))
                for c in m.get("tool_calls") or []
                if isinstance(c, dict) and isinstance(c.get("function"), dict)
            ],
        )
        for m in messages
    ]


def _responses_held(items: Any) -> list[_Said]:
    """Responses API input: each run of assistant messages and function calls is one answer."""
    held: list[_Said] = []
    texts: list[str] = []
    calls: list[tuple[Any, Any]] = []
    for item in [*(items if isinstance(items, list) else []), None]:
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind == "function_call" and isinstance(item, dict):
            calls.append((item.get("name"), _arguments(item.get("arguments"))))
        elif kind == "message" and isinstance(item, dict) and item.get("role") == "assistant":
            texts.append(_joined(item.get("content"), ("output_text", "text")) or "")
        elif kind != "reasoning" and (texts or calls):
            held.append(_said("".join(texts), calls))
            texts, calls = [], []
    return held


@dataclass
class _Ids:
    """Provider-style ids from a counter: same script, same ids, run after run."""

    counter: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def make(self, prefix: str, length: int) -> str:
        with self._lock:
            self.counter += 1
            number = self.counter
        digest = int.from_bytes(hashlib.sha256(f"{prefix}{number}".encode()).digest(), "big")
        chars = []
        for _ in range(length):
            digest, index = divmod(digest, len(_ALPHANUMERIC))
            chars.append(_ALPHANUMERIC[index])
        return prefix + "".join(chars)

    def created(self) -> int:
        return _EPOCH + self.counter


def _compact(value: Any) -> str:
    """Compact JSON, as the providers send it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _tokens(data: bytes | str) -> int:
    return max(1, len(data) // 4)


def _model_of(request: ReceivedRequest, default: str) -> str:
    body = request.json
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else default


def _wants_stream(request: ReceivedRequest) -> bool:
    gemini = _GEMINI_PATH.search(request.path)
    if gemini is not None:
        return gemini.group(2) == "streamGenerateContent"
    body = request.json
    return isinstance(body, dict) and body.get("stream") is True


def _sse(event: str | None, data: Any) -> bytes:
    prefix = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else _compact(data)
    return f"{prefix}data: {payload}\n\n".encode()


_SSE_HEADERS = (("content-type", "text/event-stream"), ("cache-control", "no-cache"))


def _anthropic_message(
    request: ReceivedRequest, ids: _Ids, text: str | None, calls: Sequence[tuple[str, Mapping[str, Any]]]
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text is not None else []
    content += [
        {"type": "tool_use", "id": ids.make("toolu_01", 22), "name": name, "input": dict(tool_input)}
        for name, tool_input in calls
    ]
    return {
        "id": ids.make("msg_01", 22),
        "type": "message",
        "role": "assistant",
        "model": _model_of(request, "claude-sonnet-4-5"),
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": _tokens(request.body),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": _tokens(json.dumps(content)),
            "service_tier": "standard",
        },
    }


def _streamed_block(block: dict[str, Any]) -> tuple[dict[str, Any], str, str, str]:
    """(content_block_start block, delta key, delta type, full text the deltas add up to)."""
    if block["type"] == "text":
        return {"type": "text", "text": ""}, "text", "text_delta", block["text"]
    return {**block, "input": {}}, "partial_json", "input_json_delta", _compact(block["input"])


def _anthropic_events(message: dict[str, Any]) -> Iterator[bytes]:
    """The event sequence of a streamed message; text and tool input are split in two deltas each."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield _sse("message_start", {"type": "message_start", "message": start})
    yield _sse("ping", {"type": "ping"})
    for index, block in enumerate(message["content"]):
        opening, key, delta_type, full = _streamed_block(block)
        yield _sse(
            "content_block_start", {"type": "content_block_start", "index": index, "content_block": opening}
        )
        half = len(full) // 2
        for piece in (full[:half], full[half:]):
            delta = {"type": delta_type, key: piece}
            yield _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    final_usage = {"output_tokens": usage["output_tokens"]}
    yield _sse("message_delta", {"type": "message_delta", "delta": stop, "usage": final_usage})
    yield _sse("message_stop", {"type": "message_stop"})


def _openai_completion(
    request: ReceivedRequest, ids: _Ids, text: str | None, calls: Sequence[tuple[str, Mapping[str, Any]]]
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
    if calls:
        message["tool_calls"] = [
            {
                "id": ids.make("call_", 24),
                "type": "function",
                "function": {"name": name, "arguments": _compact(dict(args))},
            }
            for name, args in calls
        ]
    prompt_tokens = _tokens(request.body)
    completion_tokens = _tokens(json.dumps(message))
    return {
        "id": ids.make("chatcmpl-", 29),
        "object": "chat.completion",
        "created": ids.created(),
        "model": _model_of(request, "gpt-5"),
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


def _openai_chunks(completion: dict[str, Any], include_usage: bool) -> Iterator[bytes]:
    """The chunk sequence of a streamed completion, ending with ``data: [DONE]``."""
    head = {key: completion[key] for key in ("id", "created", "model", "service_tier", "system_fingerprint")}
    head["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
        return _sse(None, {**head, "choices": choices})

    yield chunk(
        {"role": "assistant", "content": "" if message["content"] is not None else None, "refusal": None}
    )
    if message["content"]:
        yield chunk({"content": message["content"]})
    for index, call in enumerate(message.get("tool_calls", [])):
        function = call["function"]
        opening = {"index": index, "id": call["id"], "type": "function"}
        yield chunk({"tool_calls": [{**opening, "function": {"name": function["name"], "arguments": ""}}]})
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": function["arguments"]}}]})
    yield chunk({}, choice["finish_reason"])
    if include_usage:
        yield _sse(None, {**head, "choices": [], "usage": completion["usage"]})
    yield _sse(None, "[DONE]")


def _responses_body(
    request: ReceivedRequest, ids: _Ids, text: str | None, calls: Sequence[tuple[str, Mapping[str, Any]]]
) -> dict[str, Any]:
    """A Responses API response; a request asking for reasoning gets a reasoning item first, as live."""
    body = request.json if isinstance(request.json, dict) else {}
    output: list[dict[str, Any]] = []
    if body.get("reasoning") is not None:
        output.append({"id": ids.make("rs_", 48), "type": "reasoning", "summary": []})
    if text is not None:
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
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
            "arguments": _compact(dict(args)),
            "status": "completed",
        }
        for name, args in calls
    ]
    input_tokens, output_tokens = _tokens(request.body), _tokens(json.dumps(output))
    return {
        "id": ids.make("resp_", 48),
        "object": "response",
        "created_at": ids.created(),
        "status": "completed",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "model": _model_of(request, "gpt-5"),
        "output": output,
        "parallel_tool_calls": True,
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
    }


def _responses_events(response: dict[str, Any]) -> Iterator[bytes]:
    """The event sequence of a streamed response; text and arguments are split in two deltas each."""
    counter = iter(range(1_000_000))

    def event(kind: str, **fields: Any) -> bytes:
        return _sse(kind, {"type": kind, **fields, "sequence_number": next(counter)})

    opening = {**response, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=opening)
    yield event("response.in_progress", response=opening)
    for index, item in enumerate(response["output"]):
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            yield event("response.output_item.added", output_index=index, item={**item, "content": []})
            part = item["content"][0]
            yield event("response.content_part.added", **where, content_index=0, part={**part, "text": ""})
            half = len(part["text"]) // 2
            for piece in (part["text"][:half], part["text"][half:]):
                yield event("response.output_text.delta", **where, content_index=0, delta=piece, logprobs=[])
            yield event("response.output_text.done", **where, content_index=0, text=part["text"], logprobs=[])
            yield event("response.content_part.done", **where, content_index=0, part=part)
        elif item["type"] == "function_call":
            yield event("response.output_item.added", output_index=index, item={**item, "arguments": ""})
            half = len(item["arguments"]) // 2
            for piece in (item["arguments"][:half], item["arguments"][half:]):
                yield event("response.function_call_arguments.delta", **where, delta=piece)
            yield event("response.function_call_arguments.done", **where, arguments=item["arguments"])
        else:
            yield event("response.output_item.added", output_index=index, item=item)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=response)


def _gemini_response(
    request: ReceivedRequest,
    ids: _Ids,
    text: str | None,
    calls: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    call_ids: bool,
    thinking: bool,
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
    prompt, output = _tokens(request.body), _tokens(json.dumps(parts))
    match = _GEMINI_PATH.search(request.path)
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


def _gemini_chunks(response: dict[str, Any]) -> Iterator[bytes]:
    """The ``alt=sse`` chunks of a streamed response: text in two pieces, then the calls together;
    the last chunk carries the finish reason and usage (every chunk has the running usage)."""
    candidate = response["candidates"][0]
    head = {"usageMetadata": response["usageMetadata"]}
    tail = {"modelVersion": response["modelVersion"], "responseId": response["responseId"]}
    groups: list[list[dict[str, Any]]] = []
    calls: list[dict[str, Any]] = []
    for part in candidate["content"]["parts"]:
        if "functionCall" in part:
            calls.append(part)
        elif part.get("thought"):
            groups.append([part])
        else:
            half = len(part["text"]) // 2
            groups += [[{"text": part["text"][:half]}], [{"text": part["text"][half:]}]]
    groups += [calls] if calls else []
    for index, parts in enumerate(groups or [[]]):
        last = index == max(len(groups), 1) - 1
        piece: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if last:
            piece["finishReason"] = candidate["finishReason"]
        chunk = {"candidates": [piece], **head, **tail}
        yield f"data: {_compact(chunk)}\r\n\r\n".encode()


def _error_body(path: str, status: int, message: str) -> dict[str, Any]:
    if _GEMINI_PATH.search(path):
        state = _GEMINI_STATUSES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
        return {"error": {"code": status, "message": message, "status": state}}
    if path.endswith("/v1/messages"):
        error_type = _ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": error_type, "message": message}}
    error_type = _OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    code = "rate_limit_exceeded" if status == 429 else None
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


class FakeProvider:
    """A started/stopped HTTP server answering model calls from a script; see the module docstring."""

    def __init__(self, respond: Responder | None = None) -> None:
        self._respond = respond
        self._script: deque[tuple[_Script, _Said | None]] = deque()
        #: Answers served from the script (the conversations' answers that came from this server).
        self._served = 0
        self._received: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        self._ids = _Ids()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        if self._server is not None:
            return
        server = _Server(("127.0.0.1", 0), _Handler)
        server.provider = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(_POLL_SECONDS,), name="fake-provider", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the listening socket, so later connections are refused."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join()

    def __enter__(self) -> FakeProvider:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # --- addresses -------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise BlackboxUsageError(
                "the fake provider is not running; call start() or use it as a context manager"
            )
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def anthropic_base_url(self) -> str:
        """The anthropic SDK appends ``/v1/messages`` itself."""
        return self.base_url

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def gemini_base_url(self) -> str:
        """google-genai appends ``/{api version}/models/{model}:generateContent`` itself."""
        return self.base_url

    # --- script ----------------------------------------------------------------------------------

    def respond_with(self, respond: Responder | None) -> None:
        """Let ``respond(path, request_json)`` answer whatever is not queued."""
        self._respond = respond

    def queue(self, *responses: ScriptedResponse) -> None:
        for response in responses:
            self._push(_constant(response))

    def queue_status(self, status: int, body: Any = None, *, headers: Sequence[tuple[str, str]] = ()) -> None:
        """An error answer; without ``body``, the provider's own error shape for the request's path."""

        def script(request: ReceivedRequest) -> ScriptedResponse:
            payload = body if body is not None else _error_body(request.path, status, "scripted error")
            return ScriptedResponse(status, payload, tuple(headers))

        self._push(script)

    def queue_anthropic_text(self, text: str, *, gzip: bool = False) -> None:
        self.queue_anthropic_tool_calls([], text=text, gzip=gzip)

    def queue_anthropic_tool_calls(
        self, calls: Sequence[tuple[str, Mapping[str, Any]]], text: str | None = None, *, gzip: bool = False
    ) -> None:
        def script(request: ReceivedRequest) -> ScriptedResponse:
            message = _anthropic_message(request, self._ids, text, calls)
            headers = (("request-id", self._ids.make("req_01", 22)),)
            if _wants_stream(request):
                chunks = tuple(_anthropic_events(message))
                return ScriptedResponse(200, headers=headers + _SSE_HEADERS, chunks=chunks, gzip=gzip)
            return ScriptedResponse(200, message, headers, gzip=gzip)

        self._push(script, "/v1/messages", said=_said(text, calls))

    def queue_openai_text(self, text: str, *, gzip: bool = False) -> None:
        self.queue_openai_tool_calls([], text=text, gzip=gzip)

    def queue_openai_tool_calls(
        self, calls: Sequence[tuple[str, Mapping[str, Any]]], text: str | None = None, *, gzip: bool = False
    ) -> None:
        def script(request: ReceivedRequest) -> ScriptedResponse:
            completion = _openai_completion(request, self._ids, text, calls)
            headers = (("x-request-id", self._ids.make("req_", 32)), ("openai-processing-ms", "321"))
            if _wants_stream(request):
                options = request.json.get("stream_options") or {}
                chunks = tuple(_openai_chunks(completion, bool(options.get("include_usage"))))
                return ScriptedResponse(200, headers=headers + _SSE_HEADERS, chunks=chunks, gzip=gzip)
            return ScriptedResponse(200, completion, headers, gzip=gzip)

        self._push(script, "/chat/completions", said=_said(text, calls))

    def queue_responses_text(self, text: str, *, gzip: bool = False) -> None:
        self.queue_responses_tool_calls([], text=text, gzip=gzip)

    def queue_responses_tool_calls(
        self, calls: Sequence[tuple[str, Mapping[str, Any]]], text: str | None = None, *, gzip: bool = False
    ) -> None:
        """A Responses API answer (``POST …/responses``), streamed when the request asks for it."""

        def script(request: ReceivedRequest) -> ScriptedResponse:
            response = _responses_body(request, self._ids, text, calls)
            headers = (("x-request-id", self._ids.make("req_", 32)), ("openai-processing-ms", "321"))
            if _wants_stream(request):
                chunks = tuple(_responses_events(response))
                return ScriptedResponse(200, headers=headers + _SSE_HEADERS, chunks=chunks, gzip=gzip)
            return ScriptedResponse(200, response, headers, gzip=gzip)

        self._push(script, "/responses", said=_said(text, calls))

    def queue_gemini_text(self, text: str, *, thinking: bool = False, gzip: bool = False) -> None:
        self.queue_gemini_tool_calls([], text=text, thinking=thinking, gzip=gzip)

    def queue_gemini_tool_calls(
        self,
        calls: Sequence[tuple[str, Mapping[str, Any]]],
        text: str | None = None,
        *,
        call_ids: bool = False,
        thinking: bool = False,
        gzip: bool = False,
    ) -> None:
        """A Gemini answer (``…:generateContent``), streamed for ``:streamGenerateContent``.

        Function calls have no ``id`` unless ``call_ids`` (Gemini 2.x sends none, Gemini 3 does).
        """

        def script(request: ReceivedRequest) -> ScriptedResponse:
            response = _gemini_response(request, self._ids, text, calls, call_ids=call_ids, thinking=thinking)
            headers = (("x-gemini-service-tier", "standard"), ("server-timing", "gfet4t7; dur=321"))
            if _wants_stream(request):
                chunks = tuple(_gemini_chunks(response))
                return ScriptedResponse(200, headers=headers + _SSE_HEADERS, chunks=chunks, gzip=gzip)
            return ScriptedResponse(200, response, headers, gzip=gzip)

        self._push(script, ":generateContent", _is_gemini_path, said=_said(text, calls))

    # --- observations ----------------------------------------------------------------------------

    @property
    def requests(self) -> list[ReceivedRequest]:
        with self._lock:
            return list(self._received)

    @property
    def pending(self) -> int:
        """Scripted answers not served yet (and not already held by the conversation asking)."""
        with self._lock:
            return len(self._script)

    # --- serving ---------------------------------------------------------------------------------

    def _push(
        self,
        script: _Script,
        path_suffix: str | None = None,
        matches: Callable[[str], bool] | None = None,
        *,
        said: _Said | None = None,
    ) -> None:
        if path_suffix is not None:
            script = _for_path(script, path_suffix, matches)
        with self._lock:
            self._script.append((script, said))

    def _skip_held(self, request: ReceivedRequest) -> None:
        """Drop the queued answers the request's conversation already holds without this server.

        A replay that goes live (``new_episodes``) answered the first calls from the cassette, so a
        freshly scripted fake has not served them: the answers it would serve first are already in
        the conversation. When the conversation holds more answers than this server ever served, the
        queue's leading answers that match its latest ones are dropped, so the live tail gets the
        answers scripted for it. Called under the lock.
        """
        held = _held(request) if self._script and self._script[0][1] is not None else []
        unseen = len(held) - self._served
        for said in held[len(held) - unseen :] if unseen > 0 else []:
            if not self._script or self._script[0][1] != said:
                return
            self._script.popleft()

    def _answer(self, request: ReceivedRequest) -> ScriptedResponse:
        with self._lock:
            self._received.append(request)
            self._skip_held(request)
            script = self._script.popleft()[0] if self._script else None
            self._served += script is not None
        if script is not None:
            return script(request)
        if self._respond is not None:
            status, body = self._respond(request.path, request.json)
            return ScriptedResponse(status, body)
        message = f"fake provider: nothing scripted for {request.method} {request.path}"
        return _unretryable(request.path, message)


def _constant(response: ScriptedResponse) -> _Script:
    def script(_request: ReceivedRequest) -> ScriptedResponse:
        return response

    return script


def _unretryable(path: str, message: str) -> ScriptedResponse:
    return ScriptedResponse(500, _error_body(path, 500, message), (("x-should-retry", "false"),))


def _is_gemini_path(path: str) -> bool:
    return _GEMINI_PATH.search(path) is not None


def _for_path(script: _Script, path_suffix: str, matches: Callable[[str], bool] | None = None) -> _Script:
    """A provider-specific answer sent to another provider's path is a test bug: say so, un-retried.

    ``matches`` decides when the suffix alone does not (Gemini's path names the model before it).
    """

    def guarded(request: ReceivedRequest) -> ScriptedResponse:
        if (matches or (lambda path: path.endswith(path_suffix)))(request.path):
            return script(request)
        message = f"fake provider: the next scripted answer is for {path_suffix}, not {request.path}"
        return _unretryable(request.path, message)

    return guarded


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    provider: FakeProvider


class _Handler(BaseHTTPRequestHandler):
    """One connection per request (``connection: close``), so a stopped server leaves nothing open."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = ReceivedRequest(self.command, urlsplit(self.path).path, headers, body)
        self._send(self.server.provider._answer(request), headers.get("accept-encoding", ""))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def _send(self, response: ScriptedResponse, accept_encoding: str) -> None:
        self.close_connection = True
        self.send_response(response.status)
        names = {name.lower() for name, _ in response.headers}
        for name, value in response.headers:
            self.send_header(name, value)
        self.send_header("connection", "close")
        zipped = response.gzip and "gzip" in accept_encoding.lower()
        if response.chunks is not None:
            self._send_chunks(response.chunks, zipped)
            return
        payload = response.body if isinstance(response.body, bytes) else _compact(response.body).encode()
        if "content-type" not in names:
            self.send_header("content-type", "application/json")
        if zipped:
            payload = gzip_module.compress(payload, mtime=0)
            self.send_header("content-encoding", "gzip")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_chunks(self, chunks: Iterable[bytes], zipped: bool) -> None:
        """Chunked transfer, one flush per chunk; stops where the client goes away or the script raises."""
        compressor = zlib.compressobj(wbits=16 + zlib.MAX_WBITS) if zipped else None
        if compressor is not None:
            self.send_header("content-encoding", "gzip")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for chunk in chunks:
                data = (
                    chunk
                    if compressor is None
                    else compressor.compress(chunk) + compressor.flush(zlib.Z_SYNC_FLUSH)
                )
                self._write_chunk(data)
            if compressor is not None:
                self._write_chunk(compressor.flush())
            self.wfile.write(b"0\r\n\r\n")
        except Exception:  # the client went away, or the script cut the body short on purpose
            return

    def _write_chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: test output is not the place for an access log."""
