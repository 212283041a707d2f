"""The hash-chain check: no step of a cassette was edited, removed or reordered since recording.

Messages name the step and the broken link, never the stored values (cassette content may be
secret). See docs/cassette-format.md#the-hash-chain.
"""

from __future__ import annotations

from typing import Any

from .canonical import SharedCanonical, hashed_text, sha256_hex
from .errors import CanonicalJSONError, HashChainError
from .errors import where as shown_where
from .model import STEP_TYPES

__all__ = ["ChainCheck", "validate_chain"]

_REORDERED = "(a step was removed, reordered or edited)"
_EDITED = "(the cassette was edited or corrupted after recording)"
_FIELDS = ("index", "type", "timestamp", "payload", "prevHash", "hash")


def validate_chain(trace: Any, *, path: str | None = None) -> None:
    """Raise ``HashChainError`` at the first step whose index, type, prevHash or hash breaks the chain."""
    steps = trace.get("steps") if isinstance(trace, dict) else None
    if not isinstance(steps, list):
        raise _error(path, None, "the trace has no list of steps")
    chain = ChainCheck(path)
    for position, step in enumerate(steps):
        error = chain.check(step, position)
        if error is not None:
            raise error


class ChainCheck:
    """The chain checked one step at a time, in order, as a reader meets the steps.

    After a step passes, :attr:`hashed` is the canonical JSON its hash was computed over: every
    hashed string spelled as JavaScript writes it (escapes only for control characters and lone
    surrogates), which a caller may search instead of walking the step.
    """

    def __init__(self, path: str | None = None, *, shared: bool = True) -> None:
        """``shared``: the steps may repeat their messages' objects (a trace checked in memory, such as
        a recording before it is written, or read with ``io.share_repeated``); ``False`` says a
        reader's steps never do, and a step whose numbers it read exactly is hashed whole."""
        self.path = path
        self.previous: str | None = None
        self.hashed: str | None = None
        self._repeats = shared
        #: Each message's canonical text, kept from step to step (and which texts were scanned).
        self._shared = SharedCanonical()

    def check(self, step: Any, position: int, *, exact_numbers: bool = False) -> HashChainError | None:
        """The error at ``step``, the step at ``position``, or ``None`` if it links and hashes right.

        ``exact_numbers`` is passed on to :func:`~pytest_blackbox.trace.canonical.canonical_json`.
        """
        self.hashed = None
        problem = self._problem(step, position, exact_numbers)
        if problem is not None:
            return _error(self.path, position, f"step {position}: {problem}")
        self.previous = step["hash"]
        return None

    def _problem(self, step: Any, position: int, exact_numbers: bool) -> str | None:
        if not isinstance(step, dict):
            return "is not a step object"
        for field in _FIELDS:
            if field not in step:
                return f"has no {field} field"
        index = step["index"]
        if isinstance(index, bool) or not isinstance(index, (int, float)) or index != position:
            return "index does not match its position in the file (steps were removed, reordered or inserted)"
        if step["type"] not in STEP_TYPES:
            return f"unknown step type (expected one of {', '.join(STEP_TYPES)})"
        if position == 0 and step["prevHash"] is not None:
            return "prevHash must be null on the first step"
        if position > 0 and step["prevHash"] != self.previous:
            return f"prevHash does not match the hash of step {position - 1} " + _REORDERED
        whole = exact_numbers and not self._repeats
        text_of = hashed_text if whole else self._shared.hashed_text
        try:
            hashed = text_of(
                position,
                step["type"],
                step["timestamp"],
                step["payload"],
                step["prevHash"],
                exact_numbers=exact_numbers,
            )
        except CanonicalJSONError as exc:
            return f"its contents cannot be hashed: {exc}"
        if step["hash"] != sha256_hex(hashed):
            return f"stored hash does not match its contents {_EDITED}"
        self.hashed = hashed
        return None


def _error(path: str | None, position: int | None, detail: str) -> HashChainError:
    where = shown_where(path)
    return HashChainError(f"{where} failed its hash-chain check: {detail}", path=path, step_index=position)
