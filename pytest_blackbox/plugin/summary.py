"""The end-of-run summary: the counts line, the changed cassettes, and the unused-cassette search.

It is an object of its own so that xdist workers can send theirs to the controller. See
docs/pytest.md#the-summary-line.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..vocabulary import FAILING
from .paths import shared_cassette_advice

if TYPE_CHECKING:
    from .testrun import TestRun

COUNTED = (
    ("replayed", "replayed"),
    ("recorded", "recorded"),
    ("diverged", "diverged"),
    ("unsupported", "unsupported"),
    ("not_written", "not written (test failed)"),
)
#: Appended only when not zero: re-recordings that left the cassette as it was, live runs
#: (``--blackbox-disable``), no cassette in record mode none, a cassette that failed verification or
#: could not be loaded, a folder that takes no new files, and a refusal to reach the network
#: (recording in CI, a non-model request or connection, a model call of a test without the marker).
COUNTED_IF_ANY = (
    ("unchanged", "unchanged"),
    ("live", "live"),
    ("missing", "missing"),
    ("invalid", "invalid"),
    ("unwritable", "unwritable"),
    ("refused", "refused"),
)
#: Appended only when not zero: replays that passed only because a match rule (or the ``sequence``
#: mode) relaxed a comparison; they are also counted as replayed.
RELAXED = "replayed through a match rule"
NOT_CHECKED = "unused cassettes not checked (not every test was selected)"
#: How much of a ``.json`` file is read to tell a cassette from another tool's file. Blackbox writes
#: ``version``, ``id``, ``createdAt`` and ``steps`` first, so a cassette shows them at its start.
_HEAD_BYTES = 4096
_CASSETTE_HEAD = re.compile(r'\A\s*\{\s*"version"\s*:\s*2\s*,.*?"steps"\s*:\s*\[', re.DOTALL)


def _looks_like_cassette(path: Path) -> bool:
    """Whether a file starts like a Blackbox v2 cassette, read from its first few KiB only."""
    try:
        with path.open("rb") as file:
            head = file.read(_HEAD_BYTES)
    except OSError:
        return False
    return _CASSETTE_HEAD.match(head.decode("utf-8", errors="replace")) is not None


def _key(item: pytest.Item) -> str:
    """A test as the summary keys it: file and node id (two test files outside the rootdir may get
    the same node id)."""
    return f"{item.path}::{item.nodeid}"


def partial_selection(config: pytest.Config) -> bool:
    """Whether the command line picks part of the collected suite: ``file.py::test`` or ``--lf``.

    Deselection (``-k``, ``-m``, ``--deselect``, sharding plugins) is seen as it happens, through
    ``pytest_deselected``; a module that failed to import is seen through its collect report.
    """
    return any("::" in str(arg) for arg in config.args) or bool(config.getoption("lf", False))


@dataclass
class Summary:
    """Each test's outcome, the cassettes that changed, and the cassette files seen, claimed and used."""

    root: Path
    #: Test → how its last attempt ended (a rerun replaces the failed attempt's outcome). Keyed by
    #: file and node id: two test files outside the rootdir may get the same node id.
    outcomes: dict[str, str] = field(default_factory=dict)
    #: Re-recorded cassette → where it first departs from the old one.
    changed: dict[str, str] = field(default_factory=dict)
    #: Cassettes recorded where none was before.
    new: set[str] = field(default_factory=set)
    used: set[str] = field(default_factory=set)
    claimed: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    #: Cassette path → the tests that derived it and used it (identity → node id). Two tests on one
    #: worker never get there (the second fails at set-up); two on different xdist workers meet here.
    owners: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Not every test of the collected modules was selected: unused cassettes cannot be told.
    partial: bool = False
    #: Tests (keyed like ``outcomes``) whose last attempt replayed only through a match rule.
    relaxed: set[str] = field(default_factory=set)

    @property
    def counts(self) -> Counter[str]:
        return Counter(self.outcomes.values())

    def add_collected(
        self, items: Iterable[pytest.Item], uses_blackbox: Callable[[pytest.Item], bool]
    ) -> None:
        """Remember the folders to search and the cassettes the collected tests would use."""
        from .config import default_folder, resolve_settings

        for item in items:
            self.folders.add(str(default_folder(item)))
            if uses_blackbox(item):
                self.claimed.add(str(resolve_settings(item).cassette))

    def add_outcome(self, item: pytest.Item, outcome: str) -> None:
        self.outcomes[_key(item)] = outcome

    def add_run(self, run: TestRun) -> None:
        if run.outcome is not None:
            self.add_outcome(run.item, run.outcome)
            if run.relaxed is not None:
                self.relaxed.add(_key(run.item))
            else:
                self.relaxed.discard(_key(run.item))
        if run.change is not None and run.outcome == "recorded":
            self.changed[str(run.cassette)] = run.change
        elif run.outcome == "recorded" and run.fork_out is None and not run.settings.live:
            self.new.add(str(run.cassette))
        self.used.add(str(run.cassette))
        settings = run.settings
        if run.session is not None and not (settings.live or settings.explicit_cassette):
            self.owners.setdefault(str(run.cassette), {})[settings.identity] = run.item.nodeid

    def shared(self) -> dict[str, list[str]]:
        """Cassette path → the node ids of the tests that each used it as their own, when several did."""
        return {path: sorted(tests.values()) for path, tests in self.owners.items() if len(tests) > 1}

    def unused(self) -> list[str]:
        files = {str(p) for folder in self.folders for p in Path(folder).glob("*.json") if p.is_file()}
        return sorted(path for path in files - self.claimed - self.used if _looks_like_cassette(Path(path)))

    def failed(self) -> bool:
        """Whether a cassette diverged, was refused, failed verification or served two tests in this run."""
        return any(self.counts.get(outcome, 0) for outcome in FAILING) or bool(self.shared())

    def to_json(self) -> str:
        return json.dumps(
            {
                "outcomes": self.outcomes,
                "changed": self.changed,
                "new": sorted(self.new),
                "used": sorted(self.used),
                "claimed": sorted(self.claimed),
                "folders": sorted(self.folders),
                "owners": self.owners,
                "partial": self.partial,
                "relaxed": sorted(self.relaxed),
            }
        )

    def merge_json(self, text: str) -> None:
        data: dict[str, Any] = json.loads(text)
        self.outcomes.update(data["outcomes"])
        self.changed.update(data["changed"])
        self.new.update(data["new"])
        self.used.update(data["used"])
        self.claimed.update(data["claimed"])
        self.folders.update(data["folders"])
        for path, tests in data["owners"].items():
            self.owners.setdefault(path, {}).update(tests)
        self.partial = self.partial or data["partial"]
        self.relaxed.update(data["relaxed"])

    def shown(self, path: str) -> str:
        """A path as the user types it: relative to the rootdir when it is inside."""
        try:
            return Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return path

    def line(self, unused: int | None) -> str:
        """The counts; ``unused`` is ``None`` when unused cassettes were not looked for."""
        counts = self.counts
        parts = [f"{counts.get(key, 0)} {label}" for key, label in COUNTED]
        parts.append(NOT_CHECKED if unused is None else f"{unused} unused cassettes")
        parts += [f"{counts[key]} {label}" for key, label in COUNTED_IF_ANY if counts.get(key, 0)]
        if self.relaxed:
            parts.append(f"{len(self.relaxed)} {RELAXED}")
        return "blackbox: " + ", ".join(parts)

    def current_line(self) -> str:
        """The counts line as the terminal shows it (unused cassettes looked for unless partial)."""
        return self.line(None if self.partial else len(self.unused()))

    def write(self, terminal: Any, *, verbose: bool) -> None:
        """The counts, each changed cassette, then (with ``-v``) each unused one; nothing if no test ran."""
        unused = None if self.partial else self.unused()
        if not self.outcomes and not unused:
            return
        terminal.write_line(self.line(None if unused is None else len(unused)))
        for path, change in sorted(self.changed.items()):
            terminal.write_line(f"  changed: {self.shown(path)} ({change})")
        for path, tests in sorted(self.shared().items()):
            together = " and ".join(tests)
            terminal.write_line(f"blackbox: {together} each used the cassette {self.shown(path)}")
            terminal.write_line(shared_cassette_advice("all but one of them"))
        if verbose:
            for path in unused or ():
                terminal.write_line(f"  unused: {self.shown(path)}")
