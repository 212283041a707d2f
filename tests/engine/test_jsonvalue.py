"""The JSON conversion rule for tool values: what converts, to what, and what is refused."""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import decimal
import enum
import threading
import uuid
from pathlib import PurePosixPath
from typing import Any

import pydantic
import pytest

from pytest_blackbox.engine.jsonvalue import to_json_value
from pytest_blackbox.errors import BlackboxUnsupportedError
from pytest_blackbox.trace.nesting import MAX_NESTING, TOO_DEEP


class Level(enum.IntEnum):
    HIGH = 3


class Color(str, enum.Enum):
    RED = "red"


class Unit(enum.Enum):
    CELSIUS = "C"


@dataclasses.dataclass
class Reading:
    temp: float
    at: dt.date


class Forecast(pydantic.BaseModel):
    city: str
    temps: tuple[float, ...]


@dataclasses.dataclass
class Context:
    """Like pydantic-ai's RunContext: a dataclass holding something that cannot be deep-copied."""

    deps: Reading
    lock: Any = dataclasses.field(default_factory=threading.RLock)


Point = collections.namedtuple("Point", "x y")

CONVERTED: list[tuple[Any, Any]] = [
    ({"t": 23.0, "xs": (1, 2)}, {"t": 23, "xs": [1, 2]}),
    (-0.0, 0),
    (2.5, 2.5),
    (2**53, 2**53),
    (2**60, float(2**60)),
    (Level.HIGH, 3),
    (Color.RED, "red"),
    (Unit.CELSIUS, "C"),
    (Reading(21.0, dt.date(2026, 1, 2)), {"temp": 21, "at": "2026-01-02"}),
    (Forecast(city="Rome", temps=(24.5, 25.0)), {"city": "Rome", "temps": [24.5, 25]}),
    (dt.datetime(2026, 1, 2, 3, 4, 5), "2026-01-02T03:04:05"),
    (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
    (PurePosixPath("/tmp/x"), "/tmp/x"),
    (Point(1, 2.0), [1, 2]),
    (collections.OrderedDict(b=1, a=2), {"b": 1, "a": 2}),
]


@pytest.mark.parametrize(("value", "expected"), CONVERTED)
def test_values_convert_to_their_json_form(value: Any, expected: Any) -> None:
    converted = to_json_value(value)
    assert converted == expected
    assert type(converted) is type(expected)
    if isinstance(expected, dict):
        assert list(converted) == list(expected)
        assert all(type(converted[k]) is type(expected[k]) for k in expected)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({1: "a"}, "an int in the keys of x is not supported: JSON object keys are strings"),
        (float("inf"), "a float in x is not supported: JSON has no NaN or infinity"),
        (2**53 + 1, "an int in x is not supported: a JSON number cannot hold this integer exactly"),
        (decimal.Decimal("1.5"), "a Decimal in x is not supported: it would not come back"),
        (1j, "a complex in x is not supported: it would not come back"),
        (frozenset(), "a frozenset in x is not supported: it would not come back"),
    ],
)
def test_values_json_cannot_keep_are_refused(value: Any, message: str) -> None:
    with pytest.raises(BlackboxUnsupportedError) as caught:
        to_json_value(value, "x")
    assert str(caught.value).startswith(message)
    assert str(caught.value).endswith(
        "; convert it to JSON data (dict, list, str, int, float, bool, None) first"
    )


def test_a_dataclass_field_json_cannot_keep_is_refused_by_its_path_without_copying() -> None:
    """``dataclasses.asdict`` would deep-copy the lock first and fail with a raw ``TypeError``."""
    value = Context(Reading(21.0, dt.date(2026, 1, 2)))
    with pytest.raises(BlackboxUnsupportedError) as caught:
        to_json_value([value], "the arguments of tool t")
    assert str(caught.value) == (
        "a RLock in Context.lock in the arguments of tool t is not supported: "
        "it would not come back from the cassette as the same value; "
        "convert it to JSON data (dict, list, str, int, float, bool, None) first"
    )


def test_nested_dataclasses_convert_field_by_field_in_field_order() -> None:
    @dataclasses.dataclass
    class Trip:
        to: str
        readings: list[Reading]
        unit: Unit

    trip = Trip("Rome", [Reading(24.5, dt.date(2026, 1, 2))], Unit.CELSIUS)
    converted = to_json_value(trip)
    assert converted == {"to": "Rome", "readings": [{"temp": 24.5, "at": "2026-01-02"}], "unit": "C"}
    assert list(converted) == ["to", "readings", "unit"]


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"next": value}
    return value


@pytest.mark.parametrize("depth", [198, 900, 5000])
def test_a_value_too_deep_for_the_cassette_is_refused_while_recording(depth: int) -> None:
    """Its step would break the nesting limit verify, loading and replay share (MAX_NESTING)."""
    with pytest.raises(BlackboxUnsupportedError) as caught:
        to_json_value(_nested(depth), "the result of tool deep")
    assert str(caught.value) == f"the result of tool deep is {TOO_DEEP}"


def test_a_value_just_within_the_limit_converts() -> None:
    assert to_json_value(_nested(MAX_NESTING - 3)) == _nested(MAX_NESTING - 3)


def test_array_index_keys_come_first_as_the_cassette_stores_them() -> None:
    value = {"city": "Paris", "2024": "hot", "10": 1, "2": 2, "02": 3, "nested": {"b": 1, "7": 2}}
    converted = to_json_value(value)
    assert list(converted) == ["2", "10", "2024", "city", "02", "nested"]
    assert list(converted["nested"]) == ["7", "b"]
    assert list(to_json_value({"b": 1, "a": 2})) == ["b", "a"]
