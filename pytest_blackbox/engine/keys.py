"""Provider API keys: which variables hold them, the offline placeholder, and finding them in a run.

Every place that masks, refuses or fakes a key asks this module, so a new provider's key variable or
header is added once; the user's own secrets (the ``secrets`` option) are found the same way. Standard
library only: the read-only CLI commands import it too. See docs/concepts.md#secrets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qsl, urlsplit

from ..trace.secrets import MIN_SECRET_LENGTH

if TYPE_CHECKING:
    from .rules import Secrets

__all__ = [
    "AWS_CREDENTIAL_VARIABLES",
    "GOOGLE_PLACEHOLDER_CREDENTIALS",
    "HEADER_KEY_VARIABLES",
    "KEY_VARIABLES",
    "OFFLINE_PLACEHOLDER_KEY",
    "PLACEHOLDER_VALUES",
    "PLACEHOLDER_VARIABLES",
    "PROVIDER_KEY_VARIABLES",
    "SECRET_HEADERS",
    "SECRET_QUERY_PARAMETERS",
    "KnownKeys",
    "environment_keys",
    "header_secrets",
    "is_placeholder",
    "set_placeholder_keys",
]

#: The AWS credentials boto3 and ``AnthropicBedrock`` sign Amazon Bedrock requests with (the key id,
#: the secret, a temporary session's token) and Bedrock's API key, sent as a bearer token.
AWS_CREDENTIAL_VARIABLES: Final = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
)
#: Where AWS credentials come from other than the key variables: a recording with one of these set
#: gets no placeholder, so the SDK finds the real credentials.
_AWS_SOURCES: Final = (
    "AWS_PROFILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_BEARER_TOKEN_BEDROCK",
)

#: Azure OpenAI's key and Entra ID token as LiteLLM names them (it reads ``AZURE_OPENAI_API_KEY``
#: first, then these).
_LITELLM_AZURE: Final = ("AZURE_API_KEY", "AZURE_AD_TOKEN")

#: The environment variables the provider SDKs (and LiteLLM) read their API key from.
#: Azure OpenAI's Entra ID token (``AZURE_OPENAI_AD_TOKEN``) is one too: a bearer credential.
KEY_VARIABLES: Final = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    *_LITELLM_AZURE,
    *AWS_CREDENTIAL_VARIABLES,
)

# -- Google Cloud (Vertex AI) ---------------------------------------------------------------------

#: Authorized-user credentials whose access token is the offline placeholder key and never expires,
#: shipped with the package, for google-auth's GOOGLE_APPLICATION_CREDENTIALS (what a Vertex AI
#: client, ``genai.Client(vertexai=True)`` or ``AnthropicVertex``, signs with): google-auth loads them
#: without the network, so a Vertex AI client starts and signs in a replay with no Google account;
#: a recording that would send the token is refused like a placeholder key. Not a secret.
GOOGLE_PLACEHOLDER_CREDENTIALS: Final = str(Path(__file__).with_name("google_placeholder_credentials.json"))

# -- the placeholders -----------------------------------------------------------------------------

#: The variables an offline run gives the placeholder, each unless one of its alternatives is set:
#: google-genai reads GOOGLE_API_KEY before GEMINI_API_KEY and warns when both are set; the openai
#: SDK's ``AzureOpenAI`` takes an Entra ID token from AZURE_OPENAI_AD_TOKEN before the key, and
#: LiteLLM takes AZURE_OPENAI_API_KEY before its own AZURE_API_KEY and AZURE_AD_TOKEN (so a
#: placeholder there would shadow the key a LiteLLM user recorded with); AWS
#: credentials may come from a profile, a container or a web identity instead (the key id and
#: secret are a pair: the secret gets one only with the key id). Azure's
#: endpoint and API version get none: they are configuration, not credentials, and the API version
#: is compared, so a made-up one would only diverge.
PLACEHOLDER_VARIABLES: Final[dict[str, tuple[str, ...]]] = {
    "ANTHROPIC_API_KEY": (),
    "OPENAI_API_KEY": (),
    "GEMINI_API_KEY": ("GOOGLE_API_KEY",),
    "AZURE_OPENAI_API_KEY": ("AZURE_OPENAI_AD_TOKEN", *_LITELLM_AZURE),
    "AWS_ACCESS_KEY_ID": _AWS_SOURCES,
    "AWS_SECRET_ACCESS_KEY": ("AWS_ACCESS_KEY_ID", *_AWS_SOURCES),
    "AWS_DEFAULT_REGION": ("AWS_REGION", "AWS_PROFILE"),
    "GOOGLE_APPLICATION_CREDENTIALS": (),
}

#: Placeholders that are not the placeholder key: Google Cloud's credentials variable names a file
#: (:data:`GOOGLE_PLACEHOLDER_CREDENTIALS`); boto3 refuses to build a client without a region, and a
#: made-up one would not resolve to an endpoint (the region is configuration, never a credential, and
#: a replay does not compare hosts).
PLACEHOLDER_VALUES: Final = {
    "GOOGLE_APPLICATION_CREDENTIALS": GOOGLE_PLACEHOLDER_CREDENTIALS,
    "AWS_DEFAULT_REGION": "us-east-1",
}

#: The variable that holds each provider's key, by provider (route) name: what to set to record.
PROVIDER_KEY_VARIABLES: Final = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai_chat": "OPENAI_API_KEY",
    "openai_responses": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "bedrock": "AWS_ACCESS_KEY_ID",
    "bedrock_converse": "AWS_ACCESS_KEY_ID",
}

#: The variable that holds the key a request header carries, where it is not the provider's own:
#: Azure OpenAI sends its key in ``api-key``, through the OpenAI protocols.
HEADER_KEY_VARIABLES: Final = {"api-key": "AZURE_OPENAI_API_KEY"}

#: Set as the provider key in offline runs so SDK constructors start; nothing is sent with it, so it
#: is never a secret.
OFFLINE_PLACEHOLDER_KEY: Final = "blackbox-offline-placeholder"

#: Request headers (lower-case) that carry a provider key; ``authorization`` as ``Bearer <key>``, or
#: an AWS signature (SigV4) naming the access key id; ``x-amz-security-token`` a session's token.
SECRET_HEADERS: Final = ("authorization", "x-api-key", "api-key", "x-goog-api-key", "x-amz-security-token")

#: A SigV4 ``Authorization`` header: its access key id and its signature are each a secret.
_SIGV4: Final = re.compile(
    r"AWS4-HMAC-SHA256\s+Credential=([^/,\s]+)/[^,]*,.*?Signature=([0-9a-fA-F]+)", re.S
)

#: URL query parameters that carry a provider key (the Gemini API accepts ``?key=``).
SECRET_QUERY_PARAMETERS: Final = ("key",)


def environment_keys(env: Mapping[str, str]) -> dict[str, str]:
    """The key variables set in ``env`` to a real key (not empty, not the placeholder), by name."""
    return {
        name: value
        for name in KEY_VARIABLES
        if (value := env.get(name)) and value.strip() and value != OFFLINE_PLACEHOLDER_KEY
    }


def header_secrets(
    headers: Iterable[tuple[str, str]], names: Iterable[str] = SECRET_HEADERS
) -> list[tuple[str, str]]:
    """(header name, key value) for each of ``names`` a request carries (a ``Bearer`` prefix removed;
    a SigV4 signature gives its access key id and its signature, each a value of its own)."""
    wanted = set(names)
    found: list[tuple[str, str]] = []
    for name, value in headers:
        if name.lower() not in wanted:
            continue
        signed = _SIGV4.match(value.strip())
        if signed is not None:
            found += [(name, signed.group(1)), (name, signed.group(2))]
        else:
            found.append((name, value[7:] if value.lower().startswith("bearer ") else value))
    return found


class KnownKeys(set[str]):
    """The key values one run has seen, from the environment and its requests' headers and URLs.

    They are masked in every message and refused in every cassette the run writes. ``secrets`` (the
    session option) adds variables, values, headers and query parameters to look in. Where each value
    was first seen is kept, so a refusal can name it (never the value itself).
    """

    def __init__(self, secrets: Secrets | None = None) -> None:
        super().__init__()
        self._sources: dict[str, tuple[str, bool]] = {}
        self.headers = (*SECRET_HEADERS, *(secrets.headers if secrets is not None else ()))
        self._carriers = frozenset(self.headers)
        #: The last request's headers that may carry a key, all noted already.
        self._last_carried: list[tuple[str, str]] = []
        self.query = (*SECRET_QUERY_PARAMETERS, *(secrets.query if secrets is not None else ()))

    @classmethod
    def from_environment(cls, env: Mapping[str, str], secrets: Secrets | None = None) -> KnownKeys:
        keys = cls(secrets)
        for name, value in environment_keys(env).items():
            keys.note(value, f"the value of {name}")
        if secrets is not None:
            for name in secrets.env:
                keys.note(env.get(name, ""), f"the value of {name}", custom=True)
            for value in secrets.values:
                keys.note(value, "a value listed in secrets", custom=True)
        return keys

    def note(self, value: str, source: str, *, custom: bool = False) -> None:
        """Remember a key value (stripped; too short a value, or the placeholder, is no key).

        ``source`` says where it came from; ``custom``: from the ``secrets`` option, not a provider's key.
        """
        value = value.strip()
        if len(value) >= MIN_SECRET_LENGTH and value != OFFLINE_PLACEHOLDER_KEY:
            self.add(value)
            self._sources.setdefault(value, (source, not custom))

    def note_request(self, headers: Iterable[tuple[str, str]], url: str) -> None:
        """Remember the key values a request carries, in its headers (names lower-cased, as a
        ``ModelRequest`` has them) or its URL's query."""
        carried = [pair for pair in headers if pair[0] in self._carriers]
        if carried != self._last_carried:  # a run's requests carry the same keys: noted once
            for name, value in header_secrets(carried, self.headers):
                self.note(value, f"the value of the {name} request header", custom=name not in SECRET_HEADERS)
            self._last_carried = carried
        if "?" not in url:  # no query to look in (most model calls): spare parsing the URL
            return
        for name, value in parse_qsl(urlsplit(url).query):
            if name in self.query:
                source = f"the value of the {name} query parameter"
                self.note(value, source, custom=name not in SECRET_QUERY_PARAMETERS)

    def describe(self, found: str) -> str:
        """What a found value is, and where it came from: ``your API key (the value of X)``."""
        source, provider_key = self._sources.get(found) or self._sources.get(found.strip()) or ("", True)
        what = "your API key" if provider_key else "a secret"
        return f"{what} ({source})" if source else what

    def placeholder_in(self, headers: Iterable[tuple[str, str]], url: str) -> tuple[str, str] | None:
        """Where a request carries the offline placeholder key (``its x-api-key header``), if it does.

        With it, the header or query parameter's name, so the refusal can name the variable to set.
        """
        for name, value in header_secrets(headers, self.headers):
            if value.strip() == OFFLINE_PLACEHOLDER_KEY:
                return f"its {name} header", name.lower()
        for name, value in parse_qsl(urlsplit(url).query):
            if name in self.query and value.strip() == OFFLINE_PLACEHOLDER_KEY:
                return f"its ?{name}= query parameter", name
        return None


def set_placeholder_keys(env: MutableMapping[str, str]) -> list[str]:
    """Give every key variable that is unset or blank the placeholder; returns the names it set.

    The SDK constructors refuse to start without a key, and an offline run never sends one. A
    variable of :data:`PLACEHOLDER_VALUES` gets its own placeholder instead.
    """
    missing = [
        name
        for name, alternatives in PLACEHOLDER_VARIABLES.items()
        if not any(env.get(variable, "").strip() for variable in (name, *alternatives))
    ]
    for name in missing:
        env[name] = PLACEHOLDER_VALUES.get(name, OFFLINE_PLACEHOLDER_KEY)
    return missing


def is_placeholder(value: str | None) -> bool:
    """Whether a variable's value is one an offline run sets (the key, or a :data:`PLACEHOLDER_VALUES`)."""
    return value == OFFLINE_PLACEHOLDER_KEY or value in PLACEHOLDER_VALUES.values()
