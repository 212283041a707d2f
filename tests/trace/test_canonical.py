"""Canonical JSON against an independent reference written from the ECMAScript rules.

The reference below is deliberately built another way than ``canonical.py``: digits come from
``repr`` by string surgery (no ``Decimal``), strings are walked as UTF-16 code units by hand, and
objects are assembled the way ``SerializeJSONObject`` describes, gap and all.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_blackbox.trace import canonical
from pytest_blackbox.trace.canonical import (
    SharedCanonical,
    canonical_json,
    hashed_text,
    is_array_index,
    js_keys,
    js_number,
    js_stringify,
    json_pieces,
    pretty_json,
    same_encoded,
)
from pytest_blackbox.trace.errors import CanonicalJSONError
from pytest_blackbox.trace.io import parse_json
from pytest_blackbox.trace.nesting import nested_too_deeply


class RefError(Exception):
    pass


# ----------------------------------------------------------------------------------------------
# The reference


def ref_number(value: int | float) -> str:
    if isinstance(value, int):
        as_double = float(value)  # JavaScript holds every number as a double
        if as_double != value:
            raise RefError("not exact as a double")
        value = as_double
    if value != value or value in (math.inf, -math.inf):
        raise RefError("non-finite")
    if value == 0:
        return "0"
    if value < 0:
        return "-" + ref_number(-value)
    mantissa, _, exponent = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    significant = digits.lstrip("0")
    point -= len(digits) - len(significant)
    digits = significant.rstrip("0")
    k, n = len(digits), point  # value = 0.<digits> x 10**n, with k digits, as in Number::toString
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    sign = "+" if e > 0 else "-"
    head = digits[0] if k == 1 else digits[0] + "." + digits[1:]
    return f"{head}e{sign}{abs(e)}"


def code_units(text: str) -> list[int]:
    units: list[int] = []
    for char in text:
        point = ord(char)
        if point > 0xFFFF:
            point -= 0x10000
            units.extend((0xD800 + (point >> 10), 0xDC00 + (point & 0x3FF)))
        else:
            units.append(point)
    return units


_SHORT = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}


def ref_string(text: str) -> str:
    units = code_units(text)
    out = ['"']
    i = 0
    while i < len(units):
        unit = units[i]
        paired = 0xD800 <= unit <= 0xDBFF and i + 1 < len(units) and 0xDC00 <= units[i + 1] <= 0xDFFF
        if unit in _SHORT:
            out.append(_SHORT[unit])
        elif unit < 0x20:
            out.append("\\u" + format(unit, "04x"))
        elif paired:
            out.append(chr(0x10000 + ((unit - 0xD800) << 10) + (units[i + 1] - 0xDC00)))
            i += 1
        elif 0xD800 <= unit <= 0xDFFF:
            out.append("\\u" + format(unit, "04x"))
        else:
            out.append(chr(unit))
        i += 1
    out.append('"')
    return "".join(out)


def ref_keys(value: dict[str, Any]) -> list[str]:
    """``OrdinaryOwnPropertyKeys``: indexes (canonical numbers below 2**32 - 1) ascending, then the rest."""

    def is_index(key: str) -> bool:
        return re.fullmatch(r"0|[1-9][0-9]*", key) is not None and int(key) < 2**32 - 1

    return sorted((k for k in value if is_index(k)), key=int) + [k for k in value if not is_index(k)]


def ref_json(value: Any, *, gap: str = "", indent: str = "", sort: bool = True) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return ref_string(value)
    if isinstance(value, (int, float)):
        return ref_number(value)
    inner = indent + gap
    if isinstance(value, dict):
        keys = sorted(value, key=code_units) if sort else ref_keys(value)
        colon = ": " if gap else ":"
        members = [ref_string(k) + colon + ref_json(value[k], gap=gap, indent=inner, sort=sort) for k in keys]
        return _wrap("{", "}", members, gap, indent, inner)
    members = [ref_json(v, gap=gap, indent=inner, sort=sort) for v in value]
    return _wrap("[", "]", members, gap, indent, inner)


def _wrap(open_: str, close: str, members: list[str], gap: str, indent: str, inner: str) -> str:
    if not members:
        return open_ + close
    if not gap:
        return open_ + ",".join(members) + close
    return open_ + "\n" + inner + (",\n" + inner).join(members) + "\n" + indent + close


# ----------------------------------------------------------------------------------------------
# Strategies

boundary_floats = st.sampled_from(
    [
        1e21,
        999999999999999868928.0,
        1e20,
        1e-6,
        1e-7,
        9.999999999999999e-7,
        5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        -0.0,
        0.1 + 0.2,
        2.0**53,
        2.0**53 + 2,
        123e-20,
    ]
)
numbers = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    boundary_floats,
    st.integers(-(2**53), 2**53),
)
any_text = st.text(st.characters(exclude_categories=()), max_size=12)
tricky_text = st.text(
    st.sampled_from(["a", "\x00", "\x1f", '"', "\\", "\u2028", "\ud800", "\udfff", "\ud83d", "\ude00", "é"]),
    max_size=8,
)
key_text = st.one_of(
    st.text(
        st.one_of(
            st.characters(min_codepoint=0x20, max_codepoint=0x7E),
            st.characters(min_codepoint=0xE000, max_codepoint=0xFFFF),
            st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
        ),
        max_size=4,
    ),
    # JavaScript enumerates array-index keys first; these are indexes and near misses.
    st.integers(0, 2**33).map(str),
    st.sampled_from(["0", "00", "01", "-1", "1.5", "1e3", "4294967294", "4294967295", "\u0661", " 1"]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, any_text, tricky_text)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(key_text, children, max_size=5)
    ),
    max_leaves=25,
)

# ----------------------------------------------------------------------------------------------
# Properties


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_canonical_json_matches_the_reference(value: Any) -> None:
    assert canonical_json(value) == ref_json(value)


#: The indenting encoders ``pretty_json`` may write a ready value with: orjson's where it is
#: installed (it is in the test environment), else the standard library's; both must give the same text.
PRETTY_ENCODERS = {"standard library": canonical._stdlib_pretty, "preferred": canonical._pretty_encoder()}


def writing_with(encoder: Any) -> Any:
    """``pretty_json`` indenting ready values with ``encoder``."""
    return mock.patch.object(canonical, "_pretty_encoder", lambda: encoder)


@pytest.mark.parametrize("encoder", PRETTY_ENCODERS.values(), ids=list(PRETTY_ENCODERS))
@settings(max_examples=150, deadline=None)
@given(value=json_values)
def test_pretty_json_matches_the_reference(encoder: Any, value: Any) -> None:
    with writing_with(encoder):
        assert pretty_json(value) == ref_json(value, gap="  ", sort=False)
        assert canonical.pretty_json_shared({"a": [value, value]}) == ref_json(
            {"a": [value, value]}, gap="  ", sort=False
        )


def test_pretty_json_indents_with_orjson_where_it_is_installed() -> None:
    """The ``fast`` extra's encoder is the one used, and without it the standard library's."""
    orjson = pytest.importorskip("orjson")
    preferred = PRETTY_ENCODERS["preferred"]
    assert preferred is not canonical._stdlib_pretty
    assert preferred([1, {"a": 0.5}]) == orjson.dumps([1, {"a": 0.5}], option=orjson.OPT_INDENT_2).decode()
    with mock.patch.dict(sys.modules, {"orjson": None}):  # as if it were not installed
        assert canonical._pretty_encoder.__wrapped__() is canonical._stdlib_pretty


def test_pretty_json_writes_what_orjson_refuses_on_the_exact_path() -> None:
    """orjson stops at 255 levels of nesting; such a value is written exactly all the same."""
    value: Any = 0.5
    for _ in range(300):
        value = [value]
    with writing_with(PRETTY_ENCODERS["preferred"]):
        assert pretty_json(value) == json.dumps(value, indent=2)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_js_stringify_matches_the_reference(value: Any) -> None:
    assert js_stringify(value) == ref_json(value, sort=False)
    assert "".join(json_pieces(value)) == ref_json(value, sort=False)


#: Tool results are full of integral floats (``21.0``), which the C encoder spells unlike JavaScript.
integral_floats = st.one_of(st.integers(-(2**53), 2**53).map(float), st.sampled_from([0.0, -0.0, 2.0**53]))
float_heavy_values = st.recursive(
    st.one_of(integral_floats, numbers, st.text(max_size=6), st.none()),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(key_text, children, max_size=5)
    ),
    max_leaves=25,
)


@pytest.mark.parametrize("encoder", PRETTY_ENCODERS.values(), ids=list(PRETTY_ENCODERS))
@settings(max_examples=150, deadline=None)
@given(value=float_heavy_values)
def test_integral_floats_are_written_as_javascript_does_by_every_writer(encoder: Any, value: Any) -> None:
    assert canonical_json(value) == ref_json(value)
    with writing_with(encoder):
        assert pretty_json(value) == ref_json(value, gap="  ", sort=False)
    assert js_stringify(value) == ref_json(value, sort=False)


def test_a_value_with_integral_floats_keeps_its_own_floats() -> None:
    """The writers encode a copy with integers in their place; the value handed in is not changed."""
    value: dict[str, Any] = {"n": [1.0, {"t": -0.0}], "x": 0.5}
    assert canonical_json(value) == '{"n":[1,{"t":0}],"x":0.5}'
    assert pretty_json(value) == '{\n  "n": [\n    1,\n    {\n      "t": 0\n    }\n  ],\n  "x": 0.5\n}'
    assert value == {"n": [1.0, {"t": -0.0}], "x": 0.5}
    assert type(value["n"][0]) is float


@settings(max_examples=250, deadline=None)
@given(numbers)
def test_js_number_matches_the_reference(value: float) -> None:
    assert js_number(value) == ref_number(value)


bmp_keys = st.text(st.characters(max_codepoint=0xFFFF, exclude_categories=["Cs"]), max_size=4)
safe_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=8)),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(bmp_keys, children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(safe_values)
def test_reference_agrees_with_python_json_where_they_must(value: Any) -> None:
    """Sanity check of the reference itself: no floats, surrogates or astral keys, so Python is right."""
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert ref_json(value) == expected


# ----------------------------------------------------------------------------------------------
# Exact tables


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (100.0, "100"),
        (-0.0, "0"),
        (0, "0"),
        (1e-7, "1e-7"),
        (-1e-7, "-1e-7"),
        (1e-6, "0.000001"),
        (1e16, "10000000000000000"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (0.00001, "0.00001"),
        (1.5e-7, "1.5e-7"),
        (123e-20, "1.23e-18"),
        (0.1 + 0.2, "0.30000000000000004"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (2**53, "9007199254740992"),
        (2**53 + 2, "9007199254740994"),
        (2.0**64, "18446744073709552000"),
        (2**64, "18446744073709552000"),
        (27695159453467512.0, "27695159453467510"),
        (-(2**53) - 2, "-9007199254740994"),
        (0.2, "0.2"),
    ],
)
def test_numbers_are_written_as_javascript_does(value: float, expected: str) -> None:
    assert js_number(value) == expected
    assert canonical_json([value]) == f"[{expected}]"
    assert pretty_json({"n": value}) == '{\n  "n": ' + expected + "\n}"


@pytest.mark.parametrize("value", [2**53 + 1, -(2**53) - 1, 10**400])
def test_integers_a_double_cannot_hold_are_refused(value: int) -> None:
    with pytest.raises(CanonicalJSONError, match="cannot be stored exactly"):
        canonical_json({"n": value})


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused(value: float) -> None:
    with pytest.raises(CanonicalJSONError, match=r"^Cannot canonicalize a non-finite number"):
        canonical_json({"n": [value]})
    with pytest.raises(CanonicalJSONError, match=r"^Cannot canonicalize a non-finite number"):
        pretty_json(value)


def test_strings_escape_like_json_stringify() -> None:
    assert canonical_json("\ud800") == '"\\ud800"'
    assert canonical_json("a\udfffb") == '"a\\udfffb"'
    assert canonical_json("\ud83d\ude00") == '"\U0001f600"'  # a surrogate pair is one character to JavaScript
    assert canonical_json("\U0001f600") == '"\U0001f600"'
    assert canonical_json('\x00\x1f\b\t\n\f\r"\\') == '"\\u0000\\u001f\\b\\t\\n\\f\\r\\"\\\\"'
    assert canonical_json("\u2028°—") == '"\u2028°—"'


def test_keys_sort_by_utf16_code_units() -> None:
    value = {"\uffff": 1, "\U0001f600": 2, "b": 3, "a": 4, "\ue000": 5}
    # U+1F600 is the pair D83D DE00, which sorts before U+E000; by code point it would sort last.
    assert canonical_json(value) == '{"a":4,"b":3,"\U0001f600":2,"\ue000":5,"\uffff":1}'
    assert (
        pretty_json(value) == '{\n  "\uffff": 1,\n  "\U0001f600": 2,\n  "b": 3,\n  "a": 4,\n  "\ue000": 5\n}'
    )


def test_pretty_json_layout() -> None:
    value: dict[str, Any] = {"a": [1, {"b": 1.0}], "e": {}, "f": [], "g": None}
    assert pretty_json(value) == (
        '{\n  "a": [\n    1,\n    {\n      "b": 1\n    }\n  ],\n  "e": {},\n  "f": [],\n  "g": null\n}'
    )


@pytest.mark.parametrize("spelling", ["1", "1.0", "1E0", "1e0", "10e-1", "100E-2", "1.000"])
def test_numbers_are_hashed_by_value_however_spelled(spelling: str) -> None:
    assert canonical_json(parse_json('{"a":' + spelling + "}")) == '{"a":1}'


def test_negative_zero_is_zero() -> None:
    parsed = parse_json('{"a":-0.0,"b":-0,"c":-0E5}')
    assert canonical_json(parsed) == '{"a":0,"b":0,"c":0}'


# ----------------------------------------------------------------------------------------------
# Key order: JavaScript enumerates array-index keys first, ascending, in every object


@pytest.mark.parametrize(
    ("key", "is_index"),
    [
        ("0", True),
        ("2", True),
        ("10", True),
        ("2024", True),
        ("4294967294", True),  # 2**32 - 2, the largest index
        ("4294967295", False),
        ("99999999999", False),
        ("01", False),
        ("00", False),
        ("-1", False),
        ("1.5", False),
        ("1e3", False),
        (" 1", False),
        ("", False),
        ("\u0661", False),  # a digit to str.isdigit, not to JavaScript
        ("team", False),
    ],
)
def test_array_index_keys_are_canonical_numbers_below_two_to_the_32(key: str, is_index: bool) -> None:
    assert is_array_index(key) is is_index


def test_every_writer_puts_array_index_keys_first_as_javascript_does() -> None:
    value = {"team": "A", "2": 0, "10": 1, "01": 2, "nested": [{"b": 1, "4294967294": 2, "0": 3}]}
    assert js_keys(value) == ["2", "10", "team", "01", "nested"]
    compact = '{"2":0,"10":1,"team":"A","01":2,"nested":[{"0":3,"4294967294":2,"b":1}]}'
    assert js_stringify(value) == compact
    assert "".join(json_pieces(value)) == compact
    assert pretty_json({"team": "A", "2": 0, "10": 1}) == '{\n  "2": 0,\n  "10": 1,\n  "team": "A"\n}'
    # The hash form sorts every key by UTF-16 code units instead: "10" < "2" < "team".
    assert canonical_json({"team": "A", "2": 0, "10": 1}) == '{"10":1,"2":0,"team":"A"}'


def test_index_keys_inside_string_values_are_left_alone() -> None:
    value = {"text": '{"b":1,"2":0}', "a": 1}
    assert js_stringify(value) == '{"text":"{\\"b\\":1,\\"2\\":0}","a":1}'


@pytest.mark.parametrize("value", [math.nan, math.inf, 2**53 + 1])
def test_one_rule_for_numbers_without_a_javascript_text(value: float) -> None:
    """Every writer refuses them; only a display shows them, as Python writes them."""
    for writer in (canonical_json, js_stringify, pretty_json):
        with pytest.raises(CanonicalJSONError):
            writer({"n": value})
    assert "".join(json_pieces({"n": value, "s": {1, 2}})) == f'{{"n":{value},"s":"{{1, 2}}"}}'


@pytest.mark.parametrize("kind", ["list", "dict", "tuple", "mixed"])
def test_nested_too_deeply_counts_containers_from_the_top(kind: str) -> None:
    """``limit`` levels of objects and arrays pass, one more does not, wherever the deep branch is."""

    def nested(levels: int) -> Any:
        value: Any = "leaf"
        for level in range(levels):
            wrap = kind if kind != "mixed" else ("list", "dict", "tuple")[level % 3]
            wrapped = {"dict": {"a": 1, "deep": value}, "list": [1, "x", value], "tuple": (value,)}
            value = wrapped[wrap]
        return value

    limit = 5
    assert not nested_too_deeply(nested(limit), limit)
    assert nested_too_deeply(nested(limit + 1), limit)
    assert not nested_too_deeply([[], {}, nested(limit - 1)], limit)
    assert nested_too_deeply([0, {"b": [nested(limit - 1)]}], limit)
    assert not nested_too_deeply("text", 0)
    assert nested_too_deeply([], 0)


def test_nested_too_deeply_walks_a_shared_value_again_only_where_it_lies_deeper() -> None:
    """With ``walked``, a container already walked is skipped where it lies no deeper, and walked
    again where it lies deeper (the steps of a recording share their messages)."""
    shared: Any = "leaf"
    for _ in range(3):
        shared = [shared]  # three levels
    walked: dict[int, int] = {}
    limit = 5
    assert not nested_too_deeply({"a": shared}, limit, walked)  # four levels
    assert walked[id(shared)] == 1
    assert not nested_too_deeply({"b": shared}, limit, walked)  # found again as deep: not walked
    assert nested_too_deeply([[{"c": shared}]], limit, walked)  # six levels: walked again, too deep
    assert nested_too_deeply([[{"c": shared}]], limit, {}) and not nested_too_deeply({"a": shared}, limit)


def test_same_encoded_is_true_only_for_values_canonical_json_writes_alike() -> None:
    """Equal texts of the C encoder prove equal canonical texts; a ``False`` proves nothing."""
    assert same_encoded({"b": [1, "x"], "a": 0.5}, {"a": 0.5, "b": [1, "x"]})
    assert not same_encoded({"a": True}, {"a": 1})  # Python's == would say equal
    assert not same_encoded([1], [1.0])  # canonical_json writes both "[1]": the caller asks it
    assert canonical_json([1]) == canonical_json([1.0])
    assert not same_encoded([float("nan")], [float("nan")])


@pytest.mark.parametrize(
    "message",
    [
        {"role": "user", "content": "plain"},
        {"role": "tool", "content": {"tempC": 21.0, "big": 1e21}},  # spelled unlike JavaScript
        {"role": "user", "content": "\ud83d\ude00 astral"},
    ],
)
def test_shared_canonical_hashes_equal_copies_as_hashed_text_does(message: dict[str, Any]) -> None:
    """A cassette read from a file repeats each message as an equal copy, not the same object: the
    text of a copy met again is the one :func:`hashed_text` writes, whatever its scan found."""
    shared = SharedCanonical()
    for index in range(3):
        history = [json.loads(json.dumps(message)) for _ in range(index + 1)]
        payload = {"messages": history, "model": "m"}
        assert shared.hashed_text(index, "model_input", 5, payload, None) == hashed_text(
            index, "model_input", 5, payload, None
        )


def test_shared_canonical_with_exact_numbers_writes_what_hashed_text_writes_for_shared_messages() -> None:
    """A reader's promise that every number is exact, with the messages repeated as one object (a
    replay's check of its cassette): the pieces joined are the whole step's text."""
    shared = SharedCanonical()
    history: list[Any] = []
    for index in range(4):
        history = [
            *history,
            {"role": "user", "content": [{"type": "text", "text": f"t{index} \ud83d\ude00"}]},
        ]
        payload = {"tools": [{"name": "x", "description": "d"}], "messages": list(history), "model": "m"}
        expected = hashed_text(index, "model_input", 7, payload, None, exact_numbers=True)
        assert shared.hashed_text(index, "model_input", 7, payload, None, exact_numbers=True) == expected
        assert expected == hashed_text(index, "model_input", 7, payload, None)
