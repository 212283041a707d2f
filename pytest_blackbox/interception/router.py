"""The :class:`Interceptor`: a respx router that hands model calls to one handler and everything else
to another. Which paths are model calls is the caller's to say (``routes``): this layer knows nothing
about providers or cassettes. See docs/engine.md#model-calls.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from types import TracebackType

import httpx
import respx
from respx.patterns import M, Pattern

from . import aiohttp_adapter
from .handler import Forward, ModelHandler, ModelRequest, OtherHandler, OtherRequest, Reply, header_list
from .mocker import InterceptorMocker
from .transport import is_async, mark_forward

__all__ = ["Interceptor"]

_OTHER_ROUTE_NAME = "pytest_blackbox.other"
_SideEffect = Callable[[httpx.Request], "httpx.Response | httpx.Request"]


def _model_request(route: str, request: httpx.Request) -> ModelRequest:
    headers = header_list(request.headers)
    return ModelRequest(route, request.method, str(request.url), headers, request.content, is_async(request))


def _other_request(request: httpx.Request) -> OtherRequest:
    headers = header_list(request.headers)
    return OtherRequest(request.method, str(request.url), headers, request.content, is_async(request))


def _resolve(decision: Reply | Forward, request: httpx.Request) -> httpx.Response | httpx.Request:
    """Turn a handler's decision into what a respx side effect returns (the request = pass through).

    The response names its request, so respx has no reason to copy it.
    """
    if isinstance(decision, Reply):
        return httpx.Response(
            decision.status, headers=decision.headers, content=decision.body, request=request
        )
    if isinstance(decision, Forward):
        return mark_forward(request, decision)
    raise TypeError(f"an interception handler must return Reply or Forward, not {type(decision).__name__}")


class _Router(respx.MockRouter):
    """A router that keeps no call history and no snapshots.

    Every request of a long agent run carries the whole conversation so far, and nobody reads these
    calls back. An interceptor's routes never change once built, so there is nothing for respx to
    snapshot when the router starts or to roll back when it stops (each snapshot copies respx's call
    lists, which are mocks and costly to make: a replayed test starts and stops one router).
    """

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
    """A route of an interceptor: it never changes once built, so it keeps no snapshots either."""

    def snapshot(self) -> None:
        return None

    def rollback(self) -> None:
        return None


@functools.lru_cache(maxsize=16)
def _route_patterns(routes: tuple[tuple[str, str], ...]) -> list[tuple[str, Pattern]]:
    """Each route's respx pattern: built once per process."""
    return [(name, M(method="POST", path__regex=path_regex)) for name, path_regex in routes]


class Interceptor:
    """While active, every model call of every httpx2/httpx client and aiohttp session goes to ``on_model``.

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
        self._router = _Router(using=InterceptorMocker.name, assert_all_called=False, assert_all_mocked=True)
        for route_name, pattern in _route_patterns(tuple(routes.items())):
            route = self._router.add(_Route(pattern), name=route_name)
            route.mock(side_effect=self._model_side_effect(route_name))
        catch_all = self._router.add(_Route(), name=_OTHER_ROUTE_NAME)
        if on_other is None:
            catch_all.pass_through()
        else:
            catch_all.mock(side_effect=_other_side_effect(on_other))

    @property
    def active(self) -> bool:
        return self._active

    def start(self) -> None:
        if not self._active:
            self._router.start()
            aiohttp_adapter.start()
            self._active = True

    def stop(self) -> None:
        if self._active:
            self._active = False
            aiohttp_adapter.stop()
            self._router.stop(quiet=True)

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

    def _model_side_effect(self, route: str) -> _SideEffect:
        def side_effect(request: httpx.Request) -> httpx.Response | httpx.Request:
            return _resolve(self._on_model(_model_request(route, request)), request)

        return side_effect


def _other_side_effect(on_other: OtherHandler) -> _SideEffect:
    def side_effect(request: httpx.Request) -> httpx.Response | httpx.Request:
        return _resolve(on_other(_other_request(request)), request)

    return side_effect
