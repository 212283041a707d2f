"""The end-of-run summary: its own object, so xdist workers can send theirs to the controller.

``blackbox: N replayed, N recorded, N diverged, N unsupported, N not written (test failed), N unused cassettes``

"Unused" cassettes are files under the cassette folders of the collected test modules that no test
of this run used: usually a renamed or deleted test. They are listed with ``-v``; they do not fail
the run, because a partial run (``-k``, one file) legitimately leaves others unused.
"""

from __future__ import annotations

import json
from collections import Counter
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


@dataclass
class Summary:
    """Counts of cassette outcomes and the cassette files seen and used."""

    counts: Counter[str] = field(default_factory=Counter)
    used: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    collected_modules: set[str] = field(default_factory=set)

    def add_collected(self, items: list[pytest.Item]) -> None:
        """Remember the cassette folders of the collected modules (their tests may use cassettes)."""
        from .settings import default_folder, resolve_settings

        for item in items:
            self.folders.add(str(default_folder(item)))
            if item.get_closest_marker("blackbox") is not None:
                self.folders.add(str(resolve_settings(item).cassette.parent))

    def add_run(self, run: TestRun) -> None:
        if run.outcome is not None:
            self.counts[run.outcome] += 1
        self.used.add(str(run.cassette))

    def unused(self) -> list[str]:
        files = {str(p) for folder in self.folders for p in Path(folder).glob("*.json") if p.is_file()}
        return sorted(files - self.used)

    def to_json(self) -> str:
        return json.dumps(
            {"counts": dict(self.counts), "used": sorted(self.used), "folders": sorted(self.folders)}
        )

    def merge_json(self, text: str) -> None:
        data: dict[str, Any] = json.loads(text)
        self.counts.update(data.get("counts", {}))
        self.used.update(data.get("used", []))
        self.folders.update(data.get("folders", []))

    def line(self) -> str:
        parts = [f"{self.counts.get(key, 0)} {label}" for key, label in COUNTED]
        parts.append(f"{len(self.unused())} unused cassettes")
        return "blackbox: " + ", ".join(parts)

    def write(self, terminal: Any, *, verbose: bool) -> None:
        if not self.counts and not self.unused():
            return
        terminal.write_line(self.line())
        if verbose:
            for path in self.unused():
                terminal.write_line(f"  unused: {path}")
