"""Child processes follow the test that started them: their model calls go into its cassette.

The way coverage.py follows subprocesses: a start-up hook installed with the package
(``pytest-blackbox.pth``) runs :func:`start_from_environment` in every Python process; while a
blackbox test runs, the plugin puts :data:`CHILD_VAR` in the environment, and a child that finds it
intercepts its own model calls and hands each one to the test's session over loopback
(``interception.relay``), so the session records it or answers it from the cassette exactly as it
does its own calls, in the order it receives them. A ``fork`` child inherits the session itself: the
fork hook turns it into a follower too.

A child that cannot follow (not Python, ``python -S``, an environment of its own) must
never reach a provider in a replay: the replay points the SDKs' base-URL variables and the proxy
variables at the relay's port, which refuses plain HTTP and fails the test naming what was tried.
See docs/pytest.md#child-processes and docs/limitations.md.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import providers
from ..errors import OfflineRequestError
from ..interception import Forward, Interceptor, ModelRequest, OtherRequest, Reply
from ..interception.relay import RelayClient, RelayServer, RelayUnavailable
from . import owners
from .wire import WireCall, refusal

__all__ = ["CHILD_VAR", "CLOSED_VARIABLES", "ChildWatch", "follow_children", "start_from_environment"]

#: The relay's address (``host:port/token``), set only while a blackbox test runs.
CHILD_VAR = "BLACKBOX_CHILD_RELAY"
#: Variables a replay points at the relay's refusing port: the SDKs' base URLs and every proxy.
BASE_URL_VARIABLES = (
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
)
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
CLOSED_VARIABLES = (*BASE_URL_VARIABLES, *PROXY_VARIABLES)
_NO_PROXY_VARIABLES = ("NO_PROXY", "no_proxy")
_LOOPBACK = ("localhost", "127.0.0.1", "::1")


class _Parent:
    """This process's relay (one per process, started by the first test that needs it) and the
    session it answers for: the test running now, if any."""

    lock = threading.Lock()
    relay: RelayServer | None = None
    session: Any = None
    owner: owners.CallOwner | None = None
    #: The interception of a followed child (this process is one), if started.
    follower: Interceptor | None = None


def _relay() -> RelayServer:
    with _Parent.lock:
        if _Parent.relay is None:
            with owners.unowned():  # its threads answer for whichever test runs, not the first one
                _Parent.relay = RelayServer(_on_model, _on_other, _on_http).start()
        return _Parent.relay


def _on_model(request: ModelRequest) -> Reply | Forward:
    session, owner = _Parent.session, _Parent.owner
    if session is None:
        return Forward()  # no blackbox test runs: the child's call goes out, as the parent's would
    with owners.running_as(owner):
        return session._on_model(request)  # type: ignore[no-any-return]


def _on_other(request: OtherRequest) -> Reply | Forward:
    session, owner = _Parent.session, _Parent.owner
    if session is None:
        return Forward()
    with owners.running_as(owner):
        return session._on_other(request)  # type: ignore[no-any-return]


def _on_http(target: str) -> str:
    """A child that could not be followed tried the network through a variable a replay closed."""
    session = _Parent.session
    shown = session._mask(target) if session is not None else target
    text = (
        f"a request to {shown} came during a replay through the base-URL or proxy variables a replay "
        "sets (from a child process pytest-blackbox cannot follow, or code reading those variables); "
        "nothing was sent. Only Python children started with the test's environment are followed "
        "(not other programs, `python -S`, or an env= of their own): run it that way, or make the "
        "request inside a wrapped tool (blackbox.tool)"
    )
    if session is not None:
        session._refuse_call(OfflineRequestError(text))
    return "[blackbox] " + text


@dataclass
class ChildWatch:
    """One test's children followed: the variables it set, restored by :meth:`stop`."""

    session: Any
    saved: dict[str, str | None] = field(default_factory=dict)

    def stop(self) -> None:
        with _Parent.lock:
            if _Parent.session is self.session:
                _Parent.session = None
                _Parent.owner = None
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self.saved.clear()


def follow_children(
    session: Any, owner: owners.CallOwner | None, *, close: bool, allowed_hosts: Iterable[str] = ()
) -> ChildWatch:
    """Follow the children started from now on into ``session``; ``close``: a replay, so also point
    the base-URL and proxy variables at the relay's refusing port (loopback and ``allowed_hosts``
    stay reachable without the proxy)."""
    relay = _relay()
    watch = ChildWatch(session)
    values = {CHILD_VAR: relay.address}
    if close:
        values.update(dict.fromkeys(CLOSED_VARIABLES, relay.url))
        values.update(dict.fromkeys(_NO_PROXY_VARIABLES, _no_proxy(allowed_hosts)))
    for name, value in values.items():
        watch.saved[name] = os.environ.get(name)
        os.environ[name] = value
    with _Parent.lock:
        _Parent.session = session
        _Parent.owner = owner
    return watch


def _no_proxy(allowed: Iterable[str]) -> str:
    """``NO_PROXY`` for loopback and the allowed hosts (``*.example.com`` is written ``.example.com``)."""
    hosts = list(_LOOPBACK)
    for pattern in allowed:
        if pattern.startswith("*.") and "*" not in pattern[2:]:
            hosts.append(pattern[1:])
        elif not any(char in pattern for char in "*?["):
            hosts.append(pattern)
    return ",".join(hosts)


# -- the child's side ----------------------------------------------------------------------------


def _follow(address: str) -> None:
    """Intercept this process's calls and hand them to the relay at ``address``."""
    client = RelayClient(address)

    def on_model(request: ModelRequest) -> Reply | Forward:
        try:
            return client.on_model(request)
        except RelayUnavailable as error:
            text = f"[blackbox] this child process's test has ended ({error}); the model call was not sent"
            return refusal(WireCall.provider_of(request), text)

    def on_other(request: OtherRequest) -> Reply | Forward:
        try:
            return client.on_other(request)
        except RelayUnavailable as error:
            raise OfflineRequestError(
                f"this child process's test has ended ({error}); the request was not sent"
            ) from None

    interceptor = Interceptor(on_model, on_other, routes=providers.ROUTES)
    interceptor.start()
    _Parent.follower = interceptor


def start_from_environment() -> None:
    """The start-up hook (``pytest-blackbox.pth``): follow the test named by :data:`CHILD_VAR`, if set.

    It never stops the child from starting: a failure is one line on stderr.
    """
    address = os.environ.get(CHILD_VAR)
    if not address or _Parent.follower is not None:
        return
    try:
        _follow(address)
    except Exception as error:
        print(
            f"pytest-blackbox: this child process cannot follow its test ({error}); "
            "its model calls are neither recorded nor replayed",
            file=sys.stderr,
        )


def _after_fork_in_child() -> None:
    """A fork child holds a copy of the test's session: its calls go to the parent's instead."""
    relay, session = _Parent.relay, _Parent.session
    _Parent.relay = _Parent.session = _Parent.owner = None
    if relay is None:
        return
    address = relay.address
    relay.close_in_child()
    if session is None or _Parent.follower is not None:
        return
    session.stop()
    _follow(address)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
