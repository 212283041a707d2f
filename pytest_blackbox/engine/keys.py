"""Provider API keys: which variables hold them, the offline placeholder, and finding them in a run.

Every place that masks, refuses or fakes a key asks this module, so a new provider's key variable or
header is added once. Standard library only: the read-only CLI commands import it too. See
docs/concepts.md#secrets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from typing import Final
from urllib.parse import parse_qsl, urlsplit

from ..trace.secrets import MIN_SECRET_LENGTH

__all__ = [
    "KEY_VARIABLES",
    "OFFLINE_PLACEHOLDER_KEY",
    "PLACEHOLDER_VARIABLES",
    "SECRET_HEADERS",
    "SECRET_QUERY_PARAMETERS",
    "KnownKeys",
    "environment_keys",
    "header_secrets",
    "set_placeholder_keys",
]

#: The environment variables the provider SDKs read their API key from.
KEY_VARIABLES: Final = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")

#: The variables an offline run gives the placeholder, each unless one of its alternatives is set:
#: google-genai reads GOOGLE_API_KEY before GEMINI_API_KEY and warns when both are set.
PLACEHOLDER_VARIABLES: Final[dict[str, tuple[str, ...]]] = {
    "ANTHROPIC_API_KEY": (),
    "OPENAI_API_KEY": (),
    "GEMINI_API_KEY": ("GOOGLE_API_KEY",),
}

#: Set as the provider key in offline runs so SDK constructors start; nothing is sent with it, so it
#: is never a secret.
OFFLINE_PLACEHOLDER_KEY: Final = "blackbox-offline-placeholder"

#: Request headers (lower-case) that carry a provider key; ``authorization`` as ``Bearer <key>``.
SECRET_HEADERS: Final = ("authorization", "x-api-key", "api-key", "x-goog-api-key")

#: URL query parameters that carry a provider key (the Gemini API accepts ``?key=``).
SECRET_QUERY_PARAMETERS: Final = ("key",)


def environment_keys(env: Mapping[str, str]) -> dict[str, str]:
    """The key variables set in ``env`` to a real key (not empty, not the placeholder), by name."""
    return {
        name: value
        for name in KEY_VARIABLES
        if (value := env.get(name)) and value.strip() and value != OFFLINE_PLACEHOLDER_KEY
    }


def header_secrets(headers: Iterable[tuple[str, str]]) -> list[str]:
    """The key values a request's headers carry (a ``Bearer`` prefix removed)."""
    return [
        value[7:] if value.lower().startswith("bearer ") else value
        for name, value in headers
        if name.lower() in SECRET_HEADERS
    ]


class KnownKeys(set[str]):
    """The key values one run has seen, from the environment and its requests' headers.

    They are masked in every message and refused in every cassette the run writes.
    """

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> KnownKeys:
        keys = cls()
        for value in environment_keys(env).values():
            keys.note(value)
        return keys

    def note(self, value: str) -> None:
        """Remember a key value (stripped; too short a value, or the placeholder, is no key)."""
        value = value.strip()
        if len(value) >= MIN_SECRET_LENGTH and value != OFFLINE_PLACEHOLDER_KEY:
            self.add(value)

    def note_request(self, headers: Iterable[tuple[str, str]], url: str) -> None:
        """Remember the key values a request carries, in its headers or its URL's query."""
        for value in header_secrets(headers):
            self.note(value)
        for name, value in parse_qsl(urlsplit(url).query):
            if name in SECRET_QUERY_PARAMETERS:
                self.note(value)


def set_placeholder_keys(env: MutableMapping[str, str]) -> list[str]:
    """Give every key variable that is unset or blank the placeholder; returns the names it set.

    The SDK constructors refuse to start without a key, and an offline run never sends one.
    """
    missing = [
        name
        for name, alternatives in PLACEHOLDER_VARIABLES.items()
        if not any(env.get(variable, "").strip() for variable in (name, *alternatives))
    ]
    for name in missing:
        env[name] = OFFLINE_PLACEHOLDER_KEY
    return missing
