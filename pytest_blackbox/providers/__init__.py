"""The wire protocols Blackbox can record and replay, chosen by the request's URL path.

Each protocol is one module with the same functions (the ``Provider`` protocol below), so the
session is written once against that interface and never looks at provider JSON itself.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..errors import BlackboxUnsupportedError
from . import anthropic, openai_chat
from .common import CallIds

__all__ = ["RESPONSES_API_MESSAGE", "CallIds", "Provider", "provider_for_path"]

RESPONSES_API_MESSAGE = (
    "the OpenAI Responses API is not supported yet; "
    "use chat.completions.create (Responses support is planned)"
)


class Provider(Protocol):
    """What a provider module offers: wire JSON ↔ neutral step payloads, pure functions only."""

    @property
    def NAME(self) -> str:
        """``"anthropic"`` or ``"openai_chat"``."""
        ...

    def normalize_request(self, body: Any, ids: CallIds) -> dict[str, Any]:
        """The ``model_input`` payload; raises ``BlackboxUnsupportedError`` before anything is sent."""
        ...

    def normalize_response(self, body: Any, ids: CallIds) -> dict[str, Any]:
        """The ``model_output`` payload; refuses what a replay could not return as it came."""
        ...

    def synthesize_response(
        self, output: Any, *, output_index: int, model: str | None, timestamp: int | float
    ) -> dict[str, Any]:
        """The response body a replay returns for a recorded ``model_output``."""
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
        raise BlackboxUnsupportedError(RESPONSES_API_MESSAGE)
    return None
