"""Every attempt of a test gets a session of its own, however the session is obtained.

A rerun (pytest-rerunfailures) or a repetition (pytest-repeat) replays the same cassette from the
start; a session obtained in the test body (``request.getfixturevalue``, a doctest's ``getfixture``)
has exactly the fixture's semantics. Every replay runs with ``CI`` set and must send nothing.
"""

from __future__ import annotations

from dataclasses import replace

from .conftest import ANSWERS, WEATHER_TEST, Counted, exact, summary

FLAKY = """
import pathlib


@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    answer = AWAIT ask(blackbox, anthropic_options, city())
    attempted = pathlib.Path("attempted-" + __name__)
    if not attempted.exists():
        attempted.touch()
        pytest.fail("the first attempt fails")
    assert answer.endswith(" in " + city() + ".")
"""


def _both_flavors(counted: Counted, body: str = WEATHER_TEST) -> list[str]:
    """One module of each flavor in the one directory, so one inner run (costly under xdist) covers
    both; the module names."""
    modules = {"sync": "test_sync", "async": "test_async"}
    for flavor, module in modules.items():
        replace(counted, flavor=flavor).write(name=module, body=body)
    return list(modules.values())


def test_a_rerun_replays_the_cassette_again_from_a_fresh_session(counted_sync: Counted) -> None:
    counted = counted_sync
    modules = _both_flavors(counted, FLAKY)
    recorded = counted.run("--reruns=1", "--record-mode=once")
    assert recorded.parseoutcomes() == {"passed": 2, "rerun": 2}
    recorded.stdout.fnmatch_lines([exact(summary(recorded=2))])  # the attempts that count
    assert counted.sent == 12  # each failed attempt's recording was dropped, each rerun recorded again
    cassettes = {module: counted.cassette(module).read_bytes() for module in modules}

    for module in modules:
        (counted.pytester.path / f"attempted-{module}").unlink()
    counted.pytester._monkeypatch.setenv("CI", "1")
    replayed = counted.run("--reruns=1")
    assert replayed.parseoutcomes() == {"passed": 2, "rerun": 2}
    replayed.stdout.fnmatch_lines([exact(summary(replayed=2))])
    assert "the session has finished" not in replayed.stdout.str()
    assert counted.sent == 12
    assert {module: counted.cassette(module).read_bytes() for module in modules} == cassettes


def test_every_repetition_replays_the_one_cassette(counted_sync: Counted) -> None:
    counted = counted_sync
    modules = _both_flavors(counted)
    recorded = counted.run("--count=3", "--record-mode=once")
    recorded.assert_outcomes(passed=6)
    recorded.stdout.fnmatch_lines([exact(summary(replayed=4, recorded=2))])
    for module in modules:
        assert [p.name for p in counted.cassette(module).parent.iterdir()] == ["test_weather.json"]
    assert counted.sent == 6

    counted.pytester._monkeypatch.setenv("CI", "1")
    replayed = counted.run("--count=3")
    replayed.assert_outcomes(passed=6)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=6))])
    assert counted.sent == 6


#: The standard scenario repeated three times by pytest-repeat's marker: a run can hold it beside
#: tests that are not repeated.
REPEATED = """
@pytest.mark.repeat(3)
@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    answer = AWAIT ask(blackbox, anthropic_options, city())
    assert answer.endswith(" in " + city() + ".")
"""


def test_reruns_and_repetitions_replay_their_cassettes_under_xdist(counted_sync: Counted) -> None:
    """The two tests above under ``-n 2``, in one inner run (two worker start-ups): per flavor, a flaky
    test rerun once that records, one rerun once that replays, and a test repeated three times."""
    counted = counted_sync
    flaky = _both_flavors(counted, FLAKY)
    replayed = {flavor: f"test_replayed_{flavor}" for flavor in ("sync", "async")}
    repeated = {flavor: f"test_repeated_{flavor}" for flavor in ("sync", "async")}
    for flavor in ("sync", "async"):
        replace(counted, flavor=flavor).write(name=replayed[flavor], body=FLAKY)
        replace(counted, flavor=flavor).write(name=repeated[flavor], body=REPEATED)
    before = [*replayed.values(), *repeated.values()]
    # one process: the first repetition records, the others replay it; each flaky test records twice
    first = counted.run("--reruns=1", "--record-mode=once", *[f"{module}.py" for module in before])
    assert first.parseoutcomes() == {"passed": 8, "rerun": 2}
    first.stdout.fnmatch_lines([exact(summary(replayed=4, recorded=4))])
    assert counted.sent == 18
    for module in replayed.values():
        (counted.pytester.path / f"attempted-{module}").unlink()
    cassettes = {module: counted.cassette(module).read_bytes() for module in before}

    result = counted.run("-n", "2", "--reruns=1", "--record-mode=once")
    assert result.parseoutcomes() == {"passed": 10, "rerun": 4}
    result.stdout.fnmatch_lines([exact(summary(replayed=8, recorded=2))])
    assert "the session has finished" not in result.stdout.str()
    assert counted.sent == 30  # the new flaky tests only: each failed attempt's recording was dropped
    assert {module: counted.cassette(module).read_bytes() for module in before} == cassettes
    for module in [*flaky, *before]:
        assert [p.name for p in counted.cassette(module).parent.iterdir()] == ["test_weather.json"]


DYNAMIC = """
DEF test_weather(request, anthropic_options):
    blackbox = request.getfixturevalue("blackbox")
    answer = AWAIT ask(blackbox, anthropic_options, city())
    assert answer.endswith(" in " + city() + ".")
"""


def test_a_session_obtained_in_the_test_body_has_the_fixtures_semantics(counted: Counted) -> None:
    counted.write(body=DYNAMIC)
    monkeypatch = counted.pytester._monkeypatch
    monkeypatch.setenv("CI", "1")
    missing = counted.run()
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(
        [
            "*_ test_weather _*",
            exact(
                "blackbox: no cassette at cassettes/test_weather/test_weather.json, "
                'and record mode "none" only replays'
            ),
            exact("record it with: pytest test_weather.py::test_weather --record-mode=once"),
        ],
        consecutive=True,
    )
    missing.stdout.fnmatch_lines([exact(summary(missing=1))])
    assert counted.sent == 0

    monkeypatch.delenv("CI")
    recorded = counted.run("--record-mode=once")
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines([exact(summary(recorded=1))])
    assert counted.load()["steps"][-1]["payload"]["result"] == ANSWERS["Paris"]
    assert counted.sent == 3

    monkeypatch.setenv("CI", "1")
    replayed = counted.run()
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1))])

    monkeypatch.setenv("WEATHER_CITY", "Oslo")
    diverged = counted.run()
    diverged.assert_outcomes(failed=1)
    diverged.stdout.fnmatch_lines(
        ["blackbox: replay diverged at step 0, messages[[]0[]].content", exact(summary(diverged=1))]
    )
    assert counted.sent == 3


DOCTEST = '''
"""The weather agent, with an example that records and replays.

>>> import os
>>> import anthropic
>>> from agent import TOOLS, run_agent
>>> blackbox = getfixture("blackbox")
>>> client = anthropic.Anthropic(base_url=os.environ["FAKE_PROVIDER_URL"], api_key="fake-provider-key")
>>> run_agent(client, "What is the weather in Paris?", blackbox.tools(TOOLS))
'It is 21 °C (69.8 °F) and sunny in Paris.'
"""
'''


def test_a_doctest_session_has_the_fixtures_semantics(counted_sync: Counted) -> None:
    counted_sync.pytester.makepyfile(weather_doc=DOCTEST)
    monkeypatch = counted_sync.pytester._monkeypatch
    args = ("--doctest-modules", "weather_doc.py")
    monkeypatch.setenv("CI", "1")
    missing = counted_sync.run(*args)
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(
        [
            exact(
                "blackbox: no cassette at cassettes/weather_doc/weather_doc.json, "
                'and record mode "none" only replays'
            ),
            exact("record it with: pytest weather_doc.py::weather_doc --record-mode=once"),
            exact(summary(missing=1)),
        ]
    )
    assert counted_sync.sent == 0

    monkeypatch.delenv("CI")
    recorded = counted_sync.run(*args, "--record-mode=once")
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines([exact(summary(recorded=1))])
    assert counted_sync.sent == 3

    monkeypatch.setenv("CI", "1")
    replayed = counted_sync.run(*args)
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1))])
    assert counted_sync.sent == 3
