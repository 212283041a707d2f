"""A test's cassette settings: record mode, match mode and cassette path, from CLI, marker and ini.

Kept free of the session and its imports so collection and the summary stay cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import pytest

from .cassettes import default_cassette, resolve_override

if TYPE_CHECKING:
    from .options import Match

RecordMode = Literal["none", "once", "new_episodes", "all", "rewrite"]
RECORD_MODES: tuple[RecordMode, ...] = ("none", "once", "new_episodes", "all", "rewrite")
MARKER_ARGS = ("cassette", "match", "record_mode")


@dataclass(frozen=True)
class Settings:
    """A test's resolved settings: CLI > closest marker > ini > default."""

    record_mode: RecordMode
    match: Match
    cassette: Path
    allow_record: bool


def _marker_kwargs(item: pytest.Item) -> dict[str, Any]:
    """Marker arguments, closest last so they win (function over class over module)."""
    merged: dict[str, Any] = {}
    for mark in reversed(list(item.iter_markers("blackbox"))):
        merged.update(mark.kwargs)
    return merged


def marker_problem(item: pytest.Item) -> str | None:
    """A usage problem with this item's ``blackbox`` markers, if any."""
    for mark in item.iter_markers("blackbox"):
        if mark.args:
            return "@pytest.mark.blackbox takes keyword arguments only (cassette=, match=, record_mode=)"
        unknown = sorted(set(mark.kwargs) - set(MARKER_ARGS))
        if unknown:
            return f"@pytest.mark.blackbox got unknown argument(s) {', '.join(unknown)}; it takes cassette=, match=, record_mode="
        if mark.kwargs.get("match") not in (None, "strict", "sequence"):
            return '@pytest.mark.blackbox(match=…) must be "strict" or "sequence"'
        if mark.kwargs.get("record_mode") not in (None, *RECORD_MODES):
            return f"@pytest.mark.blackbox(record_mode=…) must be one of {', '.join(RECORD_MODES)}"
    return None


def _ini(config: pytest.Config, name: str) -> str | None:
    value = config.getini(name)
    return str(value) if value else None


def resolve_settings(item: pytest.Item) -> Settings:
    config = item.config
    marker = _marker_kwargs(item)
    record_mode = (
        config.getoption("record_mode", None)
        or marker.get("record_mode")
        or _ini(config, "blackbox_record_mode")
        or "none"
    )
    if record_mode not in RECORD_MODES:
        raise pytest.UsageError(
            f"blackbox_record_mode must be one of {', '.join(RECORD_MODES)}; got {record_mode!r}"
        )
    match = (
        config.getoption("blackbox_match", None)
        or marker.get("match")
        or _ini(config, "blackbox_match")
        or "strict"
    )
    if match not in ("strict", "sequence"):
        raise pytest.UsageError(f'blackbox_match must be "strict" or "sequence"; got {match!r}')
    return Settings(
        cast(RecordMode, record_mode),
        cast("Match", match),
        _cassette_path(item, marker.get("cassette")),
        bool(config.getoption("blackbox_allow_record", False)),
    )


def _base_dir(item: pytest.Item) -> Path | None:
    base = _ini(item.config, "blackbox_cassette_dir")
    return Path(str(item.config.rootpath)) / base if base else None


def default_folder(item: pytest.Item) -> Path:
    """The cassette folder of the item's test module."""
    return default_cassette(Path(str(item.path)), None, "_", _base_dir(item)).parent


def _cassette_path(item: pytest.Item, override: Any) -> Path:
    test_file = Path(str(item.path))
    if override:
        return resolve_override(test_file, str(override))
    cls = getattr(item, "cls", None)
    name = getattr(item, "name", item.nodeid.rsplit("::", 1)[-1])
    return default_cassette(test_file, cls.__name__ if cls is not None else None, name, _base_dir(item))


def rerecord_command(item: pytest.Item, mode: str) -> str:
    return f"pytest {item.nodeid} --record-mode={mode}"
