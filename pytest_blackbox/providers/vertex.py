"""Google Vertex AI: a publisher's model named in the URL path, a road of that model's wire protocol.

Vertex AI serves Google's Gemini models on ``…/publishers/google/models/{model}:generateContent``
(the Gemini protocol, whose route already matches it) and Anthropic's Claude on
``…/publishers/anthropic/models/{model}:rawPredict`` and ``:streamRawPredict`` (the Anthropic
Messages protocol, with the model moved from the body into the path). The project and the location
before ``/publishers/`` are where the call goes, like a host, and are not compared. The bearer token
Vertex takes comes from Google's credentials, not from a provider key variable: what a recording
asks for when it finds the offline placeholder (:data:`CREDENTIALS_ADVICE`).

See docs/providers.md#gemini-on-vertex-ai and docs/providers.md#anthropic-on-vertex-ai.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote

__all__ = [
    "ANTHROPIC_COUNT_TOKENS",
    "ANTHROPIC_ROUTE",
    "CREDENTIALS_ADVICE",
    "is_vertex_path",
    "model_in_path",
]

#: Claude's model calls on Vertex AI (the token counter, ``count-tokens:rawPredict``, is not one).
ANTHROPIC_ROUTE: Final = (
    r"/publishers/anthropic/models/(?!count-tokens:)[^/:]+:(?:rawPredict|streamRawPredict)$"
)
#: ``messages.count_tokens`` on Vertex AI: a side call, refused like the Messages API's own.
ANTHROPIC_COUNT_TOKENS: Final = r"/publishers/anthropic/models/count-tokens:rawPredict$"
#: What a recording that would send the placeholder token to Vertex AI asks for.
CREDENTIALS_ADVICE: Final = (
    "Google credentials (set GOOGLE_APPLICATION_CREDENTIALS to a credentials file, or run "
    "gcloud auth application-default login and point GOOGLE_APPLICATION_CREDENTIALS at the file it writes)"
)

_MODEL: Final = re.compile(r"/publishers/[^/]+/models/([^/:]+):[A-Za-z]+$")


def is_vertex_path(path: str) -> bool:
    """Whether a URL path names a Vertex AI publisher's model (``…/publishers/{p}/models/{m}:{method}``)."""
    return _MODEL.search(path.split("?", 1)[0]) is not None


def model_in_path(path: str) -> str | None:
    """The model a Vertex AI path names (``claude-sonnet-4-5@20250929``), decoded, or ``None``."""
    found = _MODEL.search(path.split("?", 1)[0])
    return unquote(found.group(1)) if found else None
