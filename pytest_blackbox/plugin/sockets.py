"""The replay's socket guard: while a blackbox test replays, its process reaches only loopback and the
hosts the test allows, whatever library opens the connection (urllib, requests, aiohttp, a raw
socket) and however it goes out: a TCP or UDP ``connect``, a datagram sent with ``sendto`` or
``sendmsg`` on an unconnected socket, or a name resolved (``getaddrinfo``, ``gethostbyname``,
``gethostbyname_ex``: resolving a name sends a DNS query). See docs/pytest.md#network-blocking.

Model calls never get this far: the interception answers them before any socket is opened. This
catches the rest, such as an unwrapped tool fetching a page, which would otherwise make the replay
depend on the network.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from ..engine import host_allowed, is_local, looks_like_ip
from ..errors import OfflineRequestError

_lock = threading.Lock()
_active: SocketGuard | None = None
_originals: dict[str, Any] = {}


#: What the guard refuses, as the refusal words it: ``describe(action, where)``.
CONNECT, DATAGRAM, RESOLVE = "connect to", "send a datagram to", "resolve"


def _hosts_file() -> str:
    if os.name == "nt":  # pragma: no cover - the suite runs on POSIX
        return os.path.join(
            os.environ.get("SYSTEMROOT", r"C:\Windows"), "System32", "drivers", "etc", "hosts"
        )
    return "/etc/hosts"


#: The hosts file's loopback names by its path, with the file's identity they were read from.
_read_names: dict[str, tuple[tuple[int, int, int, int], frozenset[str]]] = {}


def loopback_names(path: str | None = None) -> frozenset[str]:
    """The names the hosts file maps to loopback (the machine's own name, often): local without DNS.

    Read again only when the file changed (its inode, size or modification time): every replayed test
    starts a guard, and the file rarely changes within a run.
    """
    path = path or _hosts_file()
    try:
        stat = os.stat(path)
        identity = (stat.st_ino, stat.st_dev, stat.st_size, stat.st_mtime_ns)
        known = _read_names.get(path)
        if known is not None and known[0] == identity:
            return known[1]
        with open(path, encoding="utf-8", errors="replace") as hosts:
            lines = hosts.read().splitlines()
    except OSError:
        return frozenset()
    names = _loopback_names(lines)
    _read_names[path] = (identity, names)
    return names


def _loopback_names(lines: list[str]) -> frozenset[str]:
    """The names of the hosts file's ``lines`` whose address is loopback."""
    names: set[str] = set()
    for line in lines:
        fields = line.split("#", 1)[0].split()
        if len(fields) > 1 and is_local(fields[0]):
            names.update(name.lower().rstrip(".") for name in fields[1:])
    return frozenset(names)


class SocketGuard:
    """Refuses, while started, every connection, datagram and name resolution that would leave the
    machine for a host that is neither loopback nor allowed.

    ``describe(action, where)`` words the refusal (``action`` is :data:`CONNECT`, :data:`DATAGRAM` or
    :data:`RESOLVE`); the first refusal is kept (:attr:`refusal`) so that a test whose code swallowed
    the error still fails. A name is local if it is ``localhost`` or the hosts file maps it to
    loopback; any other name is refused before it is resolved, so not even a
    DNS query leaves.
    """

    def __init__(self, allowed: tuple[str, ...], describe: Callable[[str, str], str]) -> None:
        self.allowed = tuple(host.lower() for host in allowed)
        self._describe = describe
        self.refusal: OfflineRequestError | None = None
        #: Addresses resolved while the guard ran → the name that was resolved (for the message).
        self._names: dict[str, str] = {}
        self._local_names = loopback_names()

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

    def check(self, family: int, address: Any, action: str = CONNECT) -> None:
        """Refuse a connection or a datagram with :class:`OfflineRequestError`: not an ``OSError``, so
        no client retries."""
        if family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(address, tuple):
            return  # a Unix socket or a socket pair: local by construction
        host, port = str(address[0]), int(address[1])
        name = self._names.get(host, host)
        if is_local(host) or host_allowed(self.allowed, host, name) or self._local_name(name):
            return
        shown = f"{name}:{port}" if name == host else f"{name}:{port} ({host})"
        self._refuse(action, shown)

    def check_name(self, host: Any) -> None:
        """Refuse resolving a name that is neither local nor allowed (an IP address resolves locally)."""
        if isinstance(host, bytes):
            host = host.decode("ascii", errors="replace")
        if not isinstance(host, str) or not host or looks_like_ip(host.strip("[]")):
            return
        if is_local(host) or self._local_name(host) or host_allowed(self.allowed, host):
            return
        self._refuse(RESOLVE, host)

    def _local_name(self, name: str) -> bool:
        return name.lower().rstrip(".") in self._local_names

    def _refuse(self, action: str, where: str) -> None:
        error = OfflineRequestError(self._describe(action, where))
        if self.refusal is None:
            self.refusal = error
        raise error

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


def _guarded_sendto(original: Callable[..., Any]) -> Callable[..., Any]:
    """``sendto(data, address)`` or ``sendto(data, flags, address)``: the address comes last."""

    def sendto(sock: socket.socket, data: Any, *args: Any) -> Any:
        guard = _active
        if guard is not None and args:
            guard.check(sock.family, args[-1], DATAGRAM)
        return original(sock, data, *args)

    return sendto


def _guarded_sendmsg(original: Callable[..., Any]) -> Callable[..., Any]:
    """``sendmsg(buffers, ancdata, flags, address)``: only a message given an address leaves by it."""

    def sendmsg(sock: socket.socket, *args: Any, **kwargs: Any) -> Any:
        guard = _active
        address = args[3] if len(args) > 3 else kwargs.get("address")
        if guard is not None and address is not None:
            guard.check(sock.family, address, DATAGRAM)
        return original(sock, *args, **kwargs)

    return sendmsg


def _guarded_resolver(original: Callable[..., Any], *, note: bool = False) -> Callable[..., Any]:
    """``getaddrinfo``, ``gethostbyname`` or ``gethostbyname_ex``: checked before any query is sent;
    with ``note``, the addresses found are remembered under the name (for the refusal's message)."""

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        guard = _active
        if guard is not None:
            guard.check_name(host)
        found = original(host, *args, **kwargs)
        if guard is not None and note:
            guard.note_resolved(host, found)
        return found

    return resolve


_METHODS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "connect": _guarded_connect,
    "connect_ex": _guarded_connect,
    "sendto": _guarded_sendto,
    "sendmsg": _guarded_sendmsg,
}
_RESOLVERS = ("getaddrinfo", "gethostbyname", "gethostbyname_ex")


def _patch() -> None:
    for name, guarded in _METHODS.items():
        if hasattr(socket.socket, name):  # sendmsg: not on every platform
            _originals[name] = socket.socket.__dict__.get(name)
            setattr(socket.socket, name, guarded(getattr(socket.socket, name)))
    for name in _RESOLVERS:
        _originals[name] = getattr(socket, name)
        setattr(socket, name, _guarded_resolver(_originals[name], note=name == "getaddrinfo"))


def _unpatch() -> None:
    for name in _METHODS:
        if name not in _originals:
            continue
        original = _originals.pop(name)
        if original is None:
            delattr(socket.socket, name)
        else:
            setattr(socket.socket, name, original)
    for name in _RESOLVERS:
        setattr(socket, name, _originals.pop(name))
