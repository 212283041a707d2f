"""Reading a cassette one step at a time, so checking a huge file never holds all of it in memory.

``verify`` of a long agent run (100,000 steps, hundreds of megabytes) would otherwise hold the text,
the whole parsed document and its hashes at once. This reader decodes the top-level object member
by member and the ``steps`` array step by step with the same strict rules as
:func:`~pytest_blackbox.trace.io.parse_json`, handing each step over and dropping it.

It only takes the common shape: a top-level object whose members are each complete JSON values.
Anything else (a parse error, a refused token, a duplicate member, bytes that are not UTF-8, a file
that cannot be opened) raises :class:`NotStreamable`, and the caller reads the whole file with
``parse_json`` instead, which names the problem exactly as it always has.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import Any, BinaryIO, NamedTuple

from .strictjson import SAFE_INTEGER, Refused, number_float, number_int, refuse_constant, unique_object

__all__ = ["Member", "NotStreamable", "Step", "stream_cassette", "stream_text"]

#: Bytes read at a time; a value longer than the text held is read in growing pieces.
CHUNK = 1 << 20

_SPACE = re.compile(r"[ \t\n\r]*")
_SPACES = " \t\n\r"


def _after_space(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    return match.end() if match else position


class NotStreamable(Exception):
    """The file is not in the shape this reader takes; read it whole instead."""


class Member(NamedTuple):
    """A top-level member; when ``steps`` is an array, ``value`` is ``[]`` and its elements follow."""

    key: str
    value: Any


class Step(NamedTuple):
    """One element of ``steps``: its position and parsed value.

    ``exact_numbers`` says every number in it is one the C encoder writes as JavaScript does (see
    :func:`~pytest_blackbox.trace.canonical.canonical_json`). ``containers`` bounds how many objects
    and arrays it holds (its text's ``{`` and ``[``, counted at C speed, strings' included), and so
    how deep it can nest: a step with no more than ``MAX_NESTING`` need not be walked to know it fits.
    """

    position: int
    value: Any
    exact_numbers: bool
    containers: int


class _Numbers:
    """The strict reader's number rules, noting any number the C encoder spells unlike JavaScript."""

    def __init__(self) -> None:
        self.inexact = False

    def read_float(self, token: str) -> int | float:
        value = number_float(token)
        if type(value) is float and not 1e-4 <= abs(value) < SAFE_INTEGER:
            self.inexact = True
        return value

    def read_int(self, token: str) -> int | float:
        if len(token) < 16:
            return int(token)
        self.inexact = True
        return number_int(token)


class _Reader:
    """A window of decoded text over the file, grown as a value needs it and trimmed as it is consumed;
    or, with no file, the whole text already read."""

    def __init__(self, handle: BinaryIO | None, text: str = "") -> None:
        self.handle = handle
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.text = text
        self.pos = 0
        self.eof = handle is None
        self.numbers = _Numbers()
        self.scan = json.JSONDecoder(
            object_pairs_hook=unique_object,
            parse_constant=refuse_constant,
            parse_float=self.numbers.read_float,
            parse_int=self.numbers.read_int,
        ).raw_decode

    def fill(self) -> None:
        """Read more: at least as much again as is held, so a long value is re-scanned a few times only."""
        if self.eof or self.handle is None:
            raise NotStreamable("incomplete")
        data = self.handle.read(max(CHUNK, len(self.text) - self.pos))
        self.eof = not data
        try:
            more = self.decoder.decode(data, final=self.eof)
        except UnicodeDecodeError:
            raise NotStreamable("not UTF-8") from None
        del data  # only the unread text and the new piece are held from here on
        rest, self.text = self.text[self.pos :], ""
        self.text, self.pos = rest + more, 0

    def peek(self) -> str:
        """The next character after whitespace, without consuming it; ``""`` at the end of the file."""
        if self.pos < len(self.text) and self.text[self.pos] not in _SPACES:
            return self.text[self.pos]
        while True:
            self.pos = _after_space(self.text, self.pos)
            if self.pos < len(self.text):
                return self.text[self.pos]
            if self.eof:
                return ""
            self.fill()

    def expect(self, characters: str) -> str:
        found = self.peek()
        if not found or found not in characters:
            raise NotStreamable("unexpected character")
        self.pos += 1
        return found

    def key(self) -> str:
        if self.peek() != '"':
            raise NotStreamable("member name expected")
        return str(self.value(":")[0])

    def value(self, followers: str = ",]}") -> tuple[Any, bool, int]:
        """The next JSON value, whether all its numbers are exact, and its text's ``{`` and ``[``
        (see :class:`Step`).

        A value counts as read only once one of ``followers`` is seen after it: the end of the
        window may cut a token anywhere, and ``0`` of ``0.25`` or ``1`` of ``1e5`` parse fine alone.
        """
        self.peek()
        while True:
            start = self.pos
            self.numbers.inexact = False
            try:
                value, end = self.scan(self.text, start)
            except (ValueError, Refused, RecursionError):
                end = -1
            if end >= 0:
                after = _after_space(self.text, end)
                if self.eof or (after < len(self.text) and self.text[after] in followers):
                    self.pos = after
                    containers = self.text.count("{", start, end) + self.text.count("[", start, end)
                    return value, not self.numbers.inexact, containers
            if self.eof:
                raise NotStreamable("bad value")
            self.fill()


def _members(reader: _Reader) -> Iterator[Member | Step]:
    reader.expect("{")
    if reader.peek() == "}":
        reader.pos += 1
        return
    seen: set[str] = set()
    while True:
        key = reader.key()
        if key in seen:
            raise NotStreamable("duplicate member")
        seen.add(key)
        reader.expect(":")
        if key == "steps" and reader.peek() == "[":
            yield Member(key, [])
            yield from _steps(reader)
        else:
            yield Member(key, reader.value()[0])
        if reader.expect(",}") == "}":
            return


def _steps(reader: _Reader) -> Iterator[Step]:
    reader.expect("[")
    if reader.peek() == "]":
        reader.pos += 1
        return
    position = 0
    while True:
        value, exact, containers = reader.value()
        yield Step(position, value, exact, containers)
        position += 1
        if reader.expect(",]") == "]":
            return


def stream_cassette(path: str) -> Iterator[Member | Step]:
    """The top-level members of the cassette at ``path`` in file order, ``steps`` as its steps.

    Raises :class:`NotStreamable` (possibly after yielding some) when the file is not a JSON object
    that this reader takes; nothing it yielded may then be trusted to be the whole story.
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed below, also when the consumer stops early)
    except (OSError, ValueError):
        raise NotStreamable("cannot open") from None
    try:
        yield from _document(_Reader(handle))
    except OSError:
        raise NotStreamable("cannot read") from None
    finally:
        handle.close()


def stream_text(text: str) -> Iterator[Member | Step]:
    """:func:`stream_cassette` over a cassette's text already read (its bytes decoded as UTF-8)."""
    return _document(_Reader(None, text))


def _document(reader: _Reader) -> Iterator[Member | Step]:
    yield from _members(reader)
    if reader.peek() != "":
        raise NotStreamable("extra data")
