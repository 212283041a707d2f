"""A test's cassette settings (record mode, match mode, cassette path) from the command line, the
marker and the ini file, in the documented precedence. Free of the session's imports, so collection
and the summary stay cheap. See docs/pytest.md#options-ini-keys-and-their-precedence.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import pytest

from .paths import default_cassette, module_folder, resolve_override

RecordMode = Literal["none", "once", "new_episodes", "all", "rewrite"]
Match = Literal["strict", "sequence"]
RECORD_MODES: tuple[RecordMode, ...] = ("none", "once", "new_episodes", "all", "rewrite")
MATCHES: tuple[Match, ...] = ("strict", "sequence")
MARKER_ARGS = ("cassette", "match", "record_mode")
MARKER_USAGE = "@pytest.mark.blackbox(cassette=None, match='strict'|'sequence', record_mode=None)"


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


def _one_of(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{value}"' for value in values)


def _argument_problem(kwargs: Mapping[str, Any]) -> str | None:
    unknown = sorted(set(kwargs) - set(MARKER_ARGS))
    if unknown:
        return f"unknown argument(s) {', '.join(unknown)}"
    if kwargs.get("match") not in (None, *MATCHES):
        return f"match={kwargs['match']!r} must be one of {_one_of(MATCHES)}"
    if kwargs.get("record_mode") not in (None, *RECORD_MODES):
        return f"record_mode={kwargs['record_mode']!r} must be one of {_one_of(RECORD_MODES)}"
    cassette = kwargs.get("cassette")
    if cassette is not None and not (isinstance(cassette, (str, os.PathLike)) and os.fspath(cassette)):
        return f"cassette={cassette!r} must be a non-empty path"
    return None


def marker_problem(item: pytest.Item) -> str | None:
    """A usage problem with this item's ``blackbox`` markers, as one line, if any."""
    for mark in item.iter_markers("blackbox"):
        problem = "it takes keyword arguments only" if mark.args else _argument_problem(mark.kwargs)
        if problem is not None:
            return f"{item.nodeid}: bad @pytest.mark.blackbox: {problem}; usage: {MARKER_USAGE}"
    return None


def _ini(config: pytest.Config, name: str) -> str | None:
    value = str(config.getini(name)).strip()
    return value or None


def check_ini(config: pytest.Config) -> None:
    """Refuse bad ini and option values once, at start-up, rather than in every test."""
    mode = _ini(config, "blackbox_record_mode")
    if mode is not None and mode not in RECORD_MODES:
        raise pytest.UsageError(f"blackbox_record_mode = {mode} must be one of {_one_of(RECORD_MODES)}")
    match = _ini(config, "blackbox_match")
    if match is not None and match not in MATCHES:
        raise pytest.UsageError(f"blackbox_match = {match} must be one of {_one_of(MATCHES)}")


def resolve_settings(item: pytest.Item) -> Settings:
    config = item.config
    marker = _marker_kwargs(item)
    record_mode = (
        config.getoption("record_mode", None)
        or marker.get("record_mode")
        or _ini(config, "blackbox_record_mode")
        or "none"
    )
    match = (
        config.getoption("blackbox_match", None)
        or marker.get("match")
        or _ini(config, "blackbox_match")
        or "strict"
    )
    return Settings(
        cast(RecordMode, record_mode),
        cast(Match, match),
        _cassette_path(item, marker.get("cassette")),
        bool(config.getoption("blackbox_allow_record", False)),
    )


def _shared(config: pytest.Config) -> tuple[Path, Path] | None:
    base = _ini(config, "blackbox_cassette_dir")
    root = Path(str(config.rootpath))
    return (root / base, root) if base else None


def default_folder(item: pytest.Item) -> Path:
    """The cassette folder of the item's test module."""
    return module_folder(Path(str(item.path)), _shared(item.config))


def _cassette_path(item: pytest.Item, override: Any) -> Path:
    test_file = Path(str(item.path))
    if override is not None:
        return resolve_override(test_file, os.fspath(override))
    cls = getattr(item, "cls", None)
    return default_cassette(
        test_file, cls.__name__ if cls is not None else None, item.name, _shared(item.config)
    )


def rerecord_command(item: pytest.Item, mode: str) -> str:
    """The command that re-runs this one test in ``mode`` (from the rootdir)."""
    return f"pytest {shlex.quote(item.nodeid)} --record-mode={mode}"
