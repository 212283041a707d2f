"""Requests that look like a model API but that no protocol module records: never let through unseen.

A model call Blackbox does not record (Vertex AI's
``:rawPredict``, a legacy completion, a gateway path the routes do not cover) would leave a cassette
that looks complete but is not, and a replay pointed at a loopback server could even send it. The
session refuses them outside wrapped tools, naming what it saw. Two signs, either enough: the host of
a provider's or cloud's model API (any request there, on any path), or a path of a known model
protocol under any host (a ``POST``). See docs/providers.md#nothing-passes-by-unseen.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urlsplit

__all__ = ["MODEL_API_HOSTS", "MODEL_API_PATHS", "model_api_of"]

#: Host pattern → the model API it serves. A request to one of these hosts that is not a recorded
#: model call is the provider's API all the same (a side call, another endpoint, an unsupported road).
MODEL_API_HOSTS: Final[dict[str, str]] = {
    r"api\.anthropic\.com": "the Anthropic API",
    r"api\.openai\.com": "the OpenAI API",
    r"generativelanguage\.googleapis\.com": "the Gemini API",
    r"(?:[a-z0-9-]+\.)?openai\.azure\.com": "Azure OpenAI",
    r"(?:[a-z0-9-]+\.)?cognitiveservices\.azure\.com": "Azure OpenAI",
    r"(?:[a-z0-9-]+\.)?services\.ai\.azure\.com": "Azure AI Foundry",
    r"bedrock-runtime(?:-fips)?\.[a-z0-9-]+\.amazonaws\.com(?:\.cn)?": "Amazon Bedrock",
    r"(?:[a-z0-9-]+-)?aiplatform\.googleapis\.com": "Vertex AI",
}

#: Path pattern (searched in the URL path of a ``POST``) → the model call it is.
MODEL_API_PATHS: Final[dict[str, str]] = {
    r"/publishers/[^/]+/models/[^/:]+:(?:rawPredict|streamRawPredict)$": "Vertex AI's rawPredict",
    r":(?:predict|serverStreamingPredict|streamGenerateContent|generateContent)$": (
        "Vertex AI's prediction API"
    ),
    r"/v1/complete$": "the Anthropic Text Completions API",
    r"/v1/messages/batches$": "the Anthropic Message Batches API",
    r"(?:/v1|/deployments/[^/]+)/completions/?$": "the OpenAI Completions API (legacy)",
    r"/v1/messages/$": "the Anthropic Messages API, on a path the routes do not cover",
    r"/chat/completions/$": "the OpenAI Chat Completions API, on a path the routes do not cover",
    r"/v1/responses/$": "the OpenAI Responses API, on a path the routes do not cover",
}

_HOSTS: Final = [(re.compile(rf"{pattern}\Z"), name) for pattern, name in MODEL_API_HOSTS.items()]
_PATHS: Final = [(re.compile(pattern), name) for pattern, name in MODEL_API_PATHS.items()]


def model_api_of(method: str, url: str) -> str | None:
    """What model API a request that is not a recorded model call reaches, or ``None``: not one."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if method.upper() == "POST":
        found = next((name for pattern, name in _PATHS if pattern.search(parts.path)), None)
        if found is not None:
            return found
    return next((name for pattern, name in _HOSTS if pattern.match(host)), None)
