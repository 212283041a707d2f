"""The loopback relay: a child process hands its intercepted calls to the handler of its parent.

A Python child started while a test runs intercepts its own model calls like the parent does, but
its handler is a :class:`RelayClient`: each request goes over loopback to the parent's
:class:`RelayServer`, which asks the parent's own handler (the same ``on_model`` / ``on_other`` as
the parent's interception) and sends its decision back. A :class:`Reply` crosses as bytes; a
:class:`Forward` makes the child send the request itself and report the answer on the same
connection, so the parent's ``on_response`` sees it as it would its own. One interception
interface, whatever process the call comes from. See docs/pytest.md#child-processes.

The same port refuses plain HTTP (a child that could not be followed, sent here by the base-URL and
proxy variables a replay sets): ``on_http`` is told what it tried to reach, and the child gets a 403.

The wire: one JSON object per line, bodies in base64, the first line carrying the parent's token
(a random secret only the children it started know). This module knows nothing about cassettes.
"""

from __future__ import annotations

import base64
import json
import secrets
import socket
import socketserver
import threading
from collections.abc import Callable
from typing import Any

from ..errors import OfflineRequestError
from .handler import (
    Forward,
    ModelHandler,
    ModelRequest,
    OtherHandler,
    OtherRequest,
    Reply,
    UpstreamResponse,
)

__all__ = ["RelayClient", "RelayServer", "RelayUnavailable"]

#: What a relay connection may carry on one line (a model call's body included).
_MAX_LINE = 256 * 1024 * 1024


class RelayUnavailable(OSError):
    """The parent's relay could not be reached or answered nonsense (it ended, or the port is not it)."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: Any) -> bytes:
    return base64.b64decode(str(text))


def _headers(pairs: Any) -> list[tuple[str, str]]:
    return [(str(name), str(value)) for name, value in pairs]


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")


def _read(reader: Any) -> dict[str, Any] | None:
    """The next message on a connection, or ``None`` when the other side closed it."""
    line = reader.readline(_MAX_LINE)
    if not line:
        return None
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a relay message must be a JSON object")
    return message


def _encode_request(request: ModelRequest | OtherRequest) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "method": request.method,
        "url": request.url,
        "headers": request.headers,
        "body": _b64(request.body),
        "is_async": request.is_async,
    }
    if isinstance(request, ModelRequest):
        fields["route"] = request.route
    return fields


def _decode_model(fields: dict[str, Any]) -> ModelRequest:
    return ModelRequest(
        str(fields["route"]),
        str(fields["method"]),
        str(fields["url"]),
        _headers(fields["headers"]),
        _unb64(fields["body"]),
        bool(fields["is_async"]),
    )


def _decode_other(fields: dict[str, Any]) -> OtherRequest:
    return OtherRequest(
        str(fields["method"]),
        str(fields["url"]),
        _headers(fields["headers"]),
        _unb64(fields["body"]),
        bool(fields["is_async"]),
    )


# -- the parent's end ----------------------------------------------------------------------------


class RelayServer:
    """Answers the children's calls on 127.0.0.1 with the handlers it is given (one thread per call).

    ``address`` is what a child needs to connect (``host:port/token``); it goes into the children's
    environment. ``on_http(what)`` words the refusal of a plain HTTP request and notes it.
    """

    def __init__(self, on_model: ModelHandler, on_other: OtherHandler, on_http: Callable[[str], str]) -> None:
        self.on_model = on_model
        self.on_other = on_other
        self.on_http = on_http
        self.token = secrets.token_hex(16)
        self._server = _Server(("127.0.0.1", 0), _Connection)
        self._server.relay = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="pytest-blackbox child relay", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}/{self.token}"

    @property
    def url(self) -> str:
        """The port as an HTTP URL: where a replay points the children's base-URL and proxy variables."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> RelayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def close_in_child(self) -> None:
        """In a forked child: drop the copy of the listening socket (its serving thread did not follow)."""
        self._server.socket.close()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    relay: RelayServer


class _Connection(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        relay = self.server.relay
        first = self.rfile.peek(1)[:1] if hasattr(self.rfile, "peek") else b""
        if first != b"{":
            self._refuse_http(relay)
            return
        try:
            message = _read(self.rfile)
        except ValueError:
            return
        if message is None or not secrets.compare_digest(str(message.get("token", "")), relay.token):
            return
        if message.get("op") == "model":
            self._model(relay.on_model(_decode_model(message["request"])))
        else:
            self._other(relay.on_other, _decode_other(message["request"]))

    def _model(self, decision: Reply | Forward) -> None:
        if isinstance(decision, Reply):
            self._reply(decision)
            return
        if decision.on_response is None:
            _send(self.connection, {"forward": "plain"})
            return
        _send(self.connection, {"forward": "report"})
        try:
            report = _read(self.rfile)
        except (OSError, ValueError) as error:
            decision.failed(error)
            return
        if report is None:
            decision.failed(ConnectionError("the child process closed its relay before the answer arrived"))
        elif "response" in report:
            answer = report["response"]
            decision.on_response(
                UpstreamResponse(
                    int(answer["status"]),
                    _headers(answer["headers"]),
                    _unb64(answer["body"]),
                    bool(answer["complete"]),
                )
            )
        else:
            decision.failed(ConnectionError(str(report.get("failure", "the child's request failed"))))
        _send(self.connection, {"ok": True})

    def _other(self, on_other: OtherHandler, request: OtherRequest) -> None:
        try:
            decision = on_other(request)
        except Exception as error:  # the parent refused it: the child raises the same words
            _send(self.connection, {"refused": str(error)})
            return
        if isinstance(decision, Reply):
            self._reply(decision)
        else:
            _send(self.connection, {"forward": "plain"})

    def _reply(self, reply: Reply) -> None:
        _send(
            self.connection,
            {"reply": {"status": reply.status, "headers": reply.headers, "body": _b64(reply.body)}},
        )

    def _refuse_http(self, relay: RelayServer) -> None:
        """A plain HTTP request (a proxy's ``CONNECT host:443`` or a call to a base URL): refused."""
        request_line = self.rfile.readline(8192).decode("latin-1").strip()
        method, _, rest = request_line.partition(" ")
        target = rest.rsplit(" ", 1)[0] if " " in rest else rest
        if method.upper() != "CONNECT":
            target = f"{method} {target.split('?', 1)[0]}"
        text = relay.on_http(target) + "\n"
        body = text.encode("utf-8")
        head = (
            "HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain; charset=utf-8\r\n"
            f"x-should-retry: false\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        self.connection.sendall(head.encode("latin-1") + body)


# -- the child's end -----------------------------------------------------------------------------


class RelayClient:
    """The handler of a followed child: every call is asked of the parent at ``address``.

    ``on_model`` raises :class:`RelayUnavailable` when the parent cannot answer (its test ended);
    the caller turns that into a refusal in the provider's shape.
    """

    def __init__(self, address: str) -> None:
        where, _, self._token = address.partition("/")
        host, _, port = where.rpartition(":")
        if not host or not port.isdigit() or not self._token:
            raise RelayUnavailable(f"not a relay address: {where!r}")
        self._where = (host, int(port))

    def _ask(
        self, op: str, request: ModelRequest | OtherRequest
    ) -> tuple[socket.socket, Any, dict[str, Any]]:
        try:
            sock = socket.create_connection(self._where)
        except OSError as error:
            raise RelayUnavailable(f"the test process's relay is gone ({error.strerror or error})") from None
        reader = sock.makefile("rb")
        try:
            _send(sock, {"token": self._token, "op": op, "request": _encode_request(request)})
            answer = _read(reader)
        except (OSError, ValueError) as error:
            sock.close()
            raise RelayUnavailable(f"the test process's relay failed ({error})") from None
        if answer is None:
            sock.close()
            raise RelayUnavailable("the test process's relay closed the connection without an answer")
        return sock, reader, answer

    def on_model(self, request: ModelRequest) -> Reply | Forward:
        sock, reader, answer = self._ask("model", request)
        if answer.get("forward") != "report":
            sock.close()
            return self._decided(answer)
        report = _Report(sock, reader)
        return Forward(on_response=report.response, on_failure=report.failure)

    def on_other(self, request: OtherRequest) -> Reply | Forward:
        sock, _, answer = self._ask("other", request)
        sock.close()
        if "refused" in answer:
            raise OfflineRequestError(str(answer["refused"]))
        return self._decided(answer)

    @staticmethod
    def _decided(answer: dict[str, Any]) -> Reply | Forward:
        if "reply" in answer:
            reply = answer["reply"]
            return Reply(int(reply["status"]), _unb64(reply["body"]), _headers(reply["headers"]))
        return Forward()


class _Report:
    """Sends the answer of a forwarded call back to the parent, once, on the call's own connection."""

    def __init__(self, sock: socket.socket, reader: Any) -> None:
        self._sock = sock
        self._reader = reader
        self._lock = threading.Lock()
        self._sent = False

    def response(self, answer: UpstreamResponse) -> None:
        fields = {
            "status": answer.status,
            "headers": answer.headers,
            "body": _b64(answer.body),
            "complete": answer.complete,
        }
        self._finish({"response": fields})

    def failure(self, error: BaseException) -> None:
        self._finish({"failure": str(error) or type(error).__name__})

    def _finish(self, message: dict[str, Any]) -> None:
        with self._lock:
            if self._sent:
                return
            self._sent = True
        try:  # never raise: the SDK would see it as a transport failure (see ``Forward``)
            _send(self._sock, message)
            _read(self._reader)
        except (OSError, ValueError):
            pass
        finally:
            self._sock.close()
