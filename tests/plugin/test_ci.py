"""With ``CI`` set, no mode that could reach the network runs unless ``--blackbox-allow-record``."""

from __future__ import annotations

import os

import pytest

from .conftest import Suite, exact, summary


def _refusal(mode: str, record_with: str) -> list[str]:
    return [
        exact(
            "blackbox: refusing to record cassettes/test_weather/test_weather.json in CI (the CI environment "
            f'variable is set): record mode "{mode}" would call the real model'
        ),
        exact(
            "record it locally and commit it: "
            f"pytest test_weather.py::test_weather --record-mode={record_with}"
        ),
        exact("or allow recording in CI with --blackbox-allow-record"),
    ]


def test_once_with_a_missing_cassette_is_refused_in_ci(suite: Suite) -> None:
    suite.write()
    suite.pytester._monkeypatch.setenv("CI", "true")
    result = suite.run("--record-mode=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*_ test_weather _*", *_refusal("once", "once")], consecutive=True)
    assert not suite.cassette().exists()


@pytest.mark.parametrize("mode", ["all", "rewrite", "new_episodes"])
def test_modes_that_record_over_a_cassette_are_refused_in_ci(sync_suite: Suite, mode: str) -> None:
    sync_suite.write()
    sync_suite.run("--record-mode=once").assert_outcomes(passed=1)
    before = sync_suite.cassette().read_bytes()
    sync_suite.pytester._monkeypatch.setenv("CI", "1")
    result = sync_suite.run(f"--record-mode={mode}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(_refusal(mode, mode), consecutive=True)
    assert sync_suite.cassette().read_bytes() == before  # rewrite did not delete it first


def test_replaying_is_fine_in_ci(sync_suite: Suite) -> None:
    sync_suite.write()
    sync_suite.run("--record-mode=once").assert_outcomes(passed=1)
    sync_suite.pytester._monkeypatch.setenv("CI", "true")
    for args in ((), ("--record-mode=once",)):
        result = sync_suite.run(*args)
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines([exact(summary(replayed=1))])


def test_allow_record_lets_ci_record(sync_suite: Suite) -> None:
    sync_suite.write()
    sync_suite.pytester._monkeypatch.setenv("CI", "true")
    result = sync_suite.run("--record-mode=once", "--blackbox-allow-record")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([exact(summary(recorded=1))])


@pytest.mark.parametrize("value", ["", "0", "false", "False"])
def test_a_false_ci_value_is_not_ci(sync_suite: Suite, value: str) -> None:
    sync_suite.write()
    sync_suite.pytester._monkeypatch.setenv("CI", value)
    sync_suite.run("--record-mode=once").assert_outcomes(passed=1)


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_in_ci_each_failure_block_prints_once(sync_suite: Suite, xdist: tuple[str, ...]) -> None:
    """pytest's short summary repeats a failure's whole message when CI is set: it gets the first line."""
    sync_suite.write()
    sync_suite.run("--record-mode=once").assert_outcomes(passed=1)
    sync_suite.write(name="test_missing")
    sync_suite.pytester._monkeypatch.setenv("CI", "true")
    sync_suite.pytester._monkeypatch.setenv("WEATHER_CITY", "Oslo")
    result = sync_suite.run(*xdist, "--record-mode=once")
    result.assert_outcomes(failed=2)
    output = result.stdout.str()
    for line in ('  actual:   "What is the weather in Oslo?"', _refusal("once", "once")[-1]):
        assert output.count(line) == 1, output
    assert sorted(line for line in result.stdout.lines if line.startswith("FAILED ")) == [
        "FAILED test_missing.py::test_weather - Failed: blackbox: refusing to record "
        "cassettes/test_missing/test_weather.json in CI (the CI environment variable is set): "
        'record mode "once" would call the real model',
        "FAILED test_weather.py::test_weather - blackbox: replay diverged at step 0, messages[0].content",
    ]


def test_the_suites_own_pytester_runs_do_not_inherit_ci(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """The CI machine sets ``CI=1``: an inner run that records must not see it unless its test sets
    it, whichever fixtures that test asked for (``tests/conftest.py`` wraps ``pytester``)."""
    monkeypatch.setenv("CI", "1")
    request.getfixturevalue("pytester")
    assert "CI" not in os.environ
