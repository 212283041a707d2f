"""Record modes end to end: none, once, new_episodes, all, rewrite, on sync and async agents."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.cli import main as blackbox_cli

from .conftest import ANSWERS, Suite, exact, summary


def test_once_records_then_a_replay_needs_no_provider(suite: Suite) -> None:
    suite.write()
    first = suite.run("--record-mode=once")
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines([exact(summary(recorded=1))])
    report = verify_trace(suite.cassette())
    assert report.ok, report.first_failure
    trace = suite.load()
    assert trace["id"] == "test_weather"
    assert [step["type"] for step in trace["steps"]] == [
        *["model_input", "model_output", "tool_call", "tool_result"] * 2,
        "model_input",
        "model_output",
        "metadata",
    ]
    assert trace["steps"][-1]["payload"] == {
        "event": "run_completed",
        "status": "success",
        "result": ANSWERS["Paris"],
    }
    recorded = suite.cassette().read_bytes()

    second = suite.run()  # default mode none: the inner conftest hands out a closed port
    second.assert_outcomes(passed=1)
    second.stdout.fnmatch_lines([exact(summary(replayed=1))])
    assert suite.cassette().read_bytes() == recorded


def test_once_with_a_cassette_replays_it(suite: Suite) -> None:
    suite.write()
    suite.run("--record-mode=once").assert_outcomes(passed=1)
    recorded = suite.cassette().read_bytes()
    again = suite.run("--record-mode=once")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines([exact(summary(replayed=1))])
    assert suite.cassette().read_bytes() == recorded


def test_none_without_a_cassette_fails_with_the_command_that_records_it(suite: Suite) -> None:
    suite.write()
    result = suite.run()
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            exact(
                "blackbox: no cassette at cassettes/test_weather/test_weather.json, "
                'and record mode "none" only replays'
            ),
            exact("record it with: pytest test_weather.py::test_weather --record-mode=once"),
        ],
        consecutive=True,
    )
    assert not suite.cassette().exists()


@pytest.mark.parametrize("mode", ["all", "rewrite"])
def test_re_recording_an_unchanged_run_keeps_the_cassette_byte_for_byte(sync_suite: Suite, mode: str) -> None:
    """The same run recorded again differs only in timestamps and hashes: no git churn.

    One module of each flavor, so one inner run covers both (test_xdist.py does the same under xdist)."""
    suite = sync_suite
    suite.write()
    replace(suite, flavor="async").write(name="test_other")
    suite.run("--record-mode=once").assert_outcomes(passed=2)
    old = {module: suite.cassette(module).read_bytes() for module in ("test_weather", "test_other")}
    result = suite.run(f"--record-mode={mode}")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([exact(summary(unchanged=2))])
    assert not any(line.startswith("  changed:") for line in result.stdout.lines)
    assert {module: suite.cassette(module).read_bytes() for module in old} == old
    for module in old:
        assert [p.name for p in suite.cassette(module).parent.iterdir()] == ["test_weather.json"]


@pytest.mark.parametrize("mode", ["all", "rewrite"])
def test_re_recording_a_changed_run_replaces_the_cassette_and_says_where_it_changed(
    suite: Suite, mode: str
) -> None:
    """test_xdist.py does the same under xdist, for both flavors in one inner run."""
    suite.write()
    suite.run("--record-mode=once").assert_outcomes(passed=1)
    old = suite.load()
    suite.pytester._monkeypatch.setenv("WEATHER_CITY", "Oslo")
    result = suite.run(f"--record-mode={mode}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            exact(summary(recorded=1)),
            exact(
                "  changed: cassettes/test_weather/test_weather.json "
                "(step 0 model_input: messages[0].content)"
            ),
        ],
        consecutive=True,
    )
    new = suite.load()
    assert new["steps"][0]["payload"]["messages"][0]["content"] == "What is the weather in Oslo?"
    assert new["steps"][0]["hash"] != old["steps"][0]["hash"]
    assert verify_trace(suite.cassette()).ok


def test_all_keeps_the_old_cassette_when_the_test_fails(suite: Suite) -> None:
    suite.write()
    suite.run("--record-mode=once").assert_outcomes(passed=1)
    old = suite.cassette().read_bytes()
    suite.pytester._monkeypatch.setenv("WEATHER_FAIL", "1")
    result = suite.run("--record-mode=all")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*Failed: the test failed after the agent answered",
            "*- blackbox -*",
            exact("blackbox: cassettes/test_weather/test_weather.json was not written: the test failed"),
        ]
    )
    result.stdout.fnmatch_lines([exact(summary(not_written=1))])
    assert suite.cassette().read_bytes() == old
    assert [p.name for p in suite.cassette().parent.iterdir()] == ["test_weather.json"]


def test_rewrite_keeps_the_old_cassette_when_the_test_fails(suite: Suite) -> None:
    suite.write()
    suite.run("--record-mode=once").assert_outcomes(passed=1)
    old = suite.cassette().read_bytes()
    suite.pytester._monkeypatch.setenv("WEATHER_FAIL", "1")
    result = suite.run("--record-mode=rewrite")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([exact(summary(not_written=1))])
    assert suite.cassette().read_bytes() == old
    assert [p.name for p in suite.cassette().parent.iterdir()] == ["test_weather.json"]


def test_a_failing_test_never_writes_a_first_cassette(suite: Suite) -> None:
    suite.write()
    suite.pytester._monkeypatch.setenv("WEATHER_FAIL", "1")
    result = suite.run("--record-mode=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([exact(summary(not_written=1))])
    folder = suite.cassette().parent
    assert not folder.exists() or list(folder.iterdir()) == []  # no pending file left behind either


TWO_CITIES = """
@pytest.mark.blackbox
DEF test_two_cities(blackbox, anthropic_options):
    first = AWAIT ask(blackbox, anthropic_options, "Paris")
    second = AWAIT ask(blackbox, anthropic_options, os.environ.get("SECOND_CITY", "Oslo"))
    assert (first, second) == (PARIS, ANSWERS[os.environ.get("SECOND_CITY", "Oslo")])
"""


def _two_cities(suite: Suite) -> None:
    answers = json.dumps(ANSWERS, ensure_ascii=False)
    suite.write(body=f"\nANSWERS = {answers}\nPARIS = ANSWERS['Paris']\n" + TWO_CITIES)


def test_new_episodes_replays_what_matches_and_records_from_the_first_divergence(
    suite: Suite, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_cities(suite)
    suite.run("--record-mode=once").assert_outcomes(passed=1)
    path = suite.cassette(test="test_two_cities")
    old_text = path.read_text(encoding="utf-8")
    old = json.loads(old_text)

    unchanged = suite.run("--record-mode=new_episodes")
    unchanged.assert_outcomes(passed=1)
    unchanged.stdout.fnmatch_lines([exact(summary(replayed=1))])
    assert path.read_text(encoding="utf-8") == old_text

    suite.pytester._monkeypatch.setenv("SECOND_CITY", "Lima")
    changed = suite.run("--record-mode=new_episodes")
    changed.assert_outcomes(passed=1)
    changed.stdout.fnmatch_lines([exact(summary(recorded=1))])
    new = json.loads(path.read_text(encoding="utf-8"))
    assert new["id"] == old["id"] == "test_two_cities"
    assert new["createdAt"] == old["createdAt"]
    assert new["steps"][:10] == old["steps"][:10]  # the first question's steps, copied verbatim
    assert new["steps"][10]["prevHash"] == old["steps"][9]["hash"]
    assert new["steps"][10]["payload"]["messages"][0]["content"] == "What is the weather in Lima?"
    assert new["steps"][-1]["payload"]["result"] == ANSWERS["Lima"]
    assert verify_trace(path).ok

    saved = tmp_path_factory.mktemp("old") / "old.json"
    saved.write_text(old_text, encoding="utf-8")
    capsys.readouterr()
    assert blackbox_cli(["diff", str(saved), str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "Shared prefix:  10 step(s)" in lines
    assert "First divergence at index 10" in lines

    replay = suite.run()
    replay.assert_outcomes(passed=1)
    replay.stdout.fnmatch_lines([exact(summary(replayed=1))])


def test_new_episodes_without_a_cassette_records(suite: Suite) -> None:
    suite.write()
    result = suite.run("--record-mode=new_episodes")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([exact(summary(recorded=1))])
    assert verify_trace(suite.cassette()).ok
