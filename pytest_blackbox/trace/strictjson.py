"""The strict JSON both cassette readers share (``io``'s whole-file parse and ``stream``'s step by
step read): the ``json`` hooks that refuse what two readers could understand differently, and the
numbers as JavaScript reads them. See docs/cassette-format.md#loading-a-cassette.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

from .canonical import js_number

__all__ = ["SAFE_INTEGER", "Refused", "number_float", "number_int", "refuse_constant", "unique_object"]

#: 2**53: beyond it a double skips integers, so JavaScript would silently round them.
SAFE_INTEGER = 9007199254740992


class Refused(Exception):
    """Raised from inside ``json.loads`` hooks; turned into a located ``CassetteReadError``."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise Refused("duplicate")
    return obj


def refuse_constant(token: str) -> NoReturn:
    raise Refused("constant")


def number_float(token: str) -> int | float:
    value = float(token)
    if math.isinf(value):
        raise Refused("overflow")
    if value.is_integer() and -SAFE_INTEGER <= value <= SAFE_INTEGER:
        return int(value)  # 1.0, 1E2 and -0.0 are the integers JavaScript reads
    return value


def number_int(token: str) -> int | float:
    """Integers JavaScript reads exactly; above 2**53, only those a double holds or JavaScript wrote.

    ``JSON.stringify`` writes a large double by its shortest digits (2**64 as
    ``18446744073709552000``), so that spelling is read back as the same double. Any other
    integer a double cannot hold would be rounded silently by one reader and not the other.
    """
    digits = len(token) - token.startswith("-")
    if digits < 16:
        return int(token)
    if digits > 309:  # beyond the largest double, and beyond int()'s default digit limit
        raise Refused("unsafe")
    value = int(token)
    if -SAFE_INTEGER <= value <= SAFE_INTEGER:
        return value
    try:
        double = float(value)
    except OverflowError:
        raise Refused("unsafe") from None
    if double == value:
        return value
    if js_number(double) == token:
        return double
    raise Refused("unsafe")
