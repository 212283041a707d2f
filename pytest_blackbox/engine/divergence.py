"""How a replay divergence is shown: two values side by side, compact and masked, a long text as a
window around its first difference, and the match rules that shaped the comparison.

See docs/engine.md#replay-what-is-compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final, NoReturn

from ..analysis.jsondiff import VALUE_LIMIT, fits, render_value
from ..errors import ReplayDivergenceError
from ..trace.secrets import mask

__all__ = ["common_prefix", "diverge", "render_pair"]

#: Characters of context shown before a long text's first difference.
CONTEXT_BEFORE: Final = 60


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common start of two strings (by halving: C-speed comparisons)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _window(text: str, start: int) -> str:
    """``text`` from ``start`` as a JSON string, at most :data:`VALUE_LIMIT` characters, ``…`` where cut."""
    budget = VALUE_LIMIT - 4
    pieces: list[str] = []
    end = start
    while end < len(text) and budget > 0:
        piece = json.dumps(text[end], ensure_ascii=False)[1:-1]
        budget -= len(piece)
        if budget < 0:
            break
        pieces.append(piece)
        end += 1
    return f'"{"…" if start > 0 else ""}{"".join(pieces)}{"…" if end < len(text) else ""}"'


def render_pair(expected: Any, actual: Any, secrets: Iterable[str]) -> tuple[str, str, str | None]:
    """Both sides for a report, and a note when two long texts are shown around their first difference.

    Two texts too long to show whole would print the same first 200 characters on both sides (a
    date appended to a long system prompt would be invisible), so when they differ further in, both
    are shown from the same place, shortly before the first character that differs (counted in the
    masked texts).
    """
    wanted = list(secrets)
    if not (isinstance(expected, str) and isinstance(actual, str)) or (
        fits(expected, VALUE_LIMIT, wanted) and fits(actual, VALUE_LIMIT, wanted)
    ):
        return render_value(expected, wanted), render_value(actual, wanted), None
    shown_expected, shown_actual = mask(expected, wanted), mask(actual, wanted)
    offset = common_prefix(shown_expected, shown_actual)
    if offset < VALUE_LIMIT - 2 * CONTEXT_BEFORE:  # shown from the start, with room after it
        return render_value(expected, wanted), render_value(actual, wanted), None
    start = offset - CONTEXT_BEFORE
    note = (
        f"the texts differ from character {offset} on "
        f"(recorded {len(shown_expected)} characters, actual {len(shown_actual)})"
    )
    return _window(shown_expected, start), _window(shown_actual, start), note


def diverge(
    index: int,
    path: str,
    expected: Any,
    actual: Any,
    secrets: Iterable[str],
    hint: str | None = None,
    rules: str | None = None,
) -> NoReturn:
    """Raise the divergence at step ``index``, ``path``: the two values, shown by :func:`render_pair`.

    ``rules`` names the match rules that changed either side (the values shown are as compared).
    """
    shown_expected, shown_actual, note = render_pair(expected, actual, secrets)
    notes = [note] if note is not None else []
    if rules is not None:
        notes.append(f"compared after the match rules: {mask(rules, secrets)}")
    raise ReplayDivergenceError(index, path, shown_expected, shown_actual, hint, notes=notes)
