"""The wire protocols Blackbox can record and replay: one module each, chosen by the request's URL path.

Each protocol is one module with the same names (the ``Provider`` protocol below), so the session is
written once against that interface and never looks at provider JSON itself. Each module declares its
own ``ROUTE``; the interception routes (:data:`ROUTES`) and :func:`provider_for_path` derive from
them. A protocol whose calls carry state of their own (Gemini: the model in the path, the
conversation its answer's calls are bound to) also offers ``for_path(path)``, the object answering
that one call (:func:`provider_for_call`). See docs/providers.md.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..trace.model import ModelInput, ModelOutput
from . import anthropic, gemini, openai_chat, openai_responses
from .common import CallIds, ReplayArgs
from .lookalikes import model_api_of
from .sse import SSE_HEADERS
from .vertex import CREDENTIALS_ADVICE as VERTEX_CREDENTIALS_ADVICE
from .vertex import is_vertex_path

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "PROVIDERS",
    "ROUTES",
    "SIDE_ROUTES",
    "SSE_HEADERS",
    "VERTEX_CREDENTIALS_ADVICE",
    "CallIds",
    "Provider",
    "ReplayArgs",
    "is_vertex_path",
    "model_api_of",
    "provider_for_call",
    "provider_for_path",
    "side_call_of",
]


class Provider(Protocol):
    """What a provider module offers: wire JSON ↔ neutral step payloads, pure functions only.

    ``path`` is the request's URL path (no query string): a protocol that carries part of the request
    there (a model name, whether to stream) reads it; the others ignore it.
    """

    @property
    def NAME(self) -> str:
        """``"anthropic"``, ``"openai_chat"``, ``"openai_responses"`` or ``"gemini"``: its route's name."""
        ...

    @property
    def HISTORY(self) -> str:
        """The request field holding the conversation so far, which grows by a few items per call."""
        ...

    @property
    def ROUTE(self) -> str:
        """A regular expression searched in the URL path (not the host, not the query) of a POST.

        Path suffixes, not hosts: base URLs, gateways, proxies and Azure endpoints all end in these.
        """
        ...

    @property
    def SIDE_ROUTES(self) -> dict[str, str]:
        """SDK method → path pattern of its side calls (token counting), searched like ``ROUTE``."""
        ...

    def normalize_request(self, body: Any, ids: CallIds, *, path: str = "") -> ModelInput:
        """The ``model_input`` payload; raises ``BlackboxUnsupportedError`` before anything is sent."""
        ...

    def normalize_response(self, body: Any, ids: CallIds) -> ModelOutput:
        """The ``model_output`` payload; refuses what a replay could not return as it came."""
        ...

    def collect_stream(self, body: bytes) -> dict[str, Any]:
        """The response body a complete, decoded event stream adds up to, for ``normalize_response``.

        Raises ``BlackboxUnsupportedError`` for a stream that reports an error or was cut short.
        """
        ...

    def synthesize_response(self, output: Any, **where: Unpack[ReplayArgs]) -> dict[str, Any]:
        """The response body a replay returns for a recorded ``model_output``."""
        ...

    def synthesize_stream(self, output: Any, **where: Unpack[ReplayArgs]) -> list[bytes]:
        """The events a replay streams for a recorded ``model_output``, one item per event.

        Served joined, with :data:`SSE_HEADERS`. :class:`ReplayArgs` says what ``where`` holds.
        """
        ...

    def error_body(self, message: str) -> dict[str, Any]:
        """The provider's error body carrying a ``[blackbox]`` message."""
        ...

    def is_stream_request(self, body: Any, *, path: str = "") -> bool:
        """Whether the request asks for a streamed answer."""
        ...


_MODULES: Final[tuple[Provider, ...]] = (anthropic, openai_chat, openai_responses, gemini)

#: Every provider by its name, which is also the name of its interception route.
PROVIDERS: Final[dict[str, Provider]] = {provider.NAME: provider for provider in _MODULES}

#: Route name → path pattern: what the interception layer answers as a model call.
ROUTES: Final[dict[str, str]] = {provider.NAME: provider.ROUTE for provider in _MODULES}


#: SDK method → path pattern of the side calls (token counting): requests to a provider's API that are
#: not model calls, so a cassette cannot hold them; a session refuses them outside wrapped tools.
SIDE_ROUTES: Final[dict[str, str]] = {
    method: pattern for provider in _MODULES for method, pattern in provider.SIDE_ROUTES.items()
}


def side_call_of(path: str) -> str | None:
    """The SDK method a request path is a side call of (``messages.count_tokens``), else ``None``."""
    route = path.split("?", 1)[0]
    return next((method for method, pattern in SIDE_ROUTES.items() if re.search(pattern, route)), None)


def provider_for_path(path: str) -> Provider | None:
    """The provider whose route matches a request path, or ``None`` when it is not a model call.

    A query string is ignored, so Azure-style ``?api-version=…`` deployments are recognised too.
    """
    route = path.split("?", 1)[0]
    found = next((provider for provider in _MODULES if re.search(provider.ROUTE, route)), None)
    return None if found is None else provider_for_call(found.NAME, route)


def provider_for_call(route: str, path: str) -> Provider:
    """The provider answering one call on ``route``: the module, or the call object it binds to ``path``."""
    provider = PROVIDERS[route]
    bind = getattr(provider, "for_path", None)
    bound: Provider | None = bind(path) if bind is not None else provider
    return provider if bound is None else bound
