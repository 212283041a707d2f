"""A test's cassette settings from the command line, its ``blackbox`` markers, the ``blackbox_config``
fixture and the ini file, in one documented precedence, every value checked before it is used. Free
of the session's imports, so collection and the summary stay cheap. See docs/pytest.md#configuration.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from ..engine import RULE_VALIDATORS, check_allowed_hosts, check_drop_fields
from ..errors import BlackboxUsageError
from ..vocabulary import MATCHES, MEDIA_MODES, RECORD_MODES, Match, Media, RecordMode
from .paths import (
    case_collisions,
    cassette_name,
    legacy_cassette,
    module_folder,
    resolve_override,
    test_stem,
)

#: Every key of ``@pytest.mark.blackbox(...)``; the ``blackbox_config`` fixture takes all but ``cassette``.
KEYS = (
    "cassette",
    "cassette_dir",
    "record_mode",
    "match",
    "ignore",
    "normalize",
    "redact",
    "secrets",
    "allowed_hosts",
    "media",
    "drop_fields",
)
FIXTURE_KEYS = KEYS[1:]
#: The keys the engine applies: ``SessionOptions`` fields of the same names (a ``match`` function
#: becomes the ``matcher`` field).
ENGINE_KEYS = ("ignore", "normalize", "redact", "secrets")
PRECEDENCE = "command line > marker (test > class > module) > blackbox_config fixture > ini > default"
MARKER_USAGE = (
    "@pytest.mark.blackbox(cassette=None, cassette_dir=None, record_mode=None, "
    "match='strict'|'sequence'|matcher, ignore=[], normalize=[], redact=[], secrets={}, allowed_hosts=[], "
    "media='digest'|'inline', drop_fields=[])"
)
FIXTURE_USAGE = f"blackbox_config returns a dict with any of the keys {', '.join(FIXTURE_KEYS)}"
#: pytest-repeat runs a test several times as parameters of this name; every run uses one cassette.
REPEAT_PARAMETER = "__pytest_repeat_step_number"

_COLLISIONS_KEY = pytest.StashKey[dict[str, frozenset[str]]]()


class _Bad(Exception):
    """One value's problem, as the usage error names it."""


@dataclass(frozen=True)
class Settings:
    """A test's resolved settings (:data:`PRECEDENCE`)."""

    record_mode: RecordMode
    match: Match
    cassette: Path
    allow_record: bool
    #: ``--blackbox-disable``: the test runs against the real provider, no cassette read or written.
    live: bool = False
    #: The cassette was named by the test (``cassette=``): other tests may share it on purpose.
    explicit_cassette: bool = False
    #: Hosts beyond loopback that a replay may connect to (the socket guard's allowlist).
    allowed_hosts: tuple[str, ...] = ()
    #: What a recording keeps of a request's media: its digest, or its bytes too.
    media: Media = "digest"
    #: Request and response fields Blackbox does not know that a run may leave out instead of refusing.
    drop_fields: tuple[str, ...] = ()
    #: What the engine applies, ready for ``SessionOptions(**engine_rules)``: any of ``ignore``,
    #: ``normalize``, ``redact``, ``secrets`` and ``matcher``, only those set.
    engine_rules: dict[str, Any] = field(default_factory=dict)
    #: The test as its cassette knows it: module path and stem (a repeated test's runs share it).
    identity: str = ""
    #: Where pytest-blackbox 0.1 put this cassette, when the current rule moved it.
    legacy_cassette: Path | None = None


# -- values ----------------------------------------------------------------------------------------


def _one_of(values: Iterable[str]) -> str:
    return ", ".join(f'"{value}"' for value in values)


def _record_mode(value: Any) -> RecordMode:
    if value not in RECORD_MODES:
        raise _Bad(f"record_mode={value!r} must be one of {_one_of(RECORD_MODES)}")
    return cast(RecordMode, value)


def _match_mode(value: Any, alternative: str = "") -> Match:
    if value not in MATCHES:
        raise _Bad(f"match={value!r} must be one of {_one_of(MATCHES)}{alternative}")
    return cast(Match, value)


def _media(value: Any) -> Media:
    if value not in MEDIA_MODES:
        raise _Bad(f"media={value!r} must be one of {_one_of(MEDIA_MODES)}")
    return cast(Media, value)


def _match(value: Any) -> Match | Callable[..., Any]:
    if callable(value):
        return cast("Callable[..., Any]", value)
    return _match_mode(value, ", or a function (recorded_model_input, live_model_input) -> None | str")


def _path(name: str) -> Callable[[Any], str | os.PathLike[str]]:
    def check(value: Any) -> str | os.PathLike[str]:
        text = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
        if isinstance(text, str) and "\x00" in text:  # no file system takes it: refused before any call
            raise _Bad(f"{name}={value!r} must be a path without a NUL character (\\x00)")
        if isinstance(text, str) and text:
            return cast("str | os.PathLike[str]", value)
        raise _Bad(f"{name}={value!r} must be a non-empty path")

    return check


def _engine_check(validate: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The engine's own validator of a session option, its message as this layer reports it."""

    def check(value: Any) -> Any:
        try:
            return validate(value)
        except BlackboxUsageError as exc:
            raise _Bad(str(exc)) from None

    return check


def _rule(name: str) -> Callable[[Any], Any]:
    return _engine_check(RULE_VALIDATORS[name])


_allowed_hosts = _engine_check(check_allowed_hosts)
_drop_fields = _engine_check(check_drop_fields)


_CHECKS: dict[str, Callable[[Any], Any]] = {
    "cassette": _path("cassette"),
    "cassette_dir": _path("cassette_dir"),
    "record_mode": _record_mode,
    "match": _match,
    "ignore": _rule("ignore"),
    "normalize": _rule("normalize"),
    "redact": _rule("redact"),
    "secrets": _rule("secrets"),
    "allowed_hosts": _allowed_hosts,
    "media": _media,
    "drop_fields": _drop_fields,
}


def _parsed(values: Mapping[str, Any], allowed: tuple[str, ...], what: str) -> dict[str, Any]:
    """Every set value of ``values`` checked (``None`` means not set), in the order of ``KEYS``."""
    unknown = sorted(set(values) - set(allowed))
    if unknown:
        if unknown == ["cassette"]:
            raise _Bad("cassette is set per test: give it on the test's @pytest.mark.blackbox")
        raise _Bad(f"unknown {what}(s) {', '.join(map(str, unknown))}")
    return {key: _CHECKS[key](values[key]) for key in allowed if values.get(key) is not None}


# -- the sources -----------------------------------------------------------------------------------


def _marker_kwargs(item: pytest.Item) -> dict[str, Any]:
    """Marker arguments, closest last so they win (function over class over module)."""
    merged: dict[str, Any] = {}
    for mark in reversed(list(item.iter_markers("blackbox"))):
        merged.update(mark.kwargs)
    return merged


def marker_problem(item: pytest.Item) -> str | None:
    """A usage problem with this item's ``blackbox`` markers, as one line, if any."""
    for mark in item.iter_markers("blackbox"):
        try:
            if mark.args:
                raise _Bad("it takes keyword arguments only")
            _parsed(mark.kwargs, KEYS, "argument")
        except _Bad as exc:
            return f"{item.nodeid}: bad @pytest.mark.blackbox: {exc}; usage: {MARKER_USAGE}"
    return None


def fixture_problem(item: pytest.Item, config: Any, cassette_dir: Any) -> str | None:
    """A problem with the ``blackbox_config`` or ``blackbox_cassette_dir`` value (known at set-up)."""
    try:
        if not isinstance(config, Mapping):
            raise _Bad(f"it returned {type(config).__name__}, not a dict")
        _parsed(config, FIXTURE_KEYS, "key")
    except _Bad as exc:
        return f"{item.nodeid}: bad blackbox_config: {exc}; usage: {FIXTURE_USAGE}"
    try:
        if cassette_dir is not None:
            _path("cassette_dir")(cassette_dir)
    except _Bad as exc:
        usage = "it returns the folder of the cassettes, or None"
        return f"{item.nodeid}: bad blackbox_cassette_dir: {exc}; usage: {usage}"
    return None


def _ini(config: pytest.Config, name: str) -> str | None:
    value = str(config.getini(name)).strip()
    return value or None


def _ini_list(config: pytest.Config, name: str) -> list[str]:
    """A ``linelist`` ini key's values, one per line or comma-separated."""
    lines: list[str] = config.getini(name)
    return [item for line in lines for item in re.split(r"[\s,]+", line) if item]


def _ini_hosts(config: pytest.Config) -> list[str]:
    return _ini_list(config, "blackbox_allowed_hosts")


def _cli_list(config: pytest.Config, name: str) -> list[str]:
    """An option given comma-separated and possibly several times."""
    given: list[str] = config.getoption(name, None) or []
    return [item.strip() for value in given for item in value.split(",") if item.strip()]


def cli_hosts(config: pytest.Config) -> list[str]:
    """``--blackbox-allowed-hosts``, each given comma-separated and possibly several times."""
    return _cli_list(config, "blackbox_allowed_hosts")


def config_hosts(config: pytest.Config) -> tuple[str, ...]:
    """The hosts the ini key and the option allow, for a test that has no marker to add its own."""
    return tuple(dict.fromkeys(_allowed_hosts([*_ini_hosts(config), *cli_hosts(config)])))


def check_ini(config: pytest.Config) -> None:
    """Refuse bad ini and option values once, at start-up, rather than in every test."""
    try:
        mode = _ini(config, "blackbox_record_mode")
        if mode is not None:
            _record_mode(mode)
        match = _ini(config, "blackbox_match")
        if match is not None:
            _match_mode(match)
        media = _ini(config, "blackbox_media")
        if media is not None:
            _media(media)
        _allowed_hosts(_ini_hosts(config))
        _drop_fields(_ini_list(config, "blackbox_drop_fields"))
    except _Bad as exc:
        raise pytest.UsageError(f"bad ini value: blackbox_{exc}") from None
    try:
        _allowed_hosts(cli_hosts(config))
        _drop_fields(_cli_list(config, "blackbox_drop_fields"))
    except _Bad as exc:
        raise pytest.UsageError(f"bad option: --blackbox-{str(exc).replace('_', '-', 1)}") from None


def _ini_layer(config: pytest.Config) -> dict[str, Any]:
    hosts = _ini_hosts(config)
    return {
        "record_mode": _ini(config, "blackbox_record_mode"),
        "match": _ini(config, "blackbox_match"),
        "allowed_hosts": hosts or None,
        "media": _ini(config, "blackbox_media"),
        "drop_fields": _ini_list(config, "blackbox_drop_fields") or None,
    }


# -- the test's settings ---------------------------------------------------------------------------


def _shared(config: pytest.Config) -> tuple[Path, Path] | None:
    base = _ini(config, "blackbox_cassette_dir")
    root = Path(str(config.rootpath))
    return (root / base, root) if base else None


def default_folder(item: pytest.Item) -> Path:
    """The cassette folder of the item's test module."""
    return module_folder(Path(str(item.path)), _shared(item.config))


def _classes(item: pytest.Item) -> list[str]:
    return [node.name for node in item.listchain() if isinstance(node, pytest.Class)]


def _name(item: pytest.Item) -> str:
    """The item's name without pytest-repeat's run number: every run of a repeated test shares a cassette."""
    callspec = getattr(item, "callspec", None)
    params = getattr(callspec, "params", {})
    if REPEAT_PARAMETER not in params:
        return item.name
    # pytest-repeat's id is ``<run>-<count>``; the rightmost one is its own (it parametrizes last).
    ids = str(getattr(callspec, "id", ""))
    run = re.fullmatch(rf"(?:(.*)-)?{params[REPEAT_PARAMETER] + 1}-\d+(?:-(.*))?", ids, re.S)
    rest = [part for part in run.groups() if part is not None] if run else [ids]
    original = getattr(item, "originalname", item.name.split("[", 1)[0])
    return f"{original}[{'-'.join(rest)}]" if rest else original


def stem_of(item: pytest.Item) -> str:
    """The test's id inside its module as cassettes spell it (``Outer.Inner.test_x[id]``)."""
    return test_stem(_classes(item), _name(item))


@dataclass
class Found:
    """What collection found (``pytest_make_collect_report``), before anything narrowed it.

    A ``file::test`` argument collects the module whole, then keeps the named test; ``--lf`` drops
    the tests that passed from a module's collection. The test's cassette name depends on every
    test of its module, so it is taken from this, not from the items that run.
    """

    items: list[pytest.Item] = field(default_factory=list)
    #: Every class found, by its parent's node id; a selection may have collected only some.
    classes: dict[str, dict[str, pytest.Class]] = field(default_factory=dict)
    collected: set[str] = field(default_factory=set)

    def add(self, collector: pytest.Collector, result: Iterable[pytest.Item | pytest.Collector]) -> None:
        self.collected.add(collector.nodeid)
        for node in result:
            if isinstance(node, pytest.Item):
                self.items.append(node)
            elif isinstance(node, pytest.Class):
                self.classes.setdefault(collector.nodeid, {})[node.nodeid] = node

    def all_items(self) -> Iterator[pytest.Item]:
        """Every test found, and those of the classes left uncollected whose name differs only in
        case from a collected sibling's (``TestA``, ``Testa``): only their tests can share a name."""
        yield from self.items
        for siblings in self.classes.values():
            folded = {node.name.casefold() for nodeid, node in siblings.items() if nodeid in self.collected}
            for nodeid, node in siblings.items():
                if nodeid not in self.collected and node.name.casefold() in folded:
                    yield from _collected_items(node)


def _collected_items(collector: pytest.Collector) -> Iterator[pytest.Item]:
    """The tests of a class the run did not collect (a selection named its twin): collected here,
    never run. One that cannot be collected has no tests to name."""
    try:
        nodes = list(collector.collect())
    except Exception:
        return
    for node in nodes:
        if isinstance(node, pytest.Item):
            yield node
        elif isinstance(node, pytest.Collector):
            yield from _collected_items(node)


def note_collected(session: pytest.Session, items: Iterable[pytest.Item], found: Found | None) -> None:
    """Find, per module, the test ids that differ only in case (they get hashed cassette names).

    The tests collection found (:class:`Found`) are looked at as well as those selected, so a test
    keeps its cassette name however it is selected (``file::test``, ``-k``, ``--lf``, ``--deselect``).
    """
    stems: dict[str, set[str]] = {}
    for item in (*items, *(found.all_items() if found else ())):
        stems.setdefault(str(item.path), set()).add(stem_of(item))
    session.config.stash[_COLLISIONS_KEY] = {
        module: frozenset(case_collisions(names)) for module, names in stems.items()
    }


def _collisions(item: pytest.Item) -> frozenset[str]:
    return item.config.stash.get(_COLLISIONS_KEY, {}).get(str(item.path), frozenset())


def _folder(item: pytest.Item, cassette_dir: str | os.PathLike[str] | None) -> Path:
    test_file = Path(str(item.path))
    if cassette_dir is None:
        return default_folder(item)
    folder = Path(cassette_dir)
    return folder if folder.is_absolute() else test_file.parent / folder


def resolve_settings(
    item: pytest.Item, fixture_config: Mapping[str, Any] | None = None, fixture_dir: Any = None
) -> Settings:
    """The test's settings; the fixtures' values were checked by :func:`fixture_problem` first."""
    config = item.config
    merged: dict[str, Any] = {}
    layers: list[tuple[Mapping[str, Any], tuple[str, ...]]] = [
        (_ini_layer(config), FIXTURE_KEYS),
        ({"cassette_dir": fixture_dir}, FIXTURE_KEYS),
        (fixture_config or {}, FIXTURE_KEYS),
        (_marker_kwargs(item), KEYS),
    ]
    for values, allowed in layers:
        merged.update(_parsed(values, allowed, "key"))
    record_mode = config.getoption("record_mode", None) or merged.get("record_mode", "none")
    engine_rules = {key: merged[key] for key in ENGINE_KEYS if key in merged}
    match = config.getoption("blackbox_match", None) or merged.get("match", "strict")
    if callable(match):
        engine_rules["matcher"] = _rule("matcher")(match)
        match = "strict"
    hosts = (*merged.get("allowed_hosts", ()), *_allowed_hosts(cli_hosts(config)))
    dropped = (*merged.get("drop_fields", ()), *_drop_fields(_cli_list(config, "blackbox_drop_fields")))
    stem = stem_of(item)
    test_file = Path(str(item.path))
    explicit = merged.get("cassette")
    if explicit is not None:
        cassette = resolve_override(test_file.parent, explicit)
    else:
        cassette = _folder(item, merged.get("cassette_dir")) / cassette_name(stem, _collisions(item))
    return Settings(
        record_mode=cast(RecordMode, record_mode),
        match=cast(Match, match),
        cassette=cassette,
        allow_record=bool(config.getoption("blackbox_allow_record", False)),
        live=bool(config.getoption("blackbox_disable", False)),
        explicit_cassette=explicit is not None,
        allowed_hosts=tuple(dict.fromkeys(hosts)),
        media=config.getoption("blackbox_media", None) or merged.get("media", "digest"),
        drop_fields=tuple(dict.fromkeys(dropped)),
        engine_rules=engine_rules,
        identity=f"{test_file}::{stem}",
        legacy_cassette=_legacy(item, cassette, explicit is not None or "cassette_dir" in merged),
    )


def _legacy(item: pytest.Item, cassette: Path, chosen: bool) -> Path | None:
    if chosen:
        return None
    classes = _classes(item)
    old = legacy_cassette(
        Path(str(item.path)), classes[-1] if classes else None, _name(item), _shared(item.config)
    )
    return old if old != cassette else None


def rerecord_command(item: pytest.Item, mode: str) -> str:
    """The command that re-runs this one test in ``mode`` (from the rootdir)."""
    return f"pytest {shlex.quote(item.nodeid)} --record-mode={mode}"
