"""The wire protocols Blackbox can record and replay, chosen by the request's URL path.

Each protocol is one module with the same functions (the ``Provider`` protocol below), so the
session is written once against that interface and never looks at provider JSON itself. Gemini,
whose path names the model, answers with one ``GeminiCall`` per request instead of its module.
"""

from __future__ import annotations

from typing import Any, Protocol

from . import anthropic, gemini, openai_chat, openai_responses
from .common import CallIds
from .sse import SSE_HEADERS

__all__ = ["SSE_HEADERS", "CallIds", "Provider", "provider_for_path"]


class Provider(Protocol):
    """What a provider module offers: wire JSON ↔ neutral step payloads, pure functions only."""

    @property
    def NAME(self) -> str:
        """``"anthropic"``, ``"openai_chat"``, ``"openai_responses"`` or ``"gemini"``."""
        ...

    def normalize_request(self, body: Any, ids: CallIds) -> dict[str, Any]:
        """The ``model_input`` payload; raises ``BlackboxUnsupportedError`` before anything is sent."""
        ...

    def normalize_response(self, body: Any, ids: CallIds) -> dict[str, Any]:
        """The ``model_output`` payload; refuses what a replay could not return as it came."""
        ...

    def collect_stream(self, body: bytes) -> dict[str, Any]:
        """The response body a complete, decoded event stream adds up to, for ``normalize_response``.

        Raises ``BlackboxUnsupportedError`` for a stream that reports an error or was cut short.
        """
        ...

    def synthesize_response(
        self, output: Any, *, output_index: int, model: str | None, timestamp: int | float
    ) -> dict[str, Any]:
        """The response body a replay returns for a recorded ``model_output``."""
        ...

    def synthesize_stream(
        self,
        output: Any,
        *,
        output_index: int,
        model: str | None,
        timestamp: int | float,
        request_body: Any = None,
    ) -> list[bytes]:
        """The events a replay streams for a recorded ``model_output``, one item per event.

        Served joined, with :data:`SSE_HEADERS`. ``request_body`` decides optional parts (the OpenAI
        Chat usage chunk).
        """
        ...

    def error_body(self, message: str) -> dict[str, Any]:
        """The provider's error body carrying a ``[blackbox]`` message."""
        ...

    def is_stream_request(self, body: Any) -> bool:
        """Whether the request asks for a streamed answer."""
        ...


def provider_for_path(path: str) -> Provider | None:
    """The provider for a request path, or ``None`` when the path is not a model call.

    Only the path is looked at (a query string is ignored), so Azure-style deployments and
    proxies with a path prefix are recognised too.
    """
    route = path.split("?", 1)[0].rstrip("/")
    if route.endswith("/v1/messages"):
        return anthropic
    if route.endswith("/chat/completions"):
        return openai_chat
    if route.endswith("/responses"):
        return openai_responses
    return gemini.call_for_path(route)
