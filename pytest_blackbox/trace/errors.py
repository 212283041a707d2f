"""The errors of reading and checking cassettes, defined inside ``trace/`` so it never imports the
execution side; ``pytest_blackbox.errors`` re-exports them. See docs/cassette-format.md#loading-a-cassette.
"""

from __future__ import annotations


class BlackboxError(Exception):
    """Base of every error pytest-blackbox raises on purpose."""


class CanonicalJSONError(BlackboxError):
    """A value has no canonical JSON form (NaN, infinity, an integer a double cannot hold, …)."""


class CassetteError(BlackboxError):
    """A cassette file could not be used; ``path`` names it and ``step_index`` the step, if any."""

    def __init__(self, message: str, *, path: str | None = None, step_index: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.step_index = step_index


class CassetteReadError(CassetteError):
    """The file is missing, a directory, unreadable, not UTF-8, or not JSON."""


class CassetteVersionError(CassetteError):
    """The ``version`` field is missing or is not the supported one."""


class CassetteSchemaError(CassetteError):
    """The document does not match the trace v2 JSON Schema; ``pointer`` is the JSON pointer."""

    def __init__(
        self, message: str, *, path: str | None = None, step_index: int | None = None, pointer: str = ""
    ) -> None:
        super().__init__(message, path=path, step_index=step_index)
        self.pointer = pointer


class HashChainError(CassetteError):
    """A step's index, prevHash or hash does not match the chain."""


def where(path: str | None) -> str:
    """How a message names a cassette: its path in backticks, with control characters and lone
    surrogates escaped so a strange file name can never split a one-line message."""
    if not path:
        return "the cassette"
    shown = "".join(c if c.isprintable() and not "\ud800" <= c <= "\udfff" else repr(c)[1:-1] for c in path)
    return f"`{shown}`"
