"""Every JSON text the project writes, byte for byte what the original Blackbox's JavaScript writes.

One encoder follows ``JSON.stringify`` (ECMAScript number text, array-index keys first) and the hash
form sorts keys by UTF-16 code units. Encoding is on every hot path, so the C ``json`` encoder is
used whenever its output is provably identical (a false alarm costs the exact slow path, never a
wrong byte). See docs/cassette-format.md#the-hash-chain.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

from .errors import CanonicalJSONError

__all__ = [
    "SharedCanonical",
    "canonical_json",
    "hashed_text",
    "is_array_index",
    "js_keys",
    "js_number",
    "js_stringify",
    "json_pieces",
    "pretty_json",
    "pretty_json_shared",
    "same_encoded",
    "sha256_hex",
    "step_hash",
]

#: 2**53: integers at or above it are exact in a double only by luck.
_SAFE = 9007199254740992
#: The largest array index: JavaScript arrays hold at most 2**32 - 1 elements.
_MAX_INDEX = 2**32 - 2

# A number token in encoder output that the C encoder may spell differently from JavaScript.
# ``repr`` and ``Number::toString`` pick the same shortest digits and agree on plain decimals; they
# differ only on integral floats (``1.0`` vs ``1``), on exponent forms (Python switches below 1e-4,
# JavaScript below 1e-6) and on integers of 16+ digits (beyond 2**53). Tokens follow "[", ":" or ",";
# a string that merely looks like one only costs a look at the value. A value that is itself a
# number is checked directly. Compact output has no whitespace around tokens, so JSON text embedded
# in strings by Python's default ``json.dumps`` (which writes ": ") does not look like one there.
_RISKY_COMPACT = re.compile(r"[:,\[]-?(?:\d+\.0(?!\d)|\d+(?:\.\d+)?[eE]|\d{16,})")
# Surrogates need escaping; astral characters sort differently in UTF-16 when they are in keys.
_RISKY_CHAR = re.compile("[\ud800-\udfff\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# A key the C encoder writes where it was inserted but JavaScript writes first. Inside a string,
# JSON text has escaped quotes, so only real keys (and the rare look-alike) match.
_INDEX_KEY = re.compile(r'"(?:0|[1-9][0-9]*)":')

_fast_canonical = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
).encode
_fast_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_stdlib_pretty = json.JSONEncoder(ensure_ascii=False, indent=2, allow_nan=False).encode


@functools.cache
def _pretty_encoder() -> Callable[[Any], str]:
    """The indenting encoder of a value made ready for it (:func:`_as_javascript_writes`): orjson's
    (the ``fast`` extra) where installed, which writes a ready value (exact dicts with string keys,
    lists, strings, safe integers, floats both spell as a plain decimal, booleans, ``None``) byte
    for byte as the standard library does, at C speed instead of pure Python's; what it refuses
    (nesting past its limit) takes the exact slow path. Looked up at the first write: importing
    orjson imports ``uuid`` and ``platform``, which loading the plugin should not pay for.
    """
    try:
        import orjson
    except ImportError:
        return _stdlib_pretty
    dumps, indent = orjson.dumps, orjson.OPT_INDENT_2
    return lambda value: dumps(value, option=indent).decode("utf-8")


_encode_str = json.JSONEncoder(ensure_ascii=False).encode
_BYTES = (bytes, bytearray)


def js_number(value: int | float) -> str:
    """Write a number the way ECMAScript ``Number::toString`` does (``1.0``→``1``, ``1e-7``)."""
    if isinstance(value, bool):  # bool is an int subclass; callers handle it, but be exact
        return "true" if value else "false"
    if isinstance(value, int):
        if -_SAFE <= value <= _SAFE:
            return str(value)
        as_float = float(value) if abs(value) < 2**1024 else math.inf
        if as_float != value:
            raise CanonicalJSONError(
                f"an integer of {len(str(abs(value)))} digits cannot be stored exactly: JavaScript would "
                "round it; store it as a string instead"
            )
        return _float_to_js(as_float)
    return _float_to_js(value)


def _float_to_js(value: float) -> str:
    if not math.isfinite(value):
        raise CanonicalJSONError("Cannot canonicalize a non-finite number (NaN or Infinity)")
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) <= _SAFE:
        return str(int(value))
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - len(digits)
    k = len(digits)
    n = exponent + k  # value = 0.d1d2…dk × 10**n
    prefix = "-" if sign else ""
    if k <= n <= 21:
        return prefix + digits + "0" * (n - k)
    if 0 < n <= 21:
        return prefix + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return prefix + "0." + "0" * -n + digits
    e = n - 1
    exp = f"e{'+' if e >= 0 else '-'}{abs(e)}"
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return prefix + mantissa + exp


def _js_string(text: str) -> str:
    if _SURROGATE.search(text):
        # Pairs of surrogate code points are one character to JavaScript; lone ones get escaped.
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        encoded = _encode_str(text)
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)
    return _encode_str(text)


def is_array_index(key: str) -> bool:
    """Whether JavaScript treats ``key`` as an array index: ``"0"`` … ``"4294967294"``, no leading zero."""
    return (
        0 < len(key) <= 10
        and key.isascii()
        and key.isdigit()
        and (key[0] != "0" or key == "0")
        and int(key) <= _MAX_INDEX
    )


def js_keys(mapping: Mapping[str, Any]) -> list[str]:
    """An object's keys in JavaScript's order: array indexes ascending, then the others as inserted."""
    keys = list(mapping)
    indexes = [key for key in keys if isinstance(key, str) and is_array_index(key)]
    if not indexes:
        return keys
    indexes.sort(key=int)
    return indexes + [key for key in keys if not (isinstance(key, str) and is_array_index(key))]


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _keys(value: Mapping[Any, Any], sort: bool, lenient: bool) -> list[Any]:
    if not lenient:
        for key in value:
            if not isinstance(key, str):
                raise CanonicalJSONError(f"object keys must be strings, not {type(key).__name__}")
    if sort:
        return sorted(value, key=lambda k: _utf16_key(str(k)))
    return js_keys(value)


def _scalar(value: Any, lenient: bool) -> str | None:
    """A scalar's text, or ``None`` for a container; ``lenient`` shows what has no JSON form."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _js_string(value)
    if isinstance(value, (int, float)):
        if not lenient:
            return js_number(value)
        try:
            return js_number(value)
        except CanonicalJSONError:
            return str(value)
    if isinstance(value, Mapping) or (isinstance(value, Sequence) and not isinstance(value, _BYTES)):
        return None
    if lenient:
        return _js_string(repr(value))
    raise CanonicalJSONError(f"a {type(value).__name__} is not a JSON value")


def _pieces(value: Any, indent: str | None, level: int, sort: bool, lenient: bool) -> Iterator[str]:
    """The reference encoder, every rule spelled out, as a stream of pieces."""
    text = _scalar(value, lenient)
    if text is not None:
        yield text
        return
    inner = "" if indent is None else "\n" + indent * (level + 1)
    outer = "" if indent is None else "\n" + indent * level
    colon = ":" if indent is None else ": "
    if isinstance(value, Mapping):
        keys = _keys(value, sort, lenient)
        if not keys:
            yield "{}"
            return
        opening = "{"
        for key in keys:
            yield opening + inner + _js_string(str(key)) + colon
            yield from _pieces(value[key], indent, level + 1, sort, lenient)
            opening = ","
        yield outer + "}"
        return
    if not value:
        yield "[]"
        return
    opening = "["
    for item in value:
        yield opening + inner
        yield from _pieces(item, indent, level + 1, sort, lenient)
        opening = ","
    yield outer + "]"


def _slow(value: Any, indent: str | None, sort: bool) -> str:
    return "".join(_pieces(value, indent, 0, sort, lenient=False))


def _risky_number(value: float | int) -> bool:
    if type(value) is float:
        return value.is_integer() or not math.isfinite(value) or abs(value) < 1e-4
    return isinstance(value, int) and not isinstance(value, bool) and not -_SAFE <= value <= _SAFE


def _risky_string(text: str, key: bool) -> bool:
    return not text.isascii() and bool((_RISKY_CHAR if key else _SURROGATE).search(text))


def _needs_slow(value: Any) -> bool:
    """Exact check of the value: does it hold anything the C encoder spells unlike JavaScript?

    Only reached when the cheap scan of the encoder's output saw something suspicious, which is
    mostly JSON text inside strings (a tool result the agent sent as a string).
    """
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            for key, child in item.items():
                if type(key) is not str or _risky_string(key, key=True):
                    return True
                stack.append(child)
        elif kind is list:
            stack.extend(item)
        elif kind is str:
            if _risky_string(item, key=False):
                return True
        elif kind is float or kind is int:
            if _risky_number(item):
                return True
        elif item is not None and kind is not bool:
            return True  # tuples, subclasses, other objects: let the reference encoder decide
    return False


def _suspicious(text: str, numbers: re.Pattern[str] | None) -> bool:
    """A cheap scan of the C encoder's ``text``: could any of it differ from the JavaScript text?

    ``numbers`` is the scan for suspicious number tokens, or ``None`` when the caller knows every
    number is spelled alike by both (see :func:`canonical_json`).
    """
    return bool(
        (numbers is not None and (numbers.search(text) or text[:1] in "-0123456789"))
        or (not text.isascii() and _RISKY_CHAR.search(text))
    )


#: What :func:`_as_javascript_writes` returns for a value only the reference encoder writes right.
_UNSAFE: Any = object()


def _as_javascript_writes(value: Any, order_keys: bool) -> Any:
    """``value`` ready for the C encoder to write it as JavaScript does, or ``_UNSAFE``.

    Every integral float within ±2**53 becomes the integer JavaScript writes for it (tool results
    are full of ``21.0``) and, with ``order_keys``, every object with array-index keys is rebuilt in
    JavaScript's key order. Containers are copied only where something changed. ``_UNSAFE`` when
    anything else in it is spelled unlike JavaScript by the C encoder (see :func:`_needs_slow`).
    """
    kind = type(value)
    if kind is float:
        if value.is_integer() and abs(value) <= _SAFE:
            return int(value)  # -0.0 too: JavaScript writes it as 0
        return _UNSAFE if _risky_number(value) else value
    if kind is dict:
        copied: dict[str, Any] | None = None
        for key, child in value.items():
            if type(key) is not str or _risky_string(key, key=True):
                return _UNSAFE
            new = _as_javascript_writes(child, order_keys)
            if new is _UNSAFE:
                return _UNSAFE
            if new is not child:
                copied = dict(value) if copied is None else copied
                copied[key] = new
        ready = value if copied is None else copied
        if order_keys and any(key[:1].isdigit() and is_array_index(key) for key in ready):
            return {key: ready[key] for key in js_keys(ready)}
        return ready
    if kind is list:
        items: list[Any] | None = None
        for position, child in enumerate(value):
            new = _as_javascript_writes(child, order_keys)
            if new is _UNSAFE:
                return _UNSAFE
            if new is not child:
                items = list(value) if items is None else items
                items[position] = new
        return value if items is None else items
    if kind is str:
        return _UNSAFE if _risky_string(value, key=False) else value
    if kind is int:
        return _UNSAFE if _risky_number(value) else value
    if value is None or kind is bool:
        return value
    return _UNSAFE


def _prepared(value: Any, encode: Any, indent: str | None, *, sort: bool) -> str:
    """The encoder's text of ``value`` made ready for it (:func:`_as_javascript_writes`), or the
    reference encoder's text when it cannot be."""
    try:
        ready = _as_javascript_writes(value, order_keys=not sort)
        if ready is not _UNSAFE:
            return str(encode(ready))
    except (ValueError, TypeError, RecursionError):
        pass
    return _slow(value, indent, sort=sort)


def _checked(text: str, value: Any, numbers: re.Pattern[str] | None, encode: Any, *, sort: bool) -> str:
    """The C encoder's ``text`` when it is provably the JavaScript text, else the exact text.

    A false alarm of the scan (mostly JSON text inside strings) is cleared by one look at the value.
    """
    if not _suspicious(text, numbers) or not _needs_slow(value):
        return text
    return _prepared(value, encode, None, sort=sort)


def _insertion_order(value: Any, encode: Any, numbers: re.Pattern[str]) -> str:
    """JavaScript's text for the unsorted C encoder: its output when provably identical, else exact."""
    try:
        text = str(encode(value))
    except (ValueError, TypeError, RecursionError):
        return _slow(value, None, sort=False)
    if _INDEX_KEY.search(text):
        return _prepared(value, encode, None, sort=False)
    return _checked(text, value, numbers, encode, sort=False)


def same_encoded(left: Any, right: Any) -> bool:
    """Whether two values read from JSON (string keys) are provably equal as :func:`canonical_json`
    writes them: the C encoder writes them alike. Its text is a function of the value, so equal
    texts mean equal values; ``False`` says nothing (``1`` and ``1.0``: ask :func:`canonical_json`).
    Skips scanning the texts for what JavaScript spells differently, which equal values share."""
    try:
        return bool(_fast_canonical(left) == _fast_canonical(right))
    except (ValueError, TypeError, RecursionError):
        return False


def canonical_json(value: Any, *, exact_numbers: bool = False) -> str:
    """Compact JSON with keys sorted by UTF-16 code units, as the original hashes it.

    ``exact_numbers`` is the caller's promise that every number in ``value`` is an ``int`` within
    ±2**53 or a ``float`` that is not integral and lies between 1e-4 and 2**53 in magnitude (the
    streaming reader tracks this while parsing); such numbers need no scan of the output.
    """
    try:
        text = _fast_canonical(value)
    except (ValueError, TypeError, RecursionError):
        return _slow(value, None, sort=True)
    return _checked(text, value, None if exact_numbers else _RISKY_COMPACT, _fast_canonical, sort=True)


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value)``: compact, keys in JavaScript's order."""
    return _insertion_order(value, _fast_compact, _RISKY_COMPACT)


def pretty_json(value: Any) -> str:
    """``JSON.stringify(value, null, 2)``: two spaces, keys in JavaScript's order, raw non-ASCII.

    ``json`` indents in pure Python, which costs many times its C encoder: the value is made ready
    first (one walk), so the indented text is written once and needs no scan afterwards.
    """
    return _prepared(value, _pretty_encoder(), "  ", sort=False)


#: How deep :func:`pretty_json_shared` puts containers together itself: a cassette's messages (in
#: ``steps[i].payload.messages[j]``) lie below it and are written once each.
_COMPOSED_LEVELS = 5


def pretty_json_shared(value: Any) -> str:
    """:func:`pretty_json`, writing each container that appears several times (by identity) once.

    A recording's ``model_input`` steps hold the very message objects of the steps before them (see
    ``CallIds.normalized``), so a long run's cassette repeats most of its text; writing each message
    once, indented for its depth, keeps the cost in proportion to what is distinct. The text is
    :func:`pretty_json`'s, byte for byte.
    """
    return _pretty_composed(value, 0, {})


def _pretty_composed(value: Any, level: int, texts: dict[int, tuple[Any, str]]) -> str:
    kind = type(value)
    if level < _COMPOSED_LEVELS and kind is dict and value and all(type(key) is str for key in value):
        inner = "\n" + "  " * (level + 1)
        fields = (
            _js_string(key) + ": " + _pretty_composed(value[key], level + 1, texts) for key in js_keys(value)
        )
        return "{" + inner + ("," + inner).join(fields) + "\n" + "  " * level + "}"
    if level < _COMPOSED_LEVELS and kind is list and value:
        inner = "\n" + "  " * (level + 1)
        items = (_pretty_composed(item, level + 1, texts) for item in value)
        return "[" + inner + ("," + inner).join(items) + "\n" + "  " * level + "]"
    if kind is str:  # a step's id, type and hashes: written as they are, without a walk
        return _js_string(value)
    if kind is not dict and kind is not list:
        return _prepared(value, _pretty_encoder(), "  ", sort=False)
    entry = texts.get(id(value))
    if entry is None or entry[0] is not value:
        text = _prepared(value, _pretty_encoder(), "  ", sort=False).replace("\n", "\n" + "  " * level)
        entry = texts[id(value)] = (value, text)
    return entry[1]


def json_pieces(value: Any) -> Iterator[str]:
    """``JSON.stringify(value)`` lazily, for showing part of a possibly huge value; never raises.

    Values with no JSON form are shown rather than refused: a number as Python writes it, any other
    object as the string of its ``repr``.
    """
    return _pieces(value, None, 0, sort=False, lenient=True)


def sha256_hex(text: str) -> str:
    """Lowercase hex SHA-256 of the UTF-8 bytes of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hashed_text(
    index: int,
    type_: str,
    timestamp: int | float,
    payload: Any,
    prev_hash: str | None,
    *,
    exact_numbers: bool = False,
) -> str:
    """What the v2 step hash is computed over: canonical ``{index,type,timestamp,payload,prevHash}``."""
    fields = {
        "index": index,
        "type": type_,
        "timestamp": timestamp,
        "payload": payload,
        "prevHash": prev_hash,
    }
    return canonical_json(fields, exact_numbers=exact_numbers)


def step_hash(index: int, type_: str, timestamp: int | float, payload: Any, prev_hash: str | None) -> str:
    """The v2 step hash: SHA-256 of :func:`hashed_text`."""
    return sha256_hex(hashed_text(index, type_, timestamp, payload, prev_hash))


class SharedCanonical:
    """:func:`hashed_text` of ``model_input`` steps that repeat the items of earlier ones, each item's
    canonical text computed once.

    A conversation's every request carries the whole history, so hashing each ``model_input`` from
    scratch costs the square of the run's length. The engine hands the recorder the very message
    objects of the previous request for the part that did not change (see ``CallIds.normalized``),
    so the canonical text of each item of the payload's lists is remembered by identity (the item
    kept alive with it) for the next step, and the step's text is put together from the pieces: the
    same text, key for key in the same order, as :func:`canonical_json` writes for the whole. The
    payloads of a recording are never edited once appended, which is what makes identity a sound key.
    """

    def __init__(self) -> None:
        self._texts: dict[int, tuple[Any, str]] = {}
        #: The encoder's texts of the previous step's items that its output was taken for as it is.
        self._clean: set[str] = set()

    def hashed_text(
        self,
        index: int,
        type_: str,
        timestamp: int | float,
        payload: Any,
        prev_hash: str | None,
        *,
        exact_numbers: bool = False,
    ) -> str:
        """:func:`hashed_text`; ``exact_numbers`` as it takes it (a reader's promise for the step)."""
        if type_ != "model_input" or type(payload) is not dict or not _plain_keys(payload):
            return hashed_text(index, type_, timestamp, payload, prev_hash, exact_numbers=exact_numbers)
        kept: dict[int, tuple[Any, str]] = {}
        fields = [
            ("index", canonical_json(index)),
            ("payload", self._payload(payload, kept, exact_numbers)),
            ("prevHash", canonical_json(prev_hash)),
            ("timestamp", canonical_json(timestamp)),
            ("type", canonical_json(type_)),
        ]
        self._texts = kept
        return "{" + ",".join(f'"{name}":{text}' for name, text in fields) + "}"

    def _payload(self, payload: dict[str, Any], kept: dict[int, tuple[Any, str]], exact: bool) -> str:
        parts = []
        for key in sorted(payload, key=_utf16_key):
            value = payload[key]
            if type(value) is list:
                text = self._list(value, kept, exact)
            else:
                text = canonical_json(value, exact_numbers=exact)
            parts.append(_js_string(key) + ":" + text)
        return "{" + ",".join(parts) + "}"

    def _list(self, items: list[Any], kept: dict[int, tuple[Any, str]], exact: bool) -> str:
        texts = []
        for item in items:
            entry = self._texts.get(id(item))
            if entry is None or entry[0] is not item:
                entry = (item, canonical_json(item, exact_numbers=True) if exact else self._item_text(item))
            kept[id(item)] = entry
            texts.append(entry[1])
        return "[" + ",".join(texts) + "]"

    def _item_text(self, item: Any) -> str:
        """:func:`canonical_json` of ``item``, with the scan of the encoder's text skipped for a text
        scanned clean before: a cassette read from a file repeats each message's value in every later
        step, as equal objects rather than the same one, and the scan's verdict depends on the text
        alone."""
        try:
            text = _fast_canonical(item)
        except (ValueError, TypeError, RecursionError):
            return canonical_json(item)
        if text in self._clean:
            return text
        if not _suspicious(text, _RISKY_COMPACT):
            self._clean.add(text)
            return text
        return _checked(text, item, _RISKY_COMPACT, _fast_canonical, sort=True)


def _plain_keys(value: dict[Any, Any]) -> bool:
    return all(type(key) is str for key in value)
