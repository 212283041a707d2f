"""Canonical JSON and the step hash, byte for byte as the original Blackbox's JavaScript computes them.

Hashing is on every hot path (verify, replay, recording), so the C ``json`` encoder is used whenever
its output is provably identical to JavaScript's: it differs only on floats, long integers,
surrogates and keys outside the BMP, and its output is scanned for any token that could be one of
those (a false alarm costs the exact slow path, never a wrong byte). See
docs/cassette-format.md#the-hash-chain.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from .errors import CanonicalJSONError

__all__ = [
    "canonical_json",
    "js_number",
    "pretty_json",
    "sha256_hex",
    "step_hash",
]

#: 2**53: integers at or above it are exact in a double only by luck.
_SAFE = 9007199254740992

# A number token in encoder output that the C encoder may spell differently from JavaScript.
# ``repr`` and ``Number::toString`` pick the same shortest digits and agree on plain decimals; they
# differ only on integral floats (``1.0`` vs ``1``), on exponent forms (Python switches below 1e-4,
# JavaScript below 1e-6) and on integers of 16+ digits (beyond 2**53). Tokens follow "[", ":" or ","
# (then whitespace, in indented output) or start the text; a string that merely looks like one
# only costs the slow path.
_NUMBER_RISK = r"-?(?:\d+\.0(?!\d)|\d+(?:\.\d+)?[eE]|\d{16,})"
# Compact output has no whitespace around tokens, so JSON text embedded in strings by Python's
# default ``json.dumps`` (which writes ": ") does not look like a number token there.
_RISKY_COMPACT = re.compile(r"(?:^|[:,\[])" + _NUMBER_RISK)
_RISKY_PRETTY = re.compile(r"(?:^|[:,\[])\s*" + _NUMBER_RISK)
# Surrogates need escaping; astral characters sort differently in UTF-16 when they are in keys.
_RISKY_CHAR = re.compile("[\ud800-\udfff\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")

_fast_compact = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
).encode
_fast_pretty = json.JSONEncoder(ensure_ascii=False, indent=2, allow_nan=False).encode
_encode_str = json.JSONEncoder(ensure_ascii=False).encode


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


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _slow(value: Any, indent: str | None, level: int, sort: bool) -> str:
    """Reference encoder: every rule spelled out; used when the fast path cannot be trusted."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _js_string(value)
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise CanonicalJSONError(f"object keys must be strings, not {type(key).__name__}")
        keys = sorted(value, key=_utf16_key) if sort else list(value)
        parts = [(_js_string(k), _slow(value[k], indent, level + 1, sort)) for k in keys]
        if not parts:
            return "{}"
        if indent is None:
            return "{" + ",".join(f"{k}:{v}" for k, v in parts) + "}"
        inner = "\n" + indent * (level + 1)
        return "{" + ",".join(f"{inner}{k}: {v}" for k, v in parts) + "\n" + indent * level + "}"
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        items = [_slow(v, indent, level + 1, sort) for v in value]
        if not items:
            return "[]"
        if indent is None:
            return "[" + ",".join(items) + "]"
        inner = "\n" + indent * (level + 1)
        return "[" + ",".join(inner + item for item in items) + "\n" + indent * level + "]"
    raise CanonicalJSONError(f"a {type(value).__name__} is not a JSON value")


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


def _trusted(text: str, value: Any, numbers: re.Pattern[str]) -> bool:
    suspicious = numbers.search(text) or (not text.isascii() and _RISKY_CHAR.search(text))
    return not suspicious or not _needs_slow(value)


def canonical_json(value: Any) -> str:
    """Compact JSON with keys sorted by UTF-16 code units, as the original hashes it."""
    try:
        text = _fast_compact(value)
    except (ValueError, TypeError, RecursionError):
        text = None
    if text is not None and _trusted(text, value, _RISKY_COMPACT):
        return text
    return _slow(value, None, 0, sort=True)


def pretty_json(value: Any) -> str:
    """``JSON.stringify(value, null, 2)``: insertion key order, two spaces, raw non-ASCII."""
    try:
        text = _fast_pretty(value)
    except (ValueError, TypeError, RecursionError):
        text = None
    if text is not None and _trusted(text, value, _RISKY_PRETTY):
        return text
    return _slow(value, "  ", 0, sort=False)


def sha256_hex(text: str) -> str:
    """Lowercase hex SHA-256 of the UTF-8 bytes of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def step_hash(index: int, type_: str, timestamp: int | float, payload: Any, prev_hash: str | None) -> str:
    """The v2 step hash: SHA-256 of canonical ``{index,type,timestamp,payload,prevHash}``."""
    return sha256_hex(
        canonical_json(
            {"index": index, "type": type_, "timestamp": timestamp, "payload": payload, "prevHash": prev_hash}
        )
    )
