"""``--blackbox-report``: the cassettes a run re-recorded, as markdown for a pull-request comment or a
GitHub Actions job summary. It reads the run's :class:`~.summary.Summary` (merged from every xdist
worker on the controller), so it says what the summary line says. See docs/ci.md#a-report-for-review.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Final

import pytest

from .summary import Summary

#: The option value that appends the report to the job summary of GitHub Actions.
GITHUB: Final = "github"
GITHUB_VARIABLE: Final = "GITHUB_STEP_SUMMARY"
TITLE: Final = "### blackbox: re-recorded cassettes"


def report_target(config: pytest.Config) -> str | None:
    """The option, else the ini key (a path relative to the rootdir), else ``None``: no report."""
    option = config.getoption("blackbox_report", None)
    if option:
        return str(option)
    value = str(config.getini("blackbox_report") or "").strip()
    if not value or value == GITHUB:
        return value or None
    return str(Path(str(config.rootpath), value))


def _cell(text: str) -> str:
    """Text for one table cell: a ``|`` would end the cell, a line break the row."""
    return " ".join(text.replace("|", "\\|").split())


def render_report(summary: Summary, line: str) -> str:
    """The summary ``line``, the totals, then one table row per new or changed cassette, by path."""
    changed = summary.changed
    new = sorted(summary.new)
    unchanged = summary.counts.get("unchanged", 0)
    total = len(new) + len(changed) + unchanged
    lines = [TITLE, "", f"`{line}`", ""]
    if not total:
        return "\n".join([*lines, "No cassette was recorded in this run.", ""])
    lines += [
        f"{total} re-recorded: {len(new)} new, {len(changed)} changed, {unchanged} unchanged "
        "(the same run recorded again; the file was left as it was).",
        "",
    ]
    if new or changed:
        rows = [(path, "new") for path in new]
        rows += [(path, f"changed at {change}") for path, change in changed.items()]
        lines += ["| Cassette | What happened |", "| --- | --- |"]
        lines += [f"| `{_cell(summary.shown(path))}` | {_cell(what)} |" for path, what in sorted(rows)]
        lines.append("")
    return "\n".join(lines)


def write_report(target: str, text: str) -> str:
    """Write (or, for ``github``, append) the report; the line the terminal summary shows about it."""
    if target == GITHUB:
        summary_file = os.environ.get(GITHUB_VARIABLE, "")
        if not summary_file:
            return f"blackbox: no report written: {GITHUB_VARIABLE} is not set (--blackbox-report={GITHUB})"
        return _written(Path(summary_file), text, append=True)
    return _written(Path(target), text, append=False)


def _written(path: Path, text: str, *, append: bool) -> str:
    try:
        if append:
            with path.open("a", encoding="utf-8") as file:
                file.write(text + "\n")
        else:
            _replace(path, text)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return f"blackbox: could not write the report to {path}: {reason}"
    return f"blackbox: report written to {path}"


def _replace(path: Path, text: str) -> None:
    """Write atomically: a reader (a later workflow step) never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
