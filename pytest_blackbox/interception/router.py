"""The :class:`Interceptor`: a respx router that hands model calls to one handler and everything else
to another. Which paths are model calls is the caller's to say (``routes``): this layer knows nothing
about providers or cassettes. See docs/engine.md#model-calls.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import httpx
import respx

from . import aiohttp_adapter, botocore_adapter, lm15_adapter
from .handler import (
    Decide,
    Forward,
    ModelHandler,
    ModelRequest,
    OtherHandler,
    OtherRequest,
    Reply,
    checked,
    header_list,
)
from .mocker import InterceptorMocker
from .transport import is_async, mark_forward

__all__ = ["Interceptor"]

_ROUTE_NAME = "pytest_blackbox.interceptor"


def _resolve(decision: Reply | Forward | None, request: httpx.Request) -> httpx.Response | httpx.Request:
    """Turn a decision into what a respx side effect returns (the request = pass through).

    The response names its request, so respx has no reason to copy it.
    """
    if isinstance(decision, Reply):
        return httpx.Response(
            decision.status, headers=decision.headers, content=decision.body, request=request
        )
    if isinstance(decision, Forward):
        return mark_forward(request, decision)
    return request


class _Router(respx.MockRouter):
    """An interceptor's registration with the mocker: one route that hands every request to its
    ``decide``, and no call history or snapshots.

    The transport asks ``decide`` directly, without respx, whenever this router is the innermost one
    (see ``transport``); the route only serves a request respx routes itself (another router
    registered after this one, on the same mocker, that left it unanswered). Every request of a long
    agent run carries the whole conversation so far and nobody reads these calls back, and the route
    never changes once built, so there is nothing to record, snapshot or roll back (each snapshot
    copies respx's call lists, which are mocks and costly to make: a replayed test starts and stops
    one router).
    """

    def __init__(self, decide: Decide) -> None:
        super().__init__(using=InterceptorMocker.name, assert_all_called=False, assert_all_mocked=True)
        self.decide = decide
        self.add(_Route(), name=_ROUTE_NAME).mock(side_effect=self._side_effect)

    def start(self) -> None:
        """respx's ``MockRouter.start`` for this router: registered with the mocker, which patches the
        clients if it is the first; no snapshot, and the mocker is known without looking it up."""
        self.Mocker = InterceptorMocker
        InterceptorMocker.register(self)
        InterceptorMocker.start()

    def stop(self, clear: bool = True, reset: bool = True, quiet: bool = False) -> None:
        """respx's ``MockRouter.stop`` for this router: unregistered, and the patches removed if it was
        the last; nothing to assert, roll back or reset (it records no calls)."""
        InterceptorMocker.unregister(self)
        InterceptorMocker.stop()

    def _side_effect(self, request: httpx.Request) -> httpx.Response | httpx.Request:
        method, url, headers = request.method, request.url, request.headers
        return _resolve(self.decide(method, url, headers, request.content, is_async(request)), request)

    def record(
        self,
        request: httpx.Request,
        *,
        response: httpx.Response | None = None,
        route: respx.Route | None = None,
    ) -> None:
        return None

    def snapshot(self) -> None:
        return None

    def rollback(self) -> None:
        return None


class _Route(respx.Route):
    """The route of an interceptor: it never changes once built, so it keeps no snapshots either."""

    def snapshot(self) -> None:
        return None

    def rollback(self) -> None:
        return None


#: Stopped routers, each taken again by the next interceptor that starts: a router's only state is the
#: ``decide`` it routes to, and building one (its route, its side effect) costs more than a whole
#: replayed model call.
_IDLE: list[_Router] = []


class _Routes:
    """The model routes, compiled once per process (``_routes``), and the route each URL path took:
    an agent's calls go to the same few paths, so each is searched once."""

    _SEEN_MAX = 1024

    def __init__(self, routes: tuple[tuple[str, str], ...]) -> None:
        self._any = re.compile("|".join(f"(?:{path_regex})" for _, path_regex in routes))
        self._each = tuple((name, re.compile(path_regex)) for name, path_regex in routes)
        self._seen: dict[str, str | None] = {}

    def of(self, path: str) -> str | None:
        """The name of the first route whose expression is found in ``path`` (``None``: not a model
        route)."""
        if path in self._seen:
            return self._seen[path]
        route = None
        if self._any.search(path) is not None:
            route = next(name for name, pattern in self._each if pattern.search(path))
        if len(self._seen) < self._SEEN_MAX:
            self._seen[path] = route
        return route


@functools.lru_cache(maxsize=16)
def _routes(routes: tuple[tuple[str, str], ...]) -> _Routes:
    return _Routes(routes)


class Interceptor:
    """While active, every model call of every httpx2/httpx client goes to ``on_model``.

    ``routes`` names the model routes: route name → a regular expression searched in the URL path of
    a ``POST`` (the name is handed on as ``ModelRequest.route``). ``on_model`` must return a
    :class:`Reply` or a :class:`Forward` and should not raise. Anything it raises reaches the SDK from
    inside the transport: an ``Exception`` is wrapped and retried by anthropic (not by openai), while a
    ``BaseException`` that is not an ``Exception`` (such as ``pytest.fail``'s) surfaces at once,
    un-retried.

    All other traffic goes to ``on_other``; with ``on_other=None`` it passes through untouched, so a
    user's own ``respx.mock`` (patching the connection pools below) still answers it. ``on_other`` may
    refuse a request by raising; the exception propagates to the caller the same way (httpx exceptions
    are re-raised as the same-named httpx2 exception for httpx2 clients).

    If ``on_response`` of a :class:`Forward` is set, a JSON answer is read completely before it is
    called; an event stream is teed as it passes to the client (see ``tee``).

    Interceptors nest: the most recently started one answers, and ``stop`` removes the patches once the
    last one stops. Stop them in reverse start order, like any ``unittest.mock`` patch.
    """

    def __init__(
        self, on_model: ModelHandler, on_other: OtherHandler | None = None, *, routes: Mapping[str, str]
    ) -> None:
        self._on_model = on_model
        self._on_other = on_other
        self._active = False
        self._routes = _routes(tuple(routes.items()))
        self._router: _Router | None = None

    @property
    def active(self) -> bool:
        return self._active

    def start(self) -> None:
        if not self._active:
            self._router = _IDLE.pop() if _IDLE else _Router(self.decide)
            self._router.decide = self.decide
            self._router.start()
            aiohttp_adapter.start()
            botocore_adapter.install()
            lm15_adapter.install()
            self._active = True

    def stop(self) -> None:
        if self._active:
            self._active = False
            aiohttp_adapter.stop()
            router, self._router = self._router, None
            if router is not None:
                router.stop(quiet=True)
                _IDLE.append(router)

    def __enter__(self) -> Interceptor:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def decide(
        self, method: str, url: Any, headers: Any, body: bytes, is_async: bool
    ) -> Reply | Forward | None:
        """What answers one request: ``on_model`` a ``POST`` to a model route (the first whose
        expression is found in the URL's path), ``on_other`` the rest (``None``: pass it through)."""
        route = self._routes.of(url.path) if method == "POST" else None
        if route is not None:
            request = ModelRequest(route, method, str(url), header_list(headers), body, is_async)
            return checked(self._on_model(request))
        if self._on_other is None:
            return None
        return checked(self._on_other(OtherRequest(method, str(url), header_list(headers), body, is_async)))
