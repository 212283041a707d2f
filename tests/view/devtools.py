"""Headless Chromium driven over the DevTools protocol, with the standard library only.

Just enough of a WebSocket client (RFC 6455: masked client text frames, fragmented server
messages, ping/pong, close) to send DevTools commands and read their replies and events. Every
wait has a deadline, and the browser runs in its own process group so it and all its helper
processes are ended together.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import struct
import subprocess
import time
import urllib.request
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
)
STARTUP_SECONDS = 30.0
COMMAND_SECONDS = 30.0


class DevToolsError(Exception):
    """The browser did not start, answer, or answered with an error."""


class WebSocket:
    """One client connection; text frames only (DevTools speaks JSON)."""

    def __init__(self, url: str, timeout: float) -> None:
        host_port, _, path = url.removeprefix("ws://").partition("/")
        host, _, port = host_port.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise DevToolsError("the browser closed the connection during the WebSocket handshake")
            response += chunk
        status = response.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise DevToolsError(f"WebSocket handshake refused: {status.decode(errors='replace')}")
        self.buffer = response.split(b"\r\n\r\n", 1)[1]

    def _exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = self.sock.recv(max(65536, size - len(self.buffer)))
            if not chunk:
                raise DevToolsError("the browser closed the DevTools connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        header = bytes([0x80 | opcode])
        size = len(payload)
        if size < 126:
            header += bytes([0x80 | size])
        elif size < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", size)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", size)
        mask = os.urandom(4)
        masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def send(self, text: str) -> None:
        self._send_frame(0x1, text.encode("utf-8"))

    def receive(self) -> str:
        """The next whole text message (continuation frames joined; pings answered)."""
        parts: list[bytes] = []
        while True:
            first, second = self._exactly(2)
            opcode, size = first & 0x0F, second & 0x7F
            if size == 126:
                (size,) = struct.unpack(">H", self._exactly(2))
            elif size == 127:
                (size,) = struct.unpack(">Q", self._exactly(8))
            mask = self._exactly(4) if second & 0x80 else b""
            payload = self._exactly(size)
            if mask:
                payload = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode == 0x8:
                raise DevToolsError("the browser closed the DevTools connection")
            if opcode in (0x0, 0x1, 0x2):
                parts.append(payload)
                if first & 0x80:
                    return b"".join(parts).decode("utf-8")

    def close(self) -> None:
        with suppress(OSError):
            self._send_frame(0x8, b"")
        self.sock.close()


class Page:
    """One browser tab: send commands, collect events."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def command(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        wanted = self.next_id
        self.ws.send(json.dumps({"id": wanted, "method": method, "params": params}))
        deadline = time.monotonic() + COMMAND_SECONDS
        while time.monotonic() < deadline:
            message = json.loads(self.ws.receive())
            if message.get("id") == wanted:
                if "error" in message:
                    raise DevToolsError(f"{method} failed: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)
        raise DevToolsError(f"{method} got no answer within {COMMAND_SECONDS} s")

    def wait_for(self, event: str, seconds: float = COMMAND_SECONDS) -> dict[str, Any]:
        for seen in self.events:
            if seen["method"] == event:
                return seen
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message: dict[str, Any] = json.loads(self.ws.receive())
            if "method" in message:
                self.events.append(message)
                if message["method"] == event:
                    return message
        raise DevToolsError(f"no {event} within {seconds} s")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (JSON-serializable values only)."""
        reply = self.command("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in reply:
            raise DevToolsError(f"{expression!r} threw: {reply['exceptionDetails'].get('text')}")
        return reply["result"].get("value")

    def open(self, url: str) -> None:
        self.events.clear()
        self.command("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def screenshot(self, width: int, height: int, scale: float = 1.0) -> bytes:
        clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": scale}
        reply = self.command("Page.captureScreenshot", format="png", clip=clip)
        return base64.b64decode(reply["data"])


def _devtools_port(profile: Path, process: subprocess.Popen[bytes]) -> int:
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise DevToolsError(f"chromium exited with code {process.returncode} before DevTools was ready")
        if marker.is_file():
            lines = marker.read_text().splitlines()
            if lines and lines[0].isdigit():
                return int(lines[0])
        time.sleep(0.05)
    raise DevToolsError(f"chromium wrote no DevToolsActivePort within {STARTUP_SECONDS} s")


def _page_socket_url(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=COMMAND_SECONDS) as reply:
        targets = json.loads(reply.read())
    for target in targets:
        if target.get("type") == "page":
            url: str = target["webSocketDebuggerUrl"]
            return url
    raise DevToolsError("chromium has no page target")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End the browser and every helper process it started (its own process group)."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # any helper that outlived the browser
    process.wait(timeout=10)


@contextmanager
def chromium(profile: Path, width: int = 1200, height: int = 900) -> Iterator[Page]:
    """A fresh headless Chromium with one page, killed (with its helpers) on exit."""
    process = subprocess.Popen(
        [
            str(CHROMIUM),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    ws: WebSocket | None = None
    try:
        port = _devtools_port(profile, process)
        ws = WebSocket(_page_socket_url(port), timeout=COMMAND_SECONDS)
        page = Page(ws)
        for domain in ("Page", "Runtime", "Log"):
            page.command(f"{domain}.enable")
        yield page
    finally:
        if ws is not None:
            ws.close()
        _stop(process)


# --------------------------------------------------------------------------------------------
# PNG checks


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the unfiltered rows of an 8-bit RGB/RGBA, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, idat, header = 8, b"", b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        (crc,) = struct.unpack(">I", data[position + 8 + length : position + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in the {kind!r} chunk"
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, interlace) == (8, 0) and color in (2, 6), "only 8-bit RGB/RGBA, non-interlaced"
    channels = 4 if color == 6 else 3
    raw, stride = zlib.decompress(idat), width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(kind, line, previous, channels)
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def _unfilter(kind: int, line: bytearray, above: bytearray, bpp: int) -> None:
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up = above[i]
        corner = above[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            estimate = left + up - corner
            pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
            predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
            line[i] = (line[i] + predictor) & 0xFF
