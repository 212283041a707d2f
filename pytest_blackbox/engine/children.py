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
A recording points the base-URL variables there too (not the proxies, which would carry every
request of the test's process), so such a child's model call fails the test instead of missing
from the cassette; the processes that are followed send theirs to the real base URL
(:class:`BaseUrls`). See docs/pytest.md#child-processes and docs/limitations.md.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit

from .. import providers
from ..errors import OfflineRequestError
from ..interception import Forward, Interceptor, ModelRequest, OtherRequest, Reply
from ..interception.relay import RelayClient, RelayServer, RelayUnavailable
from . import owners
from .wire import WireCall, refusal

__all__ = [
    "CHILD_VAR",
    "CLOSED_VARIABLES",
    "BaseUrls",
    "ChildWatch",
    "follow_children",
    "start_from_environment",
]

#: The relay's address (``host:port/token``), set only while a blackbox test runs.
CHILD_VAR = "BLACKBOX_CHILD_RELAY"
#: In a recording, the base URLs the followed processes still use: JSON, variable → its value before
#: the test (``null``: unset, the SDK's default).
BASE_URLS_VAR = "BLACKBOX_CHILD_BASE_URLS"
#: The SDKs' base-URL variables, each with the address its SDK uses when it is unset (Vertex AI's
#: depends on the location: a recording closes that variable only when it is set).
BASE_URL_VARIABLES: dict[str, str | None] = {
    "ANTHROPIC_BASE_URL": "https://api.anthropic.com",
    "OPENAI_BASE_URL": "https://api.openai.com/v1",
    "GOOGLE_GEMINI_BASE_URL": "https://generativelanguage.googleapis.com",
    "GOOGLE_VERTEX_BASE_URL": None,
}
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
#: Variables a replay points at the relay's refusing port: the SDKs' base URLs and every proxy.
CLOSED_VARIABLES = (*BASE_URL_VARIABLES, *PROXY_VARIABLES)
_NO_PROXY_VARIABLES = ("NO_PROXY", "no_proxy")
_LOOPBACK = ("localhost", "127.0.0.1", "::1")
_Request = TypeVar("_Request", ModelRequest, OtherRequest)


class _Parent:
    """This process's relay (one per process, started by the first test that needs it) and the
    session it answers for: the test running now, if any."""

    lock = threading.Lock()
    relay: RelayServer | None = None
    session: Any = None
    owner: owners.CallOwner | None = None
    #: The base URLs the running test pointed at the relay.
    base_urls: BaseUrls | None = None
    #: The interception of a followed child (this process is one), if started.
    follower: Interceptor | None = None


@dataclass(frozen=True)
class BaseUrls:
    """The base-URL variables pointed at the relay, each as ``<relay>/<VARIABLE>``, so that a request
    arriving there says which variable sent it; ``originals`` holds their values before the test.

    In a recording (``retarget``) the followed processes, the test's own included, still reach the
    real base URL: their forwarded requests are sent there instead (:meth:`handle`).
    """

    relay_url: str
    originals: dict[str, str | None]
    retarget: bool = False

    @classmethod
    def from_environment(cls, address: str) -> BaseUrls:
        """A followed child's view of its test's base URLs (sent on only in a recording)."""
        relay_url = f"http://{address.partition('/')[0]}"
        text = os.environ.get(BASE_URLS_VAR)
        if not text:
            return cls(relay_url, {})
        originals = json.loads(text)
        if not isinstance(originals, dict):
            raise ValueError(f"{BASE_URLS_VAR} must hold a JSON object")
        return cls(relay_url, originals, retarget=True)

    def value(self, name: str) -> str:
        return f"{self.relay_url}/{name}"

    def real(self, name: str) -> str | None:
        """Where the variable's SDK goes without the relay (``None``: not known)."""
        return (self.originals.get(name) or BASE_URL_VARIABLES.get(name) or "").rstrip("/") or None

    def split(self, path: str) -> tuple[str, str] | None:
        """``(variable, rest)`` of a path under one of the variables' relay URLs."""
        found = re.match(r"/([A-Z_]+)(?=[/?#]|\Z)(.*)\Z", path, re.DOTALL)
        if found is None or found.group(1) not in self.originals:
            return None
        return found.group(1), found.group(2)

    def real_url(self, url: str) -> str | None:
        """Where a request to one of the relay URLs really goes, in a recording (``None``: elsewhere)."""
        if not (self.retarget and url.startswith(self.relay_url + "/")):
            return None
        parts = self.split(url[len(self.relay_url) :])
        real = self.real(parts[0]) if parts is not None else None
        return real + parts[1] if real is not None and parts is not None else None

    def handle(self, handler: Callable[[_Request], Reply | Forward], request: _Request) -> Reply | Forward:
        """``handler``'s decision on ``request`` as if it went to the real base URL, and sent there."""
        real = self.real_url(request.url)
        if real is None:
            return handler(request)
        decision = handler(replace(request, url=real))
        if isinstance(decision, Forward):
            decision.target = real
        return decision

    def shown(self, target: str) -> str:
        """``POST /ANTHROPIC_BASE_URL/v1/messages`` as the child meant it:
        ``POST api.anthropic.com/v1/messages`` (no query, no credentials)."""
        method, _, path = target.partition(" ")
        parts = self.split(path)
        if parts is None:
            return target
        real = self.real(parts[0])
        if real is None:
            return f"{method} {parts[1] or '/'} through {parts[0]}"
        url = urlsplit(real + parts[1])
        port = f":{url.port}" if url.port else ""
        return f"{method} {url.hostname or ''}{port}{url.path}"


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


#: What every refusal of the relay's port says about children that can be followed.
_FOLLOWED = (
    "Only Python children started with the test's environment are followed (not other programs, "
    "`python -S`, or an env= of their own): run it that way, or make the request inside a wrapped "
    "tool (blackbox.tool)"
)


def _on_http(target: str) -> str:
    """A child that could not be followed tried the network through a variable the test closed."""
    session, base_urls = _Parent.session, _Parent.base_urls
    shown = base_urls.shown(target) if base_urls is not None else target
    shown = session._mask(shown) if session is not None else shown
    if base_urls is not None and base_urls.retarget:
        text = (
            f"a request to {shown} came during a recording through a base-URL variable the recording "
            "points at its own port (from a child process pytest-blackbox cannot follow, or code "
            "reading that variable without an SDK); it was not sent, and the cassette would have "
            f"missed it. {_FOLLOWED}"
        )
    else:
        text = (
            f"a request to {shown} came during a replay through the base-URL or proxy variables a "
            "replay sets (from a child process pytest-blackbox cannot follow, or code reading those "
            f"variables); nothing was sent. {_FOLLOWED}"
        )
    if session is not None:
        session._refuse_call(OfflineRequestError(text))
    return "[blackbox] " + text


@dataclass
class ChildWatch:
    """One test's children followed: the variables it set, restored by :meth:`stop`."""

    session: Any
    base_urls: BaseUrls
    saved: dict[str, str | None] = field(default_factory=dict)

    def handle(self, handler: Callable[[_Request], Reply | Forward], request: _Request) -> Reply | Forward:
        """The test's own request to a base URL a recording closed is decided and sent as the real one."""
        return self.base_urls.handle(handler, request)

    def stop(self) -> None:
        with _Parent.lock:
            if _Parent.session is self.session:
                _Parent.session = None
                _Parent.owner = None
                _Parent.base_urls = None
        _ChildrenOnly.values = {}
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
            _inherit(name)
        self.saved.clear()


def follow_children(
    session: Any,
    owner: owners.CallOwner | None,
    *,
    recording: bool,
    allowed_hosts: Iterable[str] = (),
    guarded: bool = False,
) -> ChildWatch:
    """Follow the children started from now on into ``session``, and point the base-URL variables at
    the relay's refusing port; a replay points the proxy variables there too (loopback and
    ``allowed_hosts`` stay reachable without the proxy), a recording sends the followed processes'
    requests to those base URLs on to the real ones (:class:`BaseUrls`).

    ``guarded``: the test's own process is behind the replay's socket guard, which refuses its
    requests already, so the proxy variables go to its children only (:func:`_for_children_only`).
    """
    relay = _relay()
    originals = {name: os.environ.get(name) for name in BASE_URL_VARIABLES}
    if recording:  # only the variables whose real address is known can be sent on
        originals = {name: value for name, value in originals.items() if value or BASE_URL_VARIABLES[name]}
    base_urls = BaseUrls(relay.url, originals, retarget=recording)
    watch = ChildWatch(session, base_urls)
    values = {CHILD_VAR: relay.address, **{name: base_urls.value(name) for name in originals}}
    proxies: dict[str, str] = {}
    if recording:
        values[BASE_URLS_VAR] = json.dumps(originals)
    else:
        proxies.update(dict.fromkeys(PROXY_VARIABLES, relay.url))
        proxies.update(dict.fromkeys(_NO_PROXY_VARIABLES, _no_proxy(allowed_hosts)))
    if not guarded:
        values.update(proxies)
    for name, value in values.items():
        watch.saved[name] = os.environ.get(name)
        os.environ[name] = value
    if guarded and proxies:
        _for_children_only(proxies, relay.address, watch.saved)
    with _Parent.lock:
        _Parent.session = session
        _Parent.owner = owner
        _Parent.base_urls = base_urls
    return watch


class _ChildrenOnly:
    """The variables the running replay sets for its children only, and its relay's address."""

    values: ClassVar[dict[str, str]] = {}
    address = ""
    hooked = False


#: The audit events of a child started with an environment of its own → the position of that mapping.
_SPAWN_ENVIRONMENTS = {"subprocess.Popen": 3, "os.exec": 2, "os.posix_spawn": 2}


def _for_children_only(values: dict[str, str], address: str, saved: dict[str, str | None]) -> None:
    """Set ``values`` in the environment children inherit, not in ``os.environ``.

    An SDK client reads the proxy variables when it is built, and builds one more transport (with
    its own TLS context, tens of milliseconds) for each proxy it finds: in the test's own process they
    would cost every replayed test that builds a client, and buy nothing, because the interception
    answers its model calls and the socket guard refuses the rest. Children still get them: those
    started with this process's environment inherit it at the C level (``os.putenv``), and an
    environment of their own copied from the test's (it holds :data:`CHILD_VAR`) gets them added
    when the child starts (an audit hook, :func:`_add_to_spawned`), as if copied from
    ``os.environ`` with them in it. :meth:`ChildWatch.stop` puts the environment back.
    """
    for name, value in values.items():
        saved.setdefault(name, os.environ.get(name))
        os.putenv(name, value)
    _ChildrenOnly.values, _ChildrenOnly.address = values, address
    if not _ChildrenOnly.hooked:
        _ChildrenOnly.hooked = True
        sys.addaudithook(_add_to_spawned)


def _add_to_spawned(event: str, args: tuple[Any, ...]) -> None:
    """A child started with an environment copied from the test's gets the children-only variables.

    Each one is added where the copy holds the value ``os.environ`` holds (the copy did not change
    it), which is what a copy of ``os.environ`` with them set would hold.
    """
    where = _SPAWN_ENVIRONMENTS.get(event)
    values = _ChildrenOnly.values
    if where is None or not values or len(args) <= where:
        return
    env = args[where]
    if not isinstance(env, MutableMapping) or env.get(CHILD_VAR) != _ChildrenOnly.address:
        return
    for name, value in values.items():
        if env.get(name) == os.environ.get(name):
            env[name] = value


def _inherit(name: str) -> None:
    """The environment children inherit holds ``os.environ``'s value of ``name`` again."""
    value = os.environ.get(name)
    if value is None:
        os.unsetenv(name)
    else:
        os.putenv(name, value)


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
    base_urls = BaseUrls.from_environment(address)

    def on_model(request: ModelRequest) -> Reply | Forward:
        try:
            return base_urls.handle(client.on_model, request)
        except RelayUnavailable as error:
            text = f"[blackbox] this child process's test has ended ({error}); the model call was not sent"
            return refusal(WireCall.provider_of(request), text)

    def on_other(request: OtherRequest) -> Reply | Forward:
        try:
            return base_urls.handle(client.on_other, request)
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
    _Parent.relay = _Parent.session = _Parent.owner = _Parent.base_urls = None
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
