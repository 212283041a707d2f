"""The wire protocols Blackbox can record and replay: one module each, chosen by the request's URL path.

Each protocol is one module with the same names (the ``Provider`` protocol below), so the session is
written once against that interface and never looks at provider JSON itself. What a request's path
must look like to be one of a protocol's calls, or one of its SDK's side calls, is this package's
table (:data:`ROUTES`, :data:`SIDE_ROUTES`): the interception layer needs it before any call, and a
protocol's module is imported only by its first call (:func:`provider_for_call`), so a suite that
replays Anthropic calls never loads the Gemini, OpenAI or Bedrock code. A protocol whose calls carry
state of their own (Gemini: the model in the path, the conversation its answer's calls are bound
to) also offers ``for_path(path)``, the object answering that one call. See docs/providers.md.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol, cast

from ..trace.model import ModelInput, ModelOutput
from .common import CallIds, ReplayArgs
from .sse import SSE_HEADERS
from .vertex import ANTHROPIC_COUNT_TOKENS, ANTHROPIC_ROUTE, is_vertex_path
from .vertex import CREDENTIALS_ADVICE as VERTEX_CREDENTIALS_ADVICE

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .lookalikes import model_api_of

__all__ = [
    "PROVIDERS",
    "ROUTES",
    "SIDE_ROUTES",
    "SSE_HEADERS",
    "STREAM_TYPES",
    "VERTEX_CREDENTIALS_ADVICE",
    "CallIds",
    "Provider",
    "ReplayArgs",
    "is_stream_type",
    "is_vertex_path",
    "model_api_of",
    "provider_for_call",
    "provider_for_path",
    "side_call_of",
    "stream_headers",
]


class Provider(Protocol):
    """What a provider module offers: wire JSON ↔ neutral step payloads, pure functions only.

    ``path`` is the request's URL path (no query string): a protocol that carries part of the request
    there (a model name, whether to stream) reads it; the others ignore it.
    """

    @property
    def NAME(self) -> str:
        """``"anthropic"``, ``"openai_chat"``, ``"openai_responses"``, ``"gemini"``, ``"bedrock"`` or
        ``"bedrock_converse"``: its route's name (:data:`ROUTES`), which is also its module's."""
        ...

    @property
    def HISTORY(self) -> str:
        """The request field holding the conversation so far, which grows by a few items per call."""
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

        Served joined, with :func:`stream_headers`. :class:`ReplayArgs` says what ``where`` holds.
        """
        ...

    def error_body(self, message: str) -> dict[str, Any]:
        """The provider's error body carrying a ``[blackbox]`` message."""
        ...

    def is_stream_request(self, body: Any, *, path: str = "") -> bool:
        """Whether the request asks for a streamed answer."""
        ...


class _Routes(NamedTuple):
    """What makes a request one of a protocol's calls, known before its module is imported.

    ``route`` is a regular expression searched in the URL path (not the host, not the query) of a
    POST: path suffixes, not hosts, because base URLs, gateways, proxies and Azure endpoints all
    end in these. ``side`` maps an SDK method to the path pattern of its side calls (token
    counting), searched alike: requests to the API that are not model calls, so a cassette cannot
    hold them, and a session refuses them outside wrapped tools.
    """

    route: str
    side: dict[str, str]


#: Every protocol by its name, in the order a path is matched: the name is its module's and the
#: name of its interception route.
_PROTOCOLS: Final[dict[str, _Routes]] = {
    # The Messages endpoint, whatever base URL, gateway or proxy prefix comes before it; and Claude on
    # Vertex AI (``…/publishers/anthropic/models/{model}:rawPredict``, the model in the path).
    "anthropic": _Routes(
        rf"/v1/messages$|{ANTHROPIC_ROUTE}",
        {"messages.count_tokens": rf"/v1/messages/count_tokens$|{ANTHROPIC_COUNT_TOKENS}"},
    ),
    # Chat Completions, under any base URL (Azure deployments included).
    "openai_chat": _Routes(r"/chat/completions$", {}),
    # The Responses endpoint, under any base URL; its sub-resources (``/responses/{id}``) are not
    # model calls.
    "openai_responses": _Routes(
        r"/responses$", {"responses.input_tokens.count": r"/responses/input_tokens$"}
    ),
    # ``…/models/{model}:generateContent`` (or ``tunedModels/…``) and its streaming twin. Vertex AI's
    # ``…/projects/{p}/locations/{l}/publishers/google/models/{model}:…`` matches too: the same
    # protocol on another road (``providers.vertex``), recorded and compared alike.
    "gemini": _Routes(
        r"/(?:models|tunedModels)/[^/:]+:(?:generateContent|streamGenerateContent)$",
        {"models.count_tokens": r"/(?:models|tunedModels)/[^/:]+:countTokens$"},
    ),
    # InvokeModel and its streaming twin, under any base URL; the model id may be an ARN, whose ``/``
    # the interception layer sees decoded. Its token counting (``/model/{id}/count-tokens``) is a
    # side call.
    "bedrock": _Routes(
        r"/model/.+/(?:invoke|invoke-with-response-stream)$",
        {"bedrock count_tokens": r"/model/[^/]+/count-tokens$"},
    ),
    "bedrock_converse": _Routes(r"/model/.+/(?:converse|converse-stream)$", {}),
}

#: Route name → path pattern: what the interception layer answers as a model call.
ROUTES: Final[dict[str, str]] = {name: routes.route for name, routes in _PROTOCOLS.items()}

#: SDK method → path pattern of the side calls (token counting): requests to a provider's API that are
#: not model calls, so a cassette cannot hold them; a session refuses them outside wrapped tools.
SIDE_ROUTES: Final[dict[str, str]] = {
    method: pattern for routes in _PROTOCOLS.values() for method, pattern in routes.side.items()
}

#: What the package offers without importing at once: name → the module that defines it.
_LAZY: Final = {"model_api_of": "lookalikes"}


@cache
def _module(name: str) -> Provider:
    """The protocol module of a route, imported at its first call."""
    return cast(Provider, import_module(f"{__name__}.{name}"))


def __getattr__(name: str) -> Any:
    """``PROVIDERS`` (every protocol module, imported here) and the names of :data:`_LAZY`."""
    if name == "PROVIDERS":
        value: Any = {route: _module(route) for route in _PROTOCOLS}
    elif name in _LAZY:
        value = getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


if TYPE_CHECKING:
    #: Every provider by its name, which is also the name of its interception route (imports them all).
    PROVIDERS: dict[str, Provider]


#: The content types of a streamed answer: SSE, and the AWS event stream Amazon Bedrock streams in.
STREAM_TYPES: Final = ("text/event-stream", "application/vnd.amazon.eventstream")


def stream_headers(provider: Provider) -> tuple[tuple[str, str], ...]:
    """The headers a replayed stream is served with: the protocol's ``STREAM_HEADERS`` (Bedrock's
    event stream) or, for the SSE protocols, which declare none, :data:`SSE_HEADERS`."""
    headers: tuple[tuple[str, str], ...] = getattr(provider, "STREAM_HEADERS", SSE_HEADERS)
    return headers


def is_stream_type(content_type: str) -> bool:
    """Whether a response's content type is one of a streamed answer (:data:`STREAM_TYPES`)."""
    return content_type.strip().lower().startswith(STREAM_TYPES)


def side_call_of(path: str) -> str | None:
    """The SDK method a request path is a side call of (``messages.count_tokens``), else ``None``."""
    route = path.split("?", 1)[0]
    return next((method for method, pattern in SIDE_ROUTES.items() if re.search(pattern, route)), None)


def provider_for_path(path: str) -> Provider | None:
    """The provider whose route matches a request path, or ``None`` when it is not a model call.

    A query string is ignored, so Azure-style ``?api-version=…`` deployments are recognised too.
    """
    route = path.split("?", 1)[0]
    found = next((name for name, pattern in ROUTES.items() if re.search(pattern, route)), None)
    return None if found is None else provider_for_call(found, route)


#: The provider of each route and path seen, for the protocols that bind nothing to a path: an agent's
#: calls go to the same few paths, and looking the module up again cost more than a call's bookkeeping.
_UNBOUND: dict[tuple[str, str], Provider] = {}
_UNBOUND_MAX: Final = 1024


def provider_for_call(route: str, path: str) -> Provider:
    """The provider answering one call on ``route``: the module (imported at the route's first call), or
    the call object it binds to ``path``."""
    known = _UNBOUND.get((route, path))
    if known is not None:
        return known
    if route not in _PROTOCOLS:
        raise KeyError(route)
    provider = _module(route)
    bind = getattr(provider, "for_path", None)
    if bind is None:
        if len(_UNBOUND) < _UNBOUND_MAX:
            _UNBOUND[(route, path)] = provider
        return provider
    bound: Provider | None = bind(path)
    return provider if bound is None else bound
