"""The shape of a response's fields, level by level, and the walk that finds the fields it does not know."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DROPPED", "WHOLE", "Fields", "Kinds", "Shape", "fields", "unknown_fields"]


@dataclass(frozen=True)
class Fields:
    """One level of a response: an object, or each object of a list.

    ``given``: recorded and given back by a replay, or read by the provider module, which refuses a
    value it cannot give back with its own advice. ``dropped``: left out on purpose (documented).
    ``refused``: known and not recorded, so refused when present (named here for the SDK pin test).
    ``nested``: the given fields whose value is checked level by level in turn; any other given field
    is kept whole. ``whole``: the object is given back (or dropped) as it came, every field of it.
    """

    given: frozenset[str] = frozenset()
    dropped: frozenset[str] = frozenset()
    refused: frozenset[str] = frozenset()
    nested: Mapping[str, Shape] = field(default_factory=dict)
    whole: bool = False
    #: Every field name ``given`` or ``dropped``: an object holding only those, none of them
    #: ``nested``, has no unknown field (checked at C speed, as a request's top level mostly is).
    known: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "known", self.given | self.dropped)


@dataclass(frozen=True)
class Kinds:
    """A level whose fields depend on the object's ``type``. A type not in ``kinds`` is the provider
    module's to refuse (``refused`` names those the SDKs know, for the pin test)."""

    kinds: Mapping[str, Fields]
    refused: frozenset[str] = frozenset()


Shape = Fields | Kinds

#: An object given back as it came (a provider-run tool's item, a compaction block).
WHOLE = Fields(whole=True)
#: An object dropped on purpose as a whole (thinking blocks, reasoning items).
DROPPED = Fields(whole=True)


def fields(given: str = "", dropped: str = "", refused: str = "", **nested: Shape) -> Fields:
    """A :class:`Fields` from space-separated names; ``nested`` shapes are given fields too."""
    return Fields(
        frozenset(given.split()) | frozenset(nested),
        frozenset(dropped.split()),
        frozenset(refused.split()),
        nested,
    )


def unknown_fields(value: Any, shape: Shape, at: str) -> Iterator[str]:
    """The path of every field of ``value`` with a value that ``shape`` neither gives back nor drops."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from unknown_fields(item, shape, f"{at}[{index}]")
        return
    if not isinstance(value, dict):
        return
    level = shape.kinds.get(str(value.get("type"))) if isinstance(shape, Kinds) else shape
    if (
        level is None
        or level.whole
        or (level.known.issuperset(value) and level.nested.keys().isdisjoint(value))
    ):
        return
    for key, item in value.items():
        if item is None:
            continue
        where = f"{at}.{key}" if at else key
        if key not in level.given and key not in level.dropped:
            yield where
        elif key in level.nested:
            yield from unknown_fields(item, level.nested[key], where)
