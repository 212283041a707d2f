"""Request bodies parsed in proportion to what is new: call *k*'s body is call *k−1*'s plus a few
history items.

An agent's requests carry the whole conversation so far, so parsing and normalizing each one from
scratch costs the square of the run's length. :class:`BodyParser` parses a body exactly as
``json.loads`` does, but remembers, for the last few bodies it parsed, where each item of the
provider's history array (``messages``, ``input``, ``contents``) ended. A new body whose text starts
with the same characters up to the end of item *j* is byte for byte the same up to there, so items
0…*j* are handed back as the very objects parsed before (a provider then reuses their normalized form
by identity: :meth:`~pytest_blackbox.providers.CallIds.normalized`) and only the rest of the text is
parsed. A change anywhere in the old part changes the text before some item's end, so that item and
every later one are parsed again: nothing is reused that is not identical. The fields after the
array (the tool definitions, the model) come back as the objects parsed before too when the text
after the array is the same as that body's.

See docs/engine.md#long-conversations.
"""

from __future__ import annotations

import json
import json.scanner
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["BodyParser"]

_DECODER = json.JSONDecoder()
#: The C scanner ``json.loads`` itself uses: one JSON value from an offset, and where it ended.
_scan: Any = json.scanner.make_scanner(_DECODER)  # type: ignore[arg-type]
#: JSON's insignificant whitespace, as ``json`` skips it.
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_WHITESPACE_CHARS = frozenset(" \t\n\r")
#: How many recent bodies are remembered (interleaved conversations each continue their own).
_REMEMBERED = 4


@dataclass
class _Parsed:
    """One parsed body: its text, the fields before its history array, and where each item ended."""

    text: str
    key: str
    before: list[tuple[str, Any]]
    items: list[Any]
    ends: list[int]
    #: The text after the history array, and the fields read from it (``None``: not read yet).
    tail: str = ""
    after: list[tuple[str, Any]] | None = None

    def shared(self, text: str) -> int:
        """How many leading history items ``text`` has byte for byte as this body had them."""
        ends = self.ends
        if not ends or not text.startswith(self.text[: ends[0]]):
            return 0
        if text.startswith(self.text[: ends[-1]]):
            return len(ends)
        low, high = 1, len(ends) - 1  # item ``low`` is shared, item ``high + 1`` is not
        while low < high:
            middle = (low + high + 1) // 2
            if text.startswith(self.text[: ends[middle - 1]]):
                low = middle
            else:
                high = middle - 1
        return low


class BodyParser:
    """``json.loads`` for one session's request bodies, reusing the history items of recent bodies."""

    def __init__(self) -> None:
        self._recent: list[_Parsed] = []

    def parse(self, text: str, history: str | None) -> Any:
        """The body ``text`` parsed; ``history`` names its growing array (``None``: parse it whole).

        Raises ``ValueError`` (or ``RecursionError``) where ``json.loads`` would.
        """
        if history is None:
            return json.loads(text)
        base, shared = self._base(text, history)
        try:
            value, parsed = _parse_object(text, history, base, shared)
        except StopIteration as stop:
            raise ValueError(f"invalid JSON at character {stop.value}") from None
        if parsed is not None:
            self._recent = [parsed, *(p for p in self._recent if p is not base)][:_REMEMBERED]
        return value

    def _base(self, text: str, history: str) -> tuple[_Parsed | None, int]:
        """The remembered body sharing the most leading history items with ``text``, and how many."""
        best: tuple[_Parsed | None, int] = (None, 0)
        for parsed in self._recent:  # the last body first: it mostly shares the most, sparing the rest
            if parsed.key == history and len(parsed.ends) > best[1]:
                shared = parsed.shared(text)
                if shared > best[1]:
                    best = (parsed, shared)
        return best


def _skip(text: str, index: int) -> int:
    """The index after the whitespace at ``index`` (the pattern matches the empty string too); an
    SDK writes compact JSON, so mostly there is none, which a set lookup tells."""
    if text[index : index + 1] not in _WHITESPACE_CHARS:
        return index
    found = _WHITESPACE.match(text, index)
    return found.end() if found is not None else index


def _parse_object(text: str, history: str, base: _Parsed | None, shared: int) -> tuple[Any, _Parsed | None]:
    """The top-level value and, when it is an object holding a ``history`` array, its parse record.

    With ``base`` (a remembered body whose first ``shared`` history items ``text`` repeats byte for
    byte), the fields before the array and those items are taken from it and parsing resumes after
    them. Fields are read one by one as ``json.loads`` reads them (a repeated key keeps its first
    place and its last value).
    """
    index = _skip(text, 0)
    if text[index : index + 1] != "{":
        return json.loads(text), None
    fields: dict[str, Any] = {}
    record: _Parsed | None = None
    more = True
    if base is not None and shared:
        fields.update(base.before)
        items, ends = base.items[:shared], base.ends[:shared]
        index = _items(text, ends[-1], items, ends, resumed=True)
        fields[history] = items
        record = _Parsed(text, history, base.before, items, ends, text[index:])  # never edited: shared
        if base.after is not None and record.tail == base.tail:
            record.after = base.after  # the same text after the array: the same fields, reused
            fields.update(base.after)
            return fields, record
        record.after = []
        index, more = _after_value(text, index)
    else:
        index = _skip(text, index + 1)
        if text[index : index + 1] == "}":
            index, more = index + 1, False
    while more:
        index = _skip(text, index)
        if text[index : index + 1] != '"':
            raise StopIteration(index)
        key, index = _scan(text, index)
        index = _skip(text, index)
        if text[index : index + 1] != ":":
            raise StopIteration(index)
        index = _skip(text, index + 1)
        if key == history and record is None and text[index : index + 1] == "[":
            items, ends = [], []
            record = _Parsed(text, history, list(fields.items()), items, ends)
            index = _items(text, index + 1, items, ends, resumed=False)
            record.tail, record.after = text[index:], []
            value: Any = items
        else:
            value, index = _scan(text, index)
            if record is not None and record.after is not None:
                record.after.append((key, value))
        fields[key] = value
        index, more = _after_value(text, index)
    if _skip(text, index) != len(text):
        raise ValueError(f"extra data after the JSON value (character {_skip(text, index)})")
    return fields, record


def _after_value(text: str, index: int) -> tuple[int, bool]:
    """After an object's value: the index after its ``,`` (another field follows) or its ``}``."""
    index = _skip(text, index)
    char = text[index : index + 1]
    if char == ",":
        return index + 1, True
    if char == "}":
        return index + 1, False
    raise StopIteration(index)


def _items(text: str, index: int, items: list[Any], ends: list[int], *, resumed: bool) -> int:
    """Read an array's items into ``items`` (and where each ended into ``ends``); the index after it.

    ``index`` is just after the ``[``, or (``resumed``) just after the last item already read.
    """
    if not resumed:
        index = _skip(text, index)
        if text[index : index + 1] == "]":
            return index + 1
        value, index = _scan(text, index)
        items.append(value)
        ends.append(index)
    while True:
        index = _skip(text, index)
        char = text[index : index + 1]
        if char == "]":
            return index + 1
        if char != ",":
            raise StopIteration(index)
        value, index = _scan(text, _skip(text, index + 1))
        items.append(value)
        ends.append(index)
