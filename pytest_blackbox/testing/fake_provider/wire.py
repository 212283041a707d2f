"""What every protocol of the fake provider shares: the request and answer types, ids, SSE framing.

A protocol module (anthropic, openai_chat, openai_responses, gemini) builds its answers from these
and describes itself with a :class:`Protocol`; the server only dispatches. See docs/fake-provider.md.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Responder = Callable[[str, Any], "tuple[int, Any]"]
"""``respond(path, request_json) -> (status, json_body)``; called when nothing is queued."""

_ALPHANUMERIC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z: fixed, so ``created`` fields are reproducible

SSE_HEADERS = (("content-type", "text/event-stream"), ("cache-control", "no-cache"))

#: A scripted model answer's tool calls: (tool name, input), in order.
Calls = Sequence[tuple[str, Mapping[str, Any]]]


@dataclass(frozen=True)
class Envelope:
    """What a scripted answer carries besides its text and calls: the response's envelope.

    ``moderation`` is an OpenAI moderation result, the response's ``moderation`` in both OpenAI APIs
    (a streamed Chat answer sends it in a last chunk without choices). ``text_logprobs=False`` leaves
    ``logprobs`` out of a Responses text part and ``candidate_index=False`` leaves ``index`` out of a
    Gemini candidate, as those APIs may, and ``finish_reason=False`` sends a Chat choice's
    ``finish_reason`` as ``null`` (streamed: in every chunk), and ``call_arguments=False`` its tool
    calls' ``arguments`` (streamed: no argument delta), as some OpenAI-compatible servers do.
    ``text_pieces=False`` streams a Gemini answer's text whole in one chunk (else in two pieces), as
    the API sends a short answer.
    ``stop`` is the protocol's own stop reason, sent instead of the ordinary one: Anthropic's
    ``stop_reason`` (``stop_sequence`` names the matched sequence),
    Chat's ``finish_reason``, the Responses API's ``incomplete_details.reason`` (the response is then
    ``incomplete``) or Gemini's ``finishReason``. ``logprobs`` are the answer text's token log
    probabilities, as both OpenAI APIs send them (``[{"token", "logprob", "bytes", "top_logprobs"}]``):
    Chat's ``choices[0].logprobs.content``, the Responses text part's ``logprobs``. ``extras`` and
    ``message_extras`` are fields an OpenAI-compatible server adds to a Chat completion (and to each
    streamed chunk) and to its message (streamed: one delta per field before the content, a text cut
    in two pieces): ``reasoning_content``, ``reasoning``, Groq's ``x_groq``, …
    """

    stop: str | None = None
    stop_sequence: str | None = None
    moderation: Mapping[str, Any] | None = None
    logprobs: Sequence[Mapping[str, Any]] | None = None
    text_logprobs: bool = True
    candidate_index: bool = True
    finish_reason: bool = True
    call_arguments: bool = True
    text_pieces: bool = True
    extras: Mapping[str, Any] | None = None
    message_extras: Mapping[str, Any] | None = None


#: The envelope of an ordinary answer.
PLAIN = Envelope()


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


Script = Callable[[ReceivedRequest], ScriptedResponse]

#: What a scripted answer says, as a conversation holds it: (text or None, ((tool name, input JSON), …)).
Said = tuple["str | None", tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class Protocol:
    """How one wire protocol is recognised, read back and errs.

    ``label`` names its path in the message a misdirected scripted answer gets; ``held`` reads the
    model answers a request body's conversation already holds; ``error_body`` is the API's error shape.
    """

    label: str
    matches: Callable[[str], bool]
    held: Callable[[dict[str, Any]], list[Said]]
    error_body: Callable[[int, str], dict[str, Any]]


def said(text: str | None, calls: Iterable[tuple[Any, Any]]) -> Said:
    return (text or None, tuple((str(name), json.dumps(args, sort_keys=True)) for name, args in calls))


def arguments(text: Any) -> Any:
    """Tool arguments sent as a JSON string, decoded (left as they are when they are not JSON)."""
    try:
        return json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return text


def joined(parts: Any, kinds: tuple[str, ...]) -> str | None:
    """The text of a message's content: a string, or its text parts joined."""
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        return None
    return "".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") in kinds)


@dataclass
class Ids:
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


def compact(value: Any) -> str:
    """Compact JSON, as the providers send it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tokens(data: bytes | str) -> int:
    return max(1, len(data) // 4)


def body_of(request: ReceivedRequest) -> dict[str, Any]:
    """The request's JSON object, or an empty one."""
    body = request.json
    return body if isinstance(body, dict) else {}


def model_of(request: ReceivedRequest, default: str) -> str:
    model = body_of(request).get("model")
    return model if isinstance(model, str) else default


def asks_stream(request: ReceivedRequest) -> bool:
    """``"stream": true`` in the body: how the Anthropic and OpenAI APIs ask for SSE."""
    return body_of(request).get("stream") is True


def sse(event: str | None, data: Any) -> bytes:
    prefix = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else compact(data)
    return f"{prefix}data: {payload}\n\n".encode()


def halves(text: str) -> tuple[str, str]:
    """A streamed text or argument string in two deltas, so clients must join them."""
    half = len(text) // 2
    return text[:half], text[half:]


def answer(
    response: Any,
    headers: tuple[tuple[str, str], ...],
    chunks: Callable[[], Iterable[bytes]] | None,
    *,
    gzip: bool,
) -> ScriptedResponse:
    """A 200 answer: the JSON body, or (when ``chunks`` is given) its SSE stream."""
    if chunks is not None:
        return ScriptedResponse(200, headers=headers + SSE_HEADERS, chunks=tuple(chunks()), gzip=gzip)
    return ScriptedResponse(200, response, headers, gzip=gzip)
