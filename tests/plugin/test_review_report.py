"""``--blackbox-report``: the markdown report of what a run re-recorded, serial and under pytest-xdist."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Suite, exact, summary

UNCHANGED = "unchanged (the same run recorded again; the file was left as it was)."
XDIST = pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])


def _three_tests(suite: Suite) -> None:
    for name in ("test_weather", "test_other", "test_third"):
        suite.write(name=name)


@XDIST
def test_the_report_lists_new_and_changed_cassettes_and_counts_unchanged(
    suite: Suite, xdist: tuple[str, ...]
) -> None:
    _three_tests(suite)
    suite.run("--record-mode=once").assert_outcomes(passed=3)
    suite.cassette("test_other").unlink()  # recorded again below: new
    suite.write(name="test_weather", body=WEATHER_IN_OSLO)  # changed; test_third unchanged
    report = suite.pytester.path / "out" / "blackbox.md"
    result = suite.run(*xdist, "--record-mode=all", f"--blackbox-report={report}")
    result.assert_outcomes(passed=3)
    line = summary(recorded=2, unchanged=1)
    result.stdout.fnmatch_lines([exact(line), "*", exact(f"blackbox: report written to {report}")])
    assert report.read_text(encoding="utf-8").splitlines() == [
        "### blackbox: re-recorded cassettes",
        "",
        f"`{line}`",
        "",
        f"3 re-recorded: 1 new, 1 changed, 1 {UNCHANGED}",
        "",
        "| Cassette | What happened |",
        "| --- | --- |",
        "| `cassettes/test_other/test_weather.json` | new |",
        "| `cassettes/test_weather/test_weather.json` | changed at step 0 model_input: messages[0].content |",
    ]


WEATHER_IN_OSLO = """
@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    answer = AWAIT ask(blackbox, anthropic_options, "Oslo")
    assert answer.endswith(" in Oslo.")
"""


@XDIST
def test_github_appends_to_the_job_summary(sync_suite: Suite, xdist: tuple[str, ...], tmp_path: Path) -> None:
    sync_suite.write()
    sync_suite.run("--record-mode=once").assert_outcomes(passed=1)
    job_summary = tmp_path / "step-summary.md"
    job_summary.write_text("earlier step\n", encoding="utf-8")
    sync_suite.pytester._monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(job_summary))
    result = sync_suite.run(*xdist, "--record-mode=all", "--blackbox-report=github")
    result.assert_outcomes(passed=1)
    assert job_summary.read_text(encoding="utf-8").splitlines() == [
        "earlier step",
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
