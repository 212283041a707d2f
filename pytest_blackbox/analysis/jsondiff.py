"""Locating and showing the differences between two JSON values.

A replay divergence and ``blackbox diff`` need the same pieces: a stable walk order, a readable path
(``messages[0].content``), and values shown short and masked, so a report never dumps a huge payload
or a secret. See docs/engine.md#replay-what-is-compared.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from ..trace.canonical import canonical_json, json_pieces
from ..trace.errors import CanonicalJSONError
from ..trace.secrets import SECRET_KEY, is_secret, known_secrets, mask, truncate_masked

__all__ = [
    "ABSENT",
    "Difference",
    "LeafChange",
    "changed_leaf_paths",
    "compact_json",
    "first_difference",
    "fits",
    "format_path",
    "render_value",
]

VALUE_LIMIT: Final = 200
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


class _Absent:
    """The value on the side where a key or array element does not exist."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()

PathPart = str | int


def format_path(parts: Iterable[PathPart], secrets: Iterable[str] = ()) -> str:
    """``messages[0].content``; keys that are not identifiers as ``["a key"]``; ``(root)`` if empty.

    A key holding a secret (one of ``secrets``, or a realistic credential) is shown as
    ``[<secret>]``: a path names where a value is, so it must never quote the key it found there.
    """
    wanted = known_secrets(secrets)
    out: list[str] = []
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif is_secret(part, wanted):
            out.append(f"[{SECRET_KEY}]")
        elif _IDENTIFIER.match(part):
            out.append(f".{part}" if out else part)
        else:
            out.append(f"[{json.dumps(part, ensure_ascii=False)}]")
    return "".join(out) or "(root)"


def _same(a: Any, b: Any) -> bool:
    try:
        return canonical_json(a) == canonical_json(b)
    except CanonicalJSONError:
        return type(a) is type(b) and repr(a) == repr(b)


@dataclass(frozen=True)
class Difference:
    """The first place two values differ; either side may be :data:`ABSENT`."""

    path: str
    expected: Any
    actual: Any


def first_difference(expected: Any, actual: Any, secrets: Iterable[str] = ()) -> Difference | None:
    """The first differing path, walking object keys in sorted order and arrays by index.

    ``secrets`` are masked in the path (:func:`format_path`)."""
    if _same(expected, actual):
        return None
    parts: list[PathPart] = []
    while True:
        if isinstance(expected, dict) and isinstance(actual, dict):
            keys = sorted(
                set(expected) | set(actual), key=lambda k: str(k).encode("utf-16-be", "surrogatepass")
            )
            key = next(k for k in keys if not _same(expected.get(k, ABSENT), actual.get(k, ABSENT)))
            parts.append(key)
            expected, actual = expected.get(key, ABSENT), actual.get(key, ABSENT)
        elif isinstance(expected, list) and isinstance(actual, list):
            length = max(len(expected), len(actual))
            index = next(i for i in range(length) if not _same(_at(expected, i), _at(actual, i)))
            parts.append(index)
            expected, actual = _at(expected, index), _at(actual, index)
        else:
            return Difference(format_path(parts, secrets), expected, actual)


def _at(items: list[Any], index: int) -> Any:
    return items[index] if index < len(items) else ABSENT


@dataclass(frozen=True)
class LeafChange:
    """One changed leaf, for the ``changed fields:`` view of ``diff``."""

    path: str
    before: Any
    after: Any


def changed_leaf_paths(
    before: Any, after: Any, prefix: Iterable[PathPart] = (), secrets: Iterable[str] = ()
) -> list[LeafChange]:
    """Every changed leaf, in document order (the ``before`` side's key order, then new keys);
    ``secrets`` are masked in the paths (:func:`format_path`)."""
    changes: list[LeafChange] = []
    _collect(before, after, list(prefix), changes, known_secrets(secrets))
    return changes


def _collect(
    before: Any, after: Any, parts: list[PathPart], out: list[LeafChange], secrets: list[str]
) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        keys = list(before) + [key for key in after if key not in before]
        for key in keys:
            _collect(before.get(key, ABSENT), after.get(key, ABSENT), [*parts, key], out, secrets)
    elif isinstance(before, list) and isinstance(after, list):
        for index in range(max(len(before), len(after))):
            _collect(_at(before, index), _at(after, index), [*parts, index], out, secrets)
    elif not _same(before, after):
        out.append(LeafChange(format_path(parts, secrets), before, after))


def _budgeted(value: Any, budget: int | None) -> tuple[str, bool]:
    """Compact JSON, stopping soon after ``budget`` characters; the flag says whether it is whole."""
    out: list[str] = []
    size = 0
    for piece in json_pieces(value):
        out.append(piece)
        size += len(piece)
        if budget is not None and size > budget:
            return "".join(out), False
    return "".join(out), True


def compact_json(value: Any, budget: int | None = None) -> str:
    """Compact JSON of ``value``; with a ``budget``, stops soon after that many characters."""
    return _budgeted(value, budget)[0]


def render_value(value: Any, secrets: Iterable[str] = (), limit: int = VALUE_LIMIT) -> str:
    """A value for a one-line report: compact JSON, masked, at most ``limit`` characters.

    Enough text past the cut is rendered that a secret straddling it is still recognised and
    masked whole before cutting.
    """
    if value is ABSENT:
        return "(absent)"
    wanted = known_secrets(secrets)
    margin = 256 + max((len(secret) for secret in wanted), default=0)
    text, whole = _budgeted(value, limit + margin)
    shown = truncate_masked(text, limit, wanted)
    if whole or shown.endswith("…"):
        return shown
    return shown[: limit - 1] + "…"


def fits(value: Any, limit: int, secrets: Iterable[str] = ()) -> bool:
    """Whether ``render_value(value, secrets, limit)`` shows the value whole."""
    if value is ABSENT:
        return True
    wanted = known_secrets(secrets)
    text, whole = _budgeted(value, limit + 256 + max((len(secret) for secret in wanted), default=0))
    return whole and len(mask(text, wanted)) <= limit
