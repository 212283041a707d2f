"""The replay's socket guard: while a blackbox test replays, its process connects only to loopback and
to the hosts the test allows, whatever library opens the connection (urllib, requests, aiohttp, a raw
socket). See docs/pytest.md#network-blocking.

Model calls never get this far: the interception answers them before any socket is opened. This
catches the rest, such as an unwrapped tool fetching a page, which would otherwise make the replay
depend on the network.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any

from ..engine import host_allowed, is_local, looks_like_ip
from ..errors import OfflineRequestError

_lock = threading.Lock()
_active: SocketGuard | None = None
_originals: dict[str, Any] = {}


class SocketGuard:
    """Refuses, while started, every connection to a host that is neither loopback nor allowed.

    ``describe(host, port)`` words the refusal; the first refusal is kept (:attr:`refusal`) so that a
    test whose code swallowed the error still fails.
    """

    def __init__(self, allowed: tuple[str, ...], describe: Callable[[str, int], str]) -> None:
        self.allowed = tuple(host.lower() for host in allowed)
        self._describe = describe
        self.refusal: OfflineRequestError | None = None
        #: Addresses resolved while the guard ran → the name that was resolved (for the message).
        self._names: dict[str, str] = {}

    def start(self) -> SocketGuard:
        global _active
        with _lock:
            if not _originals:
                _patch()
            _active = self
        return self

    def stop(self) -> None:
        global _active
        with _lock:
            if _active is self:
                _active = None
                _unpatch()

    def check(self, family: int, address: Any) -> None:
        """Refuse a connection with :class:`OfflineRequestError`: not an ``OSError``, so no client retries."""
        if family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(address, tuple):
            return  # a Unix socket or a socket pair: local by construction
        host, port = str(address[0]), int(address[1])
        name = self._names.get(host, host)
        if is_local(host) or host_allowed(self.allowed, host, name):
            return
        if name == host and not looks_like_ip(host) and self._resolves_locally(host):
            return
        shown = f"{name}:{port}" if name == host else f"{name}:{port} ({host})"
        error = OfflineRequestError(self._describe(shown, port))
        if self.refusal is None:
            self.refusal = error
        raise error

    def _resolves_locally(self, host: str) -> bool:
        try:
            infos = _originals["getaddrinfo"](host, None)
        except OSError:
            return False
        return bool(infos) and all(is_local(str(info[4][0])) for info in infos)

    def note_resolved(self, host: Any, infos: list[Any]) -> None:
        if isinstance(host, bytes):
            host = host.decode("ascii", errors="replace")
        if isinstance(host, str) and not looks_like_ip(host):
            for info in infos:
                self._names[str(info[4][0])] = host


def _guarded_connect(original: Callable[..., Any]) -> Callable[..., Any]:
    def connect(sock: socket.socket, address: Any) -> Any:
        guard = _active
        if guard is not None:
            guard.check(sock.family, address)
        return original(sock, address)

    return connect


def _guarded_getaddrinfo(original: Callable[..., Any]) -> Callable[..., Any]:
    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        infos = original(host, *args, **kwargs)
        guard = _active
        if guard is not None:
            guard.note_resolved(host, infos)
        return infos

    return getaddrinfo


def _patch() -> None:
    for name in ("connect", "connect_ex"):
        _originals[name] = socket.socket.__dict__.get(name)
        setattr(socket.socket, name, _guarded_connect(getattr(socket.socket, name)))
    _originals["getaddrinfo"] = socket.getaddrinfo
    socket.getaddrinfo = _guarded_getaddrinfo(socket.getaddrinfo)


def _unpatch() -> None:
    for name in ("connect", "connect_ex"):
        original = _originals.pop(name)
        if original is None:
            delattr(socket.socket, name)
        else:
            setattr(socket.socket, name, original)
    socket.getaddrinfo = _originals.pop("getaddrinfo")
