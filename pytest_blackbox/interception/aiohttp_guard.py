"""Model calls that would go through aiohttp, which the client-level interception cannot see.

google-genai's async client sends through a raw ``aiohttp.ClientSession`` (not httpx2) when aiohttp
is installed. While any interceptor is active, this module switches google-genai back to httpx2
(its ``has_aiohttp`` flag), so async Gemini calls are recorded and replayed like the sync ones, and
it refuses any model call that still reaches aiohttp (google-genai imported only after interception
started, an aiohttp session of the agent's own) instead of letting it reach the provider unseen.
What the interceptor itself sends on through an aiohttp-based transport (the anthropic and openai
``DefaultAioHttpClient``) was routed already and passes. See docs/providers.md#google-gemini-google-genai.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
import sys
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

from ..errors import BlackboxUnsupportedError

__all__ = ["AIOHTTP_MESSAGE", "Routed", "start", "stop"]

AIOHTTP_MESSAGE = (
    "a model call was sent through aiohttp, which Blackbox cannot intercept (google-genai's async "
    "client uses aiohttp when it is installed); import google.genai before the Blackbox session "
    "starts, or give the client an httpx2 client: genai.Client(http_options=types.HttpOptions("
    "httpx_async_client=httpx2.AsyncClient()))"
)
_GENAI_CLIENT_MODULE = "google.genai._api_client"

#: Set while the interceptor sends a request it has routed through a client's real transport.
_ROUTED: ContextVar[bool] = ContextVar("blackbox_routed", default=False)

_lock = threading.Lock()
_users = 0
_undo: list[Callable[[], None]] = []


def start(model_paths: re.Pattern[str]) -> None:
    """Steer and guard while at least one interceptor runs (the first start patches)."""
    global _users
    with _lock:
        _users += 1
        if _users == 1:
            _steer_genai()
            _guard_aiohttp(model_paths)


def stop() -> None:
    """Undo the patches once the last interceptor stops."""
    global _users
    with _lock:
        _users -= 1
        if _users == 0:
            while _undo:
                _undo.pop()()


class Routed:
    """A client's real transport, beneath the interceptor: what it sends was routed already."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def handle_request(self, request: Any) -> Any:
        return self._real.handle_request(request)

    async def handle_async_request(self, request: Any) -> Any:
        token = _ROUTED.set(True)
        try:
            return await self._real.handle_async_request(request)
        finally:
            _ROUTED.reset(token)


def _steer_genai() -> None:
    """google-genai reads the flag on every async request, so clients made earlier switch too."""
    module = sys.modules.get(_GENAI_CLIENT_MODULE)
    if module is not None and getattr(module, "has_aiohttp", None) is True:
        setattr(module, "has_aiohttp", False)  # noqa: B010 (a module mypy knows nothing of)
        _undo.append(lambda: setattr(module, "has_aiohttp", True))


def _guard_aiohttp(model_paths: re.Pattern[str]) -> None:
    if "aiohttp" not in sys.modules and importlib.util.find_spec("aiohttp") is None:
        return
    session_class: Any = importlib.import_module("aiohttp").ClientSession
    original = session_class._request

    @functools.wraps(original)
    async def _request(self: Any, method: str, str_or_url: Any, *args: Any, **kwargs: Any) -> Any:
        if not _ROUTED.get() and model_paths.search(urlsplit(str(str_or_url)).path):
            raise BlackboxUnsupportedError(AIOHTTP_MESSAGE)
        return await original(self, method, str_or_url, *args, **kwargs)

    session_class._request = _request
    _undo.append(lambda: setattr(session_class, "_request", original))
