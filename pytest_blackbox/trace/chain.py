"""The hash-chain check: no step of a cassette was edited, removed or reordered since recording.

Messages name the step and the broken link, never the stored values (cassette content may be
secret). See docs/cassette-format.md#the-hash-chain.
"""

from __future__ import annotations

from typing import Any

from .canonical import step_hash
from .errors import CanonicalJSONError, HashChainError
from .errors import where as shown_where
from .model import STEP_TYPES

__all__ = ["validate_chain"]

_REORDERED = "(a step was removed, reordered or edited)"
_FIELDS = ("index", "type", "timestamp", "payload", "prevHash", "hash")


def validate_chain(trace: Any, *, path: str | None = None) -> None:
    """Raise ``HashChainError`` at the first step whose index, type, prevHash or hash breaks the chain."""
    steps = trace.get("steps") if isinstance(trace, dict) else None
    if not isinstance(steps, list):
        raise _error(path, None, "the trace has no list of steps")
    previous: str | None = None
    for position, step in enumerate(steps):
        problem = _step_problem(step, position, previous)
        if problem is not None:
            raise _error(path, position, f"step {position}: {problem}")
        previous = step["hash"]


def _step_problem(step: Any, position: int, previous: str | None) -> str | None:
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
    if position > 0 and step["prevHash"] != previous:
        return f"prevHash does not match the hash of step {position - 1} " + _REORDERED
    try:
        expected = step_hash(position, step["type"], step["timestamp"], step["payload"], step["prevHash"])
    except CanonicalJSONError as exc:
        return f"its contents cannot be hashed: {exc}"
    if step["hash"] != expected:
        return (
            "stored hash does not match its contents (the cassette was edited or corrupted after recording)"
        )
    return None


def _error(path: str | None, position: int | None, detail: str) -> HashChainError:
    where = shown_where(path)
    return HashChainError(f"{where} failed its hash-chain check: {detail}", path=path, step_index=position)
