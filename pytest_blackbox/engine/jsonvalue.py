"""Python values → the JSON a cassette stores, so record and replay hand the agent the same value.

A wrapped tool's result is given back to the agent in replay from the cassette. If recording handed
the agent the raw Python value instead, a value JSON cannot keep (``23.0`` becomes ``23``, a tuple a
list) would behave differently in the two modes and cause a false divergence later. So recording
returns the converted value too, and values JSON cannot hold at all are refused.

The conversion is this project's equivalent of ``JSON.stringify``:

- ``dict`` (string keys), ``list``, ``tuple``, ``str``, ``int``, ``float``, ``bool``, ``None`` map to
  JSON; integral floats become integers (JavaScript has one number type) and integers beyond 2**53
  become the double a cassette stores; an object's array-index keys (``"2024"``) move first, in
  ascending order, as JavaScript orders them; subclasses of these types (``IntEnum``, ``OrderedDict``,
  named tuples) become the plain type;
- pydantic models (``model_dump(mode="json")``), dataclasses, enums (their value), ``datetime`` /
  ``date`` / ``time`` (ISO 8601), ``UUID`` and paths (their string) convert as their JSON form;
- values nested deeper than the cassette's nesting limit are refused (``trace.nesting.MAX_NESTING``);
- sets, bytes, ``Decimal``, complex numbers, NaN and infinities, non-string keys and any other
  object are refused with ``BlackboxUnsupportedError``: they would come back as something else.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import math
import uuid
from pathlib import PurePath
from typing import Any

from ..errors import BlackboxUnsupportedError
from ..trace.canonical import js_keys, js_number
from ..trace.errors import CanonicalJSONError
from ..trace.nesting import MAX_NESTING, TOO_DEEP

__all__ = ["to_json_value"]


def _describe(value: Any) -> str:
    name = type(value).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return f"{article} {name}"


def _refuse(value: Any, where: str, why: str) -> BlackboxUnsupportedError:
    return BlackboxUnsupportedError(
        f"{_describe(value)} in {where} is not supported: {why}; convert it to JSON data "
        "(dict, list, str, int, float, bool, None) first"
    )


#: Integers up to 2**53 read back as ``int``; larger ones only exist as doubles in a cassette.
_SAFE = 2**53


def _number(value: float, where: str) -> int | float:
    if not math.isfinite(value):
        raise _refuse(value, where, "JSON has no NaN or infinity")
    if value.is_integer() and abs(value) <= _SAFE:
        return int(value)
    return value


def _int(value: int, where: str) -> int | float:
    try:
        js_number(value)
    except CanonicalJSONError:
        raise _refuse(value, where, "a JSON number cannot hold this integer exactly") from None
    # an IntEnum or other int subclass comes back from the cassette as a plain int
    return int(value) if abs(value) <= _SAFE else float(value)


def _dataclass(value: Any, where: str, level: int) -> dict[str, Any]:
    """Field by field, not ``dataclasses.asdict``: that deep-copies every field first, so a field that
    cannot be copied (a lock, a client) would fail with a ``TypeError`` instead of a refusal. A refused
    field is named by its path (``RunContext.model in …``), since its own type may say little."""
    if level >= _VALUE_NESTING:
        raise _TooDeep
    name = type(value).__name__
    return {
        field.name: _convert(getattr(value, field.name), f"{name}.{field.name} in {where}", level + 1)
        for field in dataclasses.fields(value)
    }


def _convert_known(value: Any, where: str, level: int) -> Any:
    """Objects that have one obvious JSON form (at nesting ``level``, as the JSON form they become)."""
    if hasattr(value, "model_dump") and callable(value.model_dump):
        return _convert(value.model_dump(mode="json"), where, level)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _dataclass(value, where, level)
    if isinstance(value, enum.Enum):
        return _convert(value.value, where, level)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, (uuid.UUID, PurePath)):
        return str(value)
    raise _refuse(value, where, "it would not come back from the cassette as the same value")


#: A step holds a tool value three levels down (step → payload → ``result`` / ``toolInput``).
_VALUE_NESTING = MAX_NESTING - 3


class _TooDeep(Exception):
    """A container nested deeper than a tool value may be (``_VALUE_NESTING``)."""


def to_json_value(value: Any, where: str = "a tool value") -> Any:
    """Convert ``value`` to plain JSON data in the cassette's key order, or refuse it; a value nested so
    deep that its step would break the cassette's nesting limit is refused while recording, since
    verify, loading and replay would refuse the cassette.

    The nesting is counted while converting, as ``nested_too_deeply`` counts it, so the value is walked
    once; a value that contains itself is refused the same way when it reaches the limit.
    """
    try:
        return _convert(value, where, 0)
    except (_TooDeep, RecursionError):
        raise BlackboxUnsupportedError(f"{where} is {TOO_DEEP}") from None


def _convert(value: Any, where: str, level: int) -> Any:
    """Convert ``value``, a container at nesting ``level`` (0: the whole value), to plain JSON data, or
    refuse it.

    Object keys keep their insertion order, except that array-index keys (``"2024"``) come first in
    ascending order, as JavaScript orders them and a cassette stores them: the value recording hands
    the agent is the one a replay will hand it, key order included.
    """
    kind = type(value)  # JSON's own types first: a tool's input and result are mostly made of them
    if kind is str or (kind is int and -_SAFE <= value <= _SAFE):
        return value
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)  # a str subclass (a str Enum) comes back as a plain str
    if isinstance(value, int):
        return _int(value, where)
    if isinstance(value, float):
        return _number(float(value), where)
    if isinstance(value, (dict, list, tuple)) and level >= _VALUE_NESTING:
        raise _TooDeep
    if isinstance(value, dict):
        return _object(value, where, level + 1)
    if isinstance(value, (list, tuple)):
        return [_convert(item, where, level + 1) for item in value]
    return _convert_known(value, where, level)


def _object(value: dict[Any, Any], where: str, below: int) -> dict[str, Any]:
    """A dict's JSON object (its items at nesting level ``below``), array-index keys first."""
    out: dict[str, Any] = {}
    indexed = False  # whether a key can be an array index
    for key, item in value.items():
        if not isinstance(key, str):
            raise _refuse(key, f"the keys of {where}", "JSON object keys are strings")
        indexed = indexed or key[:1].isdigit()
        out[key] = _convert(item, where, below)
    if not indexed:
        return out
    keys = js_keys(out)
    return out if keys == list(out) else {key: out[key] for key in keys}
