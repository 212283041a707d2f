"""The end-of-run summary line and the unused-cassette search.

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

if TYPE_CHECKING:
    from .testrun import TestRun

COUNTED = (
    ("replayed", "replayed"),
    ("recorded", "recorded"),
    ("diverged", "diverged"),
    ("unsupported", "unsupported"),
    ("not_written", "not written (test failed)"),
)
#: Appended only when not zero: no cassette in record mode none, a cassette that failed verification
#: or could not be loaded, and a refusal to reach the network (recording in CI, a non-model request).
COUNTED_IF_ANY = (
    ("missing", "missing"),
    ("invalid", "invalid"),
    ("refused", "refused"),
)
#: Outcomes that fail the run even when pytest counted the test as passing (an xfail, say).
FAILING = ("diverged", "unsupported", "invalid")
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


def _narrowed_modules(config: pytest.Config) -> set[Path]:
    """Test files named with ``::`` on the command line: only part of them was collected."""
    base = config.invocation_params.dir
    return {(base / arg.split("::", 1)[0]).resolve() for arg in config.args if "::" in arg}


@dataclass
class Summary:
    """Counts of cassette outcomes and the cassette files seen, claimed and used."""

    root: Path
    counts: Counter[str] = field(default_factory=Counter)
    used: set[str] = field(default_factory=set)
    claimed: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)

    def add_collected(
        self,
        config: pytest.Config,
        items: Iterable[pytest.Item],
        uses_blackbox: Callable[[pytest.Item], bool],
    ) -> None:
        """Remember the folders to search and the cassettes the collected tests would use."""
        from .config import default_folder, resolve_settings

        narrowed = _narrowed_modules(config)
        for item in items:
            if Path(str(item.path)).resolve() not in narrowed:
                self.folders.add(str(default_folder(item)))
            if uses_blackbox(item):
                self.claimed.add(str(resolve_settings(item).cassette))

    def add_run(self, run: TestRun) -> None:
        if run.outcome is not None:
            self.counts[run.outcome] += 1
        self.used.add(str(run.cassette))

    def unused(self) -> list[str]:
        files = {str(p) for folder in self.folders for p in Path(folder).glob("*.json") if p.is_file()}
        return sorted(path for path in files - self.claimed - self.used if _looks_like_cassette(Path(path)))

    def failed(self) -> bool:
        """Whether a cassette diverged, was refused or failed verification in this run."""
        return any(self.counts.get(outcome, 0) for outcome in FAILING)

    def to_json(self) -> str:
        return json.dumps(
            {
                "counts": dict(self.counts),
                "used": sorted(self.used),
                "claimed": sorted(self.claimed),
                "folders": sorted(self.folders),
            }
        )

    def merge_json(self, text: str) -> None:
        data: dict[str, Any] = json.loads(text)
        self.counts.update(data["counts"])
        self.used.update(data["used"])
        self.claimed.update(data["claimed"])
        self.folders.update(data["folders"])

    def _shown(self, path: str) -> str:
        try:
            return Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return path

    def line(self, unused: int) -> str:
        parts = [f"{self.counts.get(key, 0)} {label}" for key, label in COUNTED]
        parts.append(f"{unused} unused cassettes")
        parts += [f"{self.counts[key]} {label}" for key, label in COUNTED_IF_ANY if self.counts.get(key, 0)]
        return "blackbox: " + ", ".join(parts)

    def write(self, terminal: Any, *, verbose: bool) -> None:
        """The summary line, then (with ``-v``) one line per unused cassette; nothing if nothing ran."""
        unused = self.unused()
        if not self.counts and not unused:
            return
        terminal.write_line(self.line(len(unused)))
        if verbose:
            for path in unused:
                terminal.write_line(f"  unused: {self._shown(path)}")
