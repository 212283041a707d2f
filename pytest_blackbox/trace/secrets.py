"""Keeping credentials out of everything a user sees: :func:`mask` for any text that may carry a value
from a cassette or a request. See docs/security.md#secrets.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "CREDENTIAL_PATTERN",
    "JS_SPACE",
    "REALISTIC_CREDENTIALS",
    "REDACTED",
    "SECRET_KEY",
    "contains_secret",
    "is_secret",
    "known_secrets",
    "mask",
    "truncate_masked",
]

REDACTED = "[redacted]"
#: How a path shows an object key that holds a secret: ``result[<secret>]``. Masking only the secret
#: inside the key would still show the rest of it, and the key's shape says nothing a reader needs.
SECRET_KEY = "<secret>"

#: Shorter known values would mask ordinary words; the original Blackbox uses the same floor.
MIN_SECRET_LENGTH = 4

#: JavaScript's ``\s``: ASCII whitespace, the Unicode spaces, the line separators and the BOM. The
#: patterns are the original Blackbox's regular expressions, so they are compiled with ``re.ASCII``
#: (``\b`` and ``\d`` are ASCII in JavaScript) and spell this class out.
JS_SPACE = r"[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"

#: Realistic credentials, as (marker label, pattern): long enough that a match is almost never an
#: ordinary word. The label is what reports show instead of the matched text (the original's labels).
REALISTIC_CREDENTIALS: tuple[tuple[str, str], ...] = (
    ("sk-ant", r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("sk-proj", r"sk-proj-[A-Za-z0-9_-]{20,}"),
    ("sk-", r"\bsk-[A-Za-z0-9_-]{32,}"),
    ("bearer-token", rf"\bBearer{JS_SPACE}+[A-Za-z0-9._~+/=-]{{16,}}"),
)
CREDENTIAL_PATTERN = re.compile("|".join(pattern for _, pattern in REALISTIC_CREDENTIALS), re.ASCII)


def known_secrets(secrets: Iterable[str]) -> list[str]:
    """The values worth looking for: each secret and its whitespace-stripped form, longest first.

    Environment values often carry a trailing newline, and a key pasted into a transcript loses it,
    so both spellings count. Longest first, so one secret containing another is masked whole.
    """
    found: set[str] = set()
    for secret in secrets:
        if not isinstance(secret, str):
            continue
        for candidate in (secret, secret.strip()):
            if len(candidate) >= MIN_SECRET_LENGTH:
                found.add(candidate)
    return sorted(found, key=lambda s: (-len(s), s))


def mask(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every known secret and every realistic credential replaced by ``[redacted]``."""
    for secret in known_secrets(secrets):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return CREDENTIAL_PATTERN.sub(REDACTED, text)


def is_secret(text: str, secrets: Iterable[str] = ()) -> bool:
    """Whether ``text`` holds a known secret or a realistic credential (what :func:`mask` would hide)."""
    return mask(text, secrets) != text


def truncate_masked(text: str, limit: int = 200, secrets: Iterable[str] = ()) -> str:
    """Mask, then cut to at most ``limit`` characters ending in ``…``.

    Masking first matters: cutting first could leave half a key that no pattern recognises any more.
    """
    masked = mask(text, secrets)
    if len(masked) <= limit:
        return masked
    return masked[: max(limit - 1, 0)] + "…"


def contains_secret(value: Any, secrets: Iterable[str]) -> bool:
    """Whether any known secret occurs in a string or an object key anywhere inside ``value``."""
    wanted = known_secrets(secrets)
    if not wanted:
        return False
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any(secret in item for secret in wanted):
                return True
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and any(secret in key for secret in wanted):
                    return True
                stack.append(child)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return False
