"""The end-of-run summary line, unused cassettes, and the exit status."""

from __future__ import annotations

import pytest

from tests import OTHER_PLUGINS_OFF, QUIET

from .conftest import Suite, exact, summary

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
    [("-k", "keep"), ("--deselect", "test_pair.py::test_new"), ("test_pair.py::test_keep",)],
    ids=["-k", "--deselect", "node-id"],
)
def test_a_partial_run_does_not_check_unused_cassettes(sync_suite: Suite, selection: tuple[str, ...]) -> None:
    _recorded_pair(sync_suite)
    sync_suite.pytester.makepyfile(test_pair="import pytest\n" + RENAMED)  # test_old.json is unused
    result = sync_suite.run("-v", *selection)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([exact(summary(replayed=1, checked=False))])
    assert not any(line.startswith("  unused:") for line in result.stdout.lines)


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


def test_json_files_that_are_not_blackbox_cassettes_are_never_unused(sync_suite: Suite) -> None:
    _recorded_pair(sync_suite)
    folder = sync_suite.pytester.path / "cassettes" / "test_pair"
    old = folder / "test_old.json"
    (folder / "test_vcr.json").write_text('{"interactions": [], "version": 1}\n', encoding="utf-8")
    (folder / "fixture.json").write_text('{"version": 2, "items": [], "steps": 3}', encoding="utf-8")
    (folder / "late_version.json").write_text('{"steps": [], "version": 2}', encoding="utf-8")
    compact = old.read_text(encoding="utf-8").replace("\n", "").replace("  ", "")
    (folder / "compact.json").write_text(compact, encoding="utf-8")
    sync_suite.pytester.makepyfile(test_pair="import pytest\n" + RENAMED)
    result = sync_suite.run("-v", "--record-mode=once")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            exact(summary(replayed=1, recorded=1, unused=2)),
            exact("  unused: cassettes/test_pair/compact.json"),
            exact("  unused: cassettes/test_pair/test_old.json"),
        ],
        consecutive=True,
    )


FAILED_OUTSIDE_THE_AGENT = """
import os

import httpx
import pytest


@pytest.mark.blackbox(record_mode="none")
def test_missing(blackbox):
    blackbox.finish(result="never")


@pytest.mark.blackbox
def test_fetch(blackbox):
    if os.environ.get("FETCH"):
        httpx.get("http://status.example.com/status")
    blackbox.finish(result="fetched")
"""


def test_missing_invalid_and_refused_are_counted_after_the_fixed_part_only_when_not_zero(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch
) -> None:
    bare_dir.makepyfile(test_counts=FAILED_OUTSIDE_THE_AGENT)
    first = bare_dir.runpytest(*QUIET, "-k", "test_fetch", "--record-mode=once")
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines([exact(summary(recorded=1, checked=False))])

    clean_env.setenv("FETCH", "1")  # a replay refuses a request that is not a model call
    offline = bare_dir.runpytest(*QUIET)
    offline.assert_outcomes(failed=2)
    offline.stdout.fnmatch_lines([exact(summary(missing=1, refused=1))])

    clean_env.setenv("CI", "true")  # recording in CI is refused
    in_ci = bare_dir.runpytest(*QUIET, "--record-mode=all")
    in_ci.assert_outcomes(failed=2)
    in_ci.stdout.fnmatch_lines([exact(summary(refused=2))])

    clean_env.delenv("CI")
    cassette = bare_dir.path / "cassettes" / "test_counts" / "test_fetch.json"
    cassette.write_text(cassette.read_text(encoding="utf-8").replace("fetched", "edited"), encoding="utf-8")
    edited = bare_dir.runpytest(*QUIET)
    edited.assert_outcomes(failed=2)
    edited.stdout.fnmatch_lines([exact(summary(missing=1, invalid=1))])


SHARD = """
def pytest_collection_modifyitems(config, items):
    \"\"\"A CI shard runs the first test; the other shard runs the rest (as pytest-split does).\"\"\"
    deselected = items[1:]
    items[:] = items[:1]
    config.hook.pytest_deselected(items=deselected)
"""


def test_a_ci_shard_does_not_check_unused_cassettes(sync_suite: Suite) -> None:
    _recorded_pair(sync_suite)
    sync_suite.pytester.makepyfile(test_pair="import pytest\n" + RENAMED)
    (sync_suite.pytester.path / "conftest.py").write_text(
        (sync_suite.pytester.path / "conftest.py").read_text(encoding="utf-8") + SHARD, encoding="utf-8"
    )
    for xdist in ((), ("-n", "2")):
        result = sync_suite.run(*xdist)
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines([exact(summary(replayed=1, checked=False))])


def test_last_failed_does_not_check_unused_cassettes(sync_suite: Suite) -> None:
    _recorded_pair(sync_suite)
    failing = "import pytest\n" + RENAMED.replace('result="kept")', 'result="kept")\n    assert 0')
    sync_suite.pytester.makepyfile(test_pair=failing)
    first = sync_suite.pytester.runpytest(*OTHER_PLUGINS_OFF, "--record-mode=once")
    first.assert_outcomes(passed=1, failed=1)
    first.stdout.fnmatch_lines([exact(summary(recorded=1, unused=1))])
    sync_suite.pytester.makepyfile(test_pair="import pytest\n" + RENAMED)
    rerun = sync_suite.pytester.runpytest(*OTHER_PLUGINS_OFF, "--lf")
    rerun.assert_outcomes(passed=1)
    rerun.stdout.fnmatch_lines([exact(summary(replayed=1, checked=False))])


def test_a_module_that_failed_to_import_does_not_check_unused_cassettes(sync_suite: Suite) -> None:
    _recorded_pair(sync_suite)
    sync_suite.pytester.makepyfile(test_broken="import no_such_module\n")
    result = sync_suite.run("--continue-on-collection-errors")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([exact(summary(replayed=2, checked=False))])
