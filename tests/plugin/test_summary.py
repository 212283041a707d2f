"""The end-of-run summary line, unused cassettes, and the exit status."""

from __future__ import annotations

import pytest

from .conftest import QUIET, Suite, exact, summary

TWO_TESTS = """
@pytest.mark.blackbox
def test_keep(blackbox):
    blackbox.finish(result="kept")


@pytest.mark.blackbox
def test_old(blackbox):
    blackbox.finish(result="old")
"""

RENAMED = TWO_TESTS.replace("def test_old", "def test_new")


def _recorded_pair(suite: Suite) -> None:
    suite.pytester.makepyfile(test_pair="import pytest\n" + TWO_TESTS)
    suite.run("--record-mode=once").assert_outcomes(passed=2)


def test_a_renamed_test_leaves_an_unused_cassette_listed_with_v(sync_suite: Suite) -> None:
    _recorded_pair(sync_suite)
    sync_suite.pytester.makepyfile(test_pair="import pytest\n" + RENAMED)
    result = sync_suite.run("--record-mode=once")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK  # unused cassettes do not fail the run
    result.stdout.fnmatch_lines([exact(summary(replayed=1, recorded=1, unused=1))])
    assert not any(line.startswith("  unused:") for line in result.stdout.lines)

    verbose = sync_suite.run("-v")
    verbose.stdout.fnmatch_lines(
        [exact(summary(replayed=2, unused=1)), exact("  unused: cassettes/test_pair/test_old.json")],
        consecutive=True,
    )


@pytest.mark.parametrize(
    "selection",
    [("-k", "keep"), ("--deselect", "test_pair.py::test_old"), ("test_pair.py::test_keep",)],
    ids=["-k", "--deselect", "node-id"],
)
def test_a_partial_run_reports_no_unused_cassettes(sync_suite: Suite, selection: tuple[str, ...]) -> None:
    _recorded_pair(sync_suite)
    result = sync_suite.run("-v", *selection)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([exact(summary(replayed=1))])


def test_no_summary_without_cassette_tests(bare_dir: pytest.Pytester) -> None:
    bare_dir.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = bare_dir.runpytest(*QUIET)
    result.assert_outcomes(passed=1)
    assert not any(line.startswith("blackbox:") for line in result.stdout.lines)


XFAIL = """
@pytest.mark.xfail(reason="the answer is known to be wrong")
@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    answer = AWAIT ask(blackbox, anthropic_options, city())
    assert answer == "wrong"
"""


def test_a_diverged_cassette_fails_the_run_even_in_an_xfail_test(suite: Suite) -> None:
    suite.write(body=XFAIL.replace("@pytest.mark.xfail", "# @pytest.mark.xfail").replace('"wrong"', "answer"))
    suite.run("--record-mode=once").assert_outcomes(passed=1)
    suite.write(body=XFAIL)
    expected_failure = suite.run()
    expected_failure.assert_outcomes(xfailed=1)
    assert expected_failure.ret == pytest.ExitCode.OK  # replayed; only the assertion failed
    suite.pytester._monkeypatch.setenv("WEATHER_CITY", "Oslo")
    diverged = suite.run()
    diverged.assert_outcomes(xfailed=1)
    diverged.stdout.fnmatch_lines([exact(summary(diverged=1))])
    assert diverged.ret == pytest.ExitCode.TESTS_FAILED
