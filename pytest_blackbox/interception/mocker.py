"""The respx mocker that patches ``Client._transport_for_url`` of httpx2 and httpx, ``using="blackbox"``.

anthropic >= 1 and openai >= 3 send through httpx2, which respx's own mockers never see, and the SDKs'
aiohttp backend replaces the transport that pool-level mockers patch. Patching
``_transport_for_url`` on the httpx2 *and* httpx client classes sees every request of every client,
whatever its transport, base URL or proxy mounts, without touching SDK classes and without asking
the user for an ``http_client``. While it runs, transports built share their default TLS context
(see ``tls``). See docs/engine.md#model-calls.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any, ClassVar

import httpx
import respx
from respx.mocks import Mocker

from .handler import Decide
from .tls import MODULES, shared_default
from .transport import InterceptTransport

__all__ = ["InterceptorMocker", "innermost", "route_async"]


class InterceptorMocker(Mocker):
    """respx mocker patching ``_transport_for_url`` of the httpx2 and httpx clients.

    Selected with ``using="blackbox"``. Routers are consulted newest first, so the innermost of nested
    ``Interceptor`` s answers while it is active and the outer one takes over again once it stops.
    """

    name = "blackbox"
    targets: ClassVar[list[str]] = [
        *(
            ["httpx2._client.Client", "httpx2._client.AsyncClient"]
            if importlib.util.find_spec("httpx2") is not None
            else []
        ),
        "httpx._client.Client",
        "httpx._client.AsyncClient",
    ]
    target_methods: ClassVar[list[str]] = ["_transport_for_url"]

    @classmethod
    def register(cls, router: respx.Router) -> None:
        cls.routers.insert(0, router)

    @classmethod
    def start(cls) -> None:
        """respx's start, with the target classes looked up once per process, and the transports'
        default TLS context shared (``tls``) until it stops.

        respx resolves each dotted target name at every start, importing each prefix of it, which
        costs several times the patching itself; every replayed test starts the mocker once.
        """
        if cls._patches:
            return
        patches = [
            _patch(owner, method, original)
            for owner in _classes(tuple(cls.targets))
            for method in cls.target_methods
            if (original := getattr(owner, method, None)) is not None
        ]
        patches += [_tls_patch(module) for module in map(sys.modules.get, MODULES) if module is not None]
        for patch in patches:
            patch.start()
            cls._patches.append(patch)  # type: ignore[arg-type]

    @classmethod
    def mock(cls, spec: Callable[..., Any]) -> Callable[..., Any]:
        def _transport_for_url(client: Any, url: Any) -> InterceptTransport:
            lib = httpx if isinstance(client, (httpx.Client, httpx.AsyncClient)) else _httpx2()
            return InterceptTransport(spec(client, url), lib, innermost, _route_sync, route_async)

        return _transport_for_url


class _Patch:
    """One attribute of a client class (or a module) replaced while the mocker runs, and put back (or
    removed, if the class only inherited it) when it stops: what ``mock.patch.object`` does here,
    without its checks and bookkeeping, which cost as much as a replayed model call; every replayed
    test starts and stops the mocker once. respx's ``Mocker.stop`` stops it as it stops a ``mock`` patch."""

    def __init__(self, owner: Any, method: str, new: Callable[..., Any]) -> None:
        self._owner, self._method, self._new = owner, method, new
        self._own: tuple[Any] | None = None

    def start(self) -> None:
        own = self._owner.__dict__
        self._own = (own[self._method],) if self._method in own else None
        setattr(self._owner, self._method, self._new)

    def stop(self) -> None:
        if self._own is not None:
            setattr(self._owner, self._method, self._own[0])
        else:
            delattr(self._owner, self._method)


@functools.lru_cache(maxsize=16)
def _patch(owner: type, method: str, original: Callable[..., Any]) -> _Patch:
    """The patch of ``owner.method`` over ``original``, made once: a later start finds the same
    original and puts the same replacement in place (a changed original gets a patch of its own)."""
    return _Patch(owner, method, InterceptorMocker.mock(original))


@functools.lru_cache(maxsize=4)
def _tls_patch(module: ModuleType) -> _Patch:
    """The patch sharing ``module``'s default TLS context, made once per process: its contexts are
    built once, then handed to the transports of every later test."""
    return _Patch(module, "create_ssl_context", shared_default(module.create_ssl_context))


@functools.lru_cache(maxsize=4)
def _classes(targets: tuple[str, ...]) -> list[Any]:
    """The classes the dotted ``targets`` name (respx's ``add_targets`` may add to them)."""
    return [pkgutil.resolve_name(target) for target in targets]


@functools.cache
def _httpx2() -> ModuleType:
    """httpx2, imported by then: only its clients' transports get here besides httpx's."""
    return importlib.import_module("httpx2")


def innermost() -> Decide | None:
    """The innermost interceptor's ``decide``, which the transport asks without respx (``None``: the
    innermost router is not an interceptor's, or none is registered: respx routes the request)."""
    routers = InterceptorMocker.routers
    decide: Decide | None = getattr(routers[0], "decide", None) if routers else None
    return decide


def _route_sync(request: httpx.Request) -> httpx.Response | None:
    """respx's registry leaves its handlers untyped; this states what they return."""
    handler: Callable[[httpx.Request], httpx.Response | None] = InterceptorMocker.handler
    return handler(request)


async def route_async(request: httpx.Request) -> httpx.Response | None:
    handler: Callable[[httpx.Request], Awaitable[httpx.Response | None]] = InterceptorMocker.async_handler
    return await handler(request)
