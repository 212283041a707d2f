"""``--blackbox-report``: the markdown report of what a run re-recorded (under xdist: test_xdist.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from .conftest import CHANGED, UNCHANGED, Suite, exact, summary

FLAVORS = ("sync", "async")
WEATHER_IN_OSLO = """
@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    answer = AWAIT ask(blackbox, anthropic_options, "Oslo")
    assert answer.endswith(" in Oslo.")
"""
#: The run's summary line: per flavor, one cassette new, one changed and one unchanged.
LINE = summary(recorded=4, unchanged=2)
#: The report of that run.
REPORT = [
    "### blackbox: re-recorded cassettes",
    "",
    f"`{LINE}`",
    "",
    f"6 re-recorded: 2 new, 2 changed, 2 {UNCHANGED}",
    "",
    "| Cassette | What happened |",
    "| --- | --- |",
    "| `cassettes/test_other_async/test_weather.json` | new |",
    "| `cassettes/test_other_sync/test_weather.json` | new |",
    f"| `cassettes/test_weather_async/test_weather.json` | {CHANGED} |",
    f"| `cassettes/test_weather_sync/test_weather.json` | {CHANGED} |",
]


def _re_record(suite: Suite, *args: str) -> pytest.RunResult:
    """Record three tests of each flavor, then record all again: one new, one changed, one unchanged
    per flavor (both flavors in one inner run)."""
    for flavor in FLAVORS:
        for name in ("test_weather", "test_other", "test_third"):
            replace(suite, flavor=flavor).write(name=f"{name}_{flavor}")
    suite.run("--record-mode=once").assert_outcomes(passed=6)
    for flavor in FLAVORS:
        suite.cassette(f"test_other_{flavor}").unlink()  # recorded again below: new
        replace(suite, flavor=flavor).write(name=f"test_weather_{flavor}", body=WEATHER_IN_OSLO)
    result = suite.run(*args, "--record-mode=all")
    result.assert_outcomes(passed=6)
    return result


def test_the_report_lists_new_and_changed_cassettes_and_counts_unchanged(sync_suite: Suite) -> None:
    report = sync_suite.pytester.path / "out" / "blackbox.md"
    result = _re_record(sync_suite, f"--blackbox-report={report}")
    result.stdout.fnmatch_lines([exact(LINE), "*", exact(f"blackbox: report written to {report}")])
    assert report.read_text(encoding="utf-8").splitlines() == REPORT


def test_github_appends_to_the_job_summary(sync_suite: Suite, tmp_path: Path) -> None:
    """Under xdist the controller writes the report from the summaries the workers sent: checked in
    test_xdist.py, in its one inner run under ``-n 2``."""
    job_summary = tmp_path / "step-summary.md"
    job_summary.write_text("earlier step\n", encoding="utf-8")
    sync_suite.pytester._monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(job_summary))
    result = _re_record(sync_suite, "--blackbox-report=github")
    result.stdout.fnmatch_lines([exact(LINE), "*", exact(f"blackbox: report written to {job_summary}")])
    assert job_summary.read_text(encoding="utf-8").splitlines() == ["earlier step", *REPORT, ""]


def test_an_unchanged_run_reports_no_table(sync_suite: Suite, tmp_path: Path) -> None:
    sync_suite.write()
    sync_suite.run("--record-mode=once").assert_outcomes(passed=1)
    job_summary = tmp_path / "step-summary.md"
    sync_suite.pytester._monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(job_summary))
    result = sync_suite.run("--record-mode=all", "--blackbox-report=github")
    result.assert_outcomes(passed=1)
    assert job_summary.read_text(encoding="utf-8").splitlines() == [
        "### blackbox: re-recorded cassettes",
        "",
        f"`{summary(unchanged=1)}`",
        "",
        f"1 re-recorded: 0 new, 0 changed, 1 {UNCHANGED}",
        "",
    ]


def test_a_replay_run_reports_that_nothing_was_recorded(sync_suite: Suite) -> None:
    sync_suite.write()
    sync_suite.run("--record-mode=once").assert_outcomes(passed=1)
    sync_suite.pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        "blackbox_report = reports/blackbox.md\n"
    )
    sync_suite.run().assert_outcomes(passed=1)
    written = sync_suite.pytester.path / "reports" / "blackbox.md"
    assert written.read_text(encoding="utf-8").splitlines() == [
        "### blackbox: re-recorded cassettes",
        "",
        f"`{summary(replayed=1)}`",
        "",
        "No cassette was recorded in this run.",
    ]


def test_github_without_the_variable_says_so(sync_suite: Suite) -> None:
    sync_suite.write()
    sync_suite.run("--record-mode=once").assert_outcomes(passed=1)
    sync_suite.pytester._monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = sync_suite.run("--blackbox-report=github")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [exact("blackbox: no report written: GITHUB_STEP_SUMMARY is not set (--blackbox-report=github)")]
    )
