"""The fake provider's server: the script queue, the HTTP handler and the public :class:`FakeProvider`.

Each ``queue_*`` method takes its answer from the protocol's own module; this one only queues,
dispatches by path and serves. See docs/fake-provider.md.
"""

from __future__ import annotations

import gzip as gzip_module
import json
import ssl
import threading
import zlib
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from ...errors import BlackboxUsageError
from . import anthropic, bedrock, gemini, openai_chat, openai_responses
from .wire import (
    PLAIN,
    Calls,
    Envelope,
    Ids,
    Protocol,
    ReceivedRequest,
    Responder,
    Said,
    Script,
    ScriptedResponse,
    body_of,
    compact,
    said,
)

_POLL_SECONDS = 0.02  # how soon stop() takes effect; the default half second would dominate test time

#: Checked in order; a path none of them claims is answered in OpenAI's shape (Chat Completions).
_PROTOCOLS = (gemini.PROTOCOL, openai_responses.PROTOCOL, anthropic.PROTOCOL, bedrock.CONVERSE)


def _protocol(path: str) -> Protocol:
    return next((p for p in _PROTOCOLS if p.matches(path)), openai_chat.PROTOCOL)


class FakeProvider:
    """A started/stopped HTTP server answering model calls from a script, on 127.0.0.1.

    It is a real socket server, so recording through it runs the whole path (SDK, HTTP client,
    interception, normalization) as against the real API, with answers shaped like the providers'
    own and deterministic (ids and timestamps from a per-server counter).
    """

    def __init__(self, respond: Responder | None = None, *, tls: ssl.SSLContext | None = None) -> None:
        """``tls``: a server-side context with its certificate loaded, to serve HTTPS instead."""
        self._respond = respond
        self._tls = tls
        self._script: deque[tuple[Script, Said | None]] = deque()
        #: Answers served from the script (the conversations' answers that came from this server).
        self._served = 0
        self._received: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        self._ids = Ids()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        if self._server is not None:
            return
        server = _Server(("127.0.0.1", 0), _Handler)
        server.provider = self
        if self._tls is not None:
            server.socket = self._tls.wrap_socket(server.socket, server_side=True)
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
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self._server.server_address[1]}"

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
        """Let ``respond(path, request_json) -> (status, json_body)`` answer whatever is not queued."""
        self._respond = respond

    def queue(self, *responses: ScriptedResponse) -> None:
        for response in responses:
            self._push(_constant(response))

    def queue_status(self, status: int, body: Any = None, *, headers: Sequence[tuple[str, str]] = ()) -> None:
        """An error answer; without ``body``, the provider's own error shape for the request's path."""

        def script(request: ReceivedRequest) -> ScriptedResponse:
            payload = (
                body if body is not None else _protocol(request.path).error_body(status, "scripted error")
            )
            return ScriptedResponse(status, payload, tuple(headers))

        self._push(script)

    def queue_anthropic_text(self, text: str, *, gzip: bool = False, envelope: Envelope = PLAIN) -> None:
        self.queue_anthropic_tool_calls([], text=text, gzip=gzip, envelope=envelope)

    def queue_anthropic_tool_calls(
        self, calls: Calls, text: str | None = None, *, gzip: bool = False, envelope: Envelope = PLAIN
    ) -> None:
        """An Anthropic Messages answer (``POST /v1/messages``), streamed when the request asks for it."""
        script = anthropic.script(self._ids, text, calls, gzip=gzip, envelope=envelope)
        self._push(script, anthropic.PROTOCOL, said(text, calls))

    def queue_anthropic_content(
        self,
        blocks: Sequence[Mapping[str, Any]],
        *,
        stop_reason: str = "end_turn",
        gzip: bool = False,
        container: Mapping[str, Any] | None = None,
    ) -> None:
        """An Anthropic Messages answer whose ``content`` is ``blocks`` as given: several text blocks,
        text after a call, server tools and their results, text with citations; ``container`` is the
        code execution container it used (``{"id", "expires_at"}``)."""
        calls = [(b["name"], b["input"]) for b in blocks if b.get("type") == "tool_use"]
        text = "".join(b["text"] for b in blocks if b.get("type") == "text") or None
        script = anthropic.content_script(self._ids, blocks, stop_reason, gzip=gzip, container=container)
        self._push(script, anthropic.PROTOCOL, said(text, calls))

    def queue_converse_text(self, text: str) -> None:
        self.queue_converse_tool_calls([], text=text)

    def queue_converse_tool_calls(self, calls: Calls, text: str | None = None) -> None:
        """An Amazon Bedrock Converse answer (``POST /model/{id}/converse``), streamed for
        ``converse-stream``. Anthropic answers on Bedrock's InvokeModel are ``queue_anthropic_*``."""
        self._push(bedrock.converse_script(self._ids, text, calls), bedrock.CONVERSE, said(text, calls))

    def queue_openai_text(
        self,
        text: str,
        *,
        gzip: bool = False,
        annotations: Sequence[Mapping[str, Any]] = (),
        envelope: Envelope = PLAIN,
    ) -> None:
        """A Chat Completions text answer; ``annotations`` are its message's ``url_citation``s."""
        script = openai_chat.script(
            self._ids, text, [], gzip=gzip, annotations=annotations, envelope=envelope
        )
        self._push(script, openai_chat.PROTOCOL, said(text, []))

    def queue_openai_choices(
        self, answers: Sequence[tuple[str | None, Calls]], *, gzip: bool = False
    ) -> None:
        """A Chat Completions answer of several choices (a request with ``n > 1``): each answer's text
        and calls, in order; a stream interleaves their chunks."""
        (text, calls), *more = answers
        script = openai_chat.script(self._ids, text, calls, gzip=gzip, more=more)
        self._push(script, openai_chat.PROTOCOL, said(text, calls))

    def queue_openai_tool_calls(
        self, calls: Calls, text: str | None = None, *, gzip: bool = False, envelope: Envelope = PLAIN
    ) -> None:
        """A Chat Completions answer (``POST …/chat/completions``), streamed when the request asks for it."""
        script = openai_chat.script(self._ids, text, calls, gzip=gzip, envelope=envelope)
        self._push(script, openai_chat.PROTOCOL, said(text, calls))

    def queue_responses_text(self, text: str, *, gzip: bool = False, envelope: Envelope = PLAIN) -> None:
        self.queue_responses_tool_calls([], text=text, gzip=gzip, envelope=envelope)

    def queue_responses_tool_calls(
        self, calls: Calls, text: str | None = None, *, gzip: bool = False, envelope: Envelope = PLAIN
    ) -> None:
        """A Responses API answer (``POST …/responses``), streamed when the request asks for it."""
        script = openai_responses.script(self._ids, text, calls, gzip=gzip, envelope=envelope)
        self._push(script, openai_responses.PROTOCOL, said(text, calls))

    def queue_responses_output(self, items: Sequence[Mapping[str, Any]], *, gzip: bool = False) -> None:
        """A Responses API answer whose ``output`` is ``items`` as given: built-in tool items (a
        ``web_search_call``), messages with annotated text, function calls, in any order."""
        calls = [(i["name"], json.loads(i["arguments"])) for i in items if i.get("type") == "function_call"]
        texts = [p["text"] for i in items if i.get("type") == "message" for p in i["content"]]
        script = openai_responses.output_script(self._ids, items, gzip=gzip)
        self._push(script, openai_responses.PROTOCOL, said("".join(texts) or None, calls))

    def queue_gemini_text(
        self,
        text: str,
        *,
        thinking: bool = False,
        gzip: bool = False,
        grounding: Mapping[str, Any] | None = None,
        url_context: Mapping[str, Any] | None = None,
        envelope: Envelope = PLAIN,
    ) -> None:
        """A Gemini text answer; ``grounding`` is its ``groundingMetadata`` (a googleSearch answer),
        ``url_context`` its ``urlContextMetadata`` (a urlContext answer)."""
        fields = (("groundingMetadata", grounding), ("urlContextMetadata", url_context))
        metadata = {key: dict(value) for key, value in fields if value is not None}
        script = gemini.script(
            self._ids,
            text,
            [],
            call_ids=False,
            thinking=thinking,
            gzip=gzip,
            metadata=metadata,
            envelope=envelope,
        )
        self._push(script, gemini.PROTOCOL, said(text, []))

    def queue_gemini_parts(self, parts: Sequence[Mapping[str, Any]], *, gzip: bool = False) -> None:
        """A Gemini answer whose candidate holds ``parts`` as given: code execution
        (``executableCode``, ``codeExecutionResult``) between text parts, function calls."""
        calls = [(p["functionCall"]["name"], p["functionCall"]["args"]) for p in parts if "functionCall" in p]
        text = "".join(p["text"] for p in parts if "text" in p) or None
        script = gemini.script(self._ids, None, [], call_ids=False, thinking=False, gzip=gzip, parts=parts)
        self._push(script, gemini.PROTOCOL, said(text, calls))

    def queue_gemini_candidates(
        self, answers: Sequence[tuple[str | None, Calls]], *, gzip: bool = False
    ) -> None:
        """A Gemini answer of several candidates (a request with ``candidateCount > 1``): each one's text
        and calls, in order; a stream interleaves their chunks."""
        (text, calls), *more = answers
        script = gemini.script(self._ids, text, calls, call_ids=False, thinking=False, gzip=gzip, more=more)
        self._push(script, gemini.PROTOCOL, said(text, calls))

    def queue_gemini_tool_calls(
        self,
        calls: Calls,
        text: str | None = None,
        *,
        call_ids: bool = False,
        thinking: bool = False,
        gzip: bool = False,
        envelope: Envelope = PLAIN,
    ) -> None:
        """A Gemini answer (``…:generateContent``), streamed for ``:streamGenerateContent``.

        Function calls have no ``id`` unless ``call_ids`` (Gemini 2.x sends none, Gemini 3 does).
        """
        script = gemini.script(
            self._ids, text, calls, call_ids=call_ids, thinking=thinking, gzip=gzip, envelope=envelope
        )
        self._push(script, gemini.PROTOCOL, said(text, calls))

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

    def _push(self, script: Script, protocol: Protocol | None = None, says: Said | None = None) -> None:
        """Queue ``script``; ``says`` is what it answers, to recognise it in a conversation later."""
        if protocol is not None:
            script = _for_protocol(script, protocol)
        with self._lock:
            self._script.append((script, says))

    def _skip_held(self, request: ReceivedRequest) -> None:
        """Drop the queued answers the request's conversation already holds without this server.

        A replay that goes live (``new_episodes``) answered the first calls from the cassette, so a
        freshly scripted fake has not served them: the answers it would serve first are already in
        the conversation. When the conversation holds more answers than this server ever served, the
        queue's leading answers that match its latest ones are dropped, so the live tail gets the
        answers scripted for it. Called under the lock.
        """
        scripted = self._script and self._script[0][1] is not None
        held = _protocol(request.path).held(body_of(request)) if scripted else []
        unseen = len(held) - self._served
        for answer in held[len(held) - unseen :] if unseen > 0 else []:
            if not self._script or self._script[0][1] != answer:
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
        return _unretryable(
            request.path, f"fake provider: nothing scripted for {request.method} {request.path}"
        )


def _constant(response: ScriptedResponse) -> Script:
    def script(_request: ReceivedRequest) -> ScriptedResponse:
        return response

    return script


def _unretryable(path: str, message: str) -> ScriptedResponse:
    body = _protocol(path).error_body(500, message)
    return ScriptedResponse(500, body, (("x-should-retry", "false"),))


def _for_protocol(script: Script, protocol: Protocol) -> Script:
    """A provider-specific answer sent to another provider's path is a test bug: say so, un-retried."""

    def guarded(request: ReceivedRequest) -> ScriptedResponse:
        if protocol.matches(request.path):
            return script(request)
        message = f"fake provider: the next scripted answer is for {protocol.label}, not {request.path}"
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
        payload = response.body if isinstance(response.body, bytes) else compact(response.body).encode()
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
