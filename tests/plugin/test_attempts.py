"""Every attempt of a test gets a session of its own, however the session is obtained.

A rerun (pytest-rerunfailures) or a repetition (pytest-repeat) replays the same cassette from the
start; a session obtained in the test body (``request.getfixturevalue``, a doctest's ``getfixture``)
has exactly the fixture's semantics. Every replay runs with ``CI`` set and must send nothing.
"""

from __future__ import annotations

import pytest

from .conftest import ANSWERS, Counted, exact, summary

XDIST = [pytest.param((), id="serial"), pytest.param(("-n", "2"), id="xdist")]

FLAKY = """
import pathlib


@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    answer = AWAIT ask(blackbox, anthropic_options, city())
    attempted = pathlib.Path("attempted")
    if not attempted.exists():
        attempted.touch()
        pytest.fail("the first attempt fails")
    assert answer.endswith(" in " + city() + ".")
"""


@pytest.mark.parametrize("xdist", XDIST)
def test_a_rerun_replays_the_cassette_again_from_a_fresh_session(
    counted: Counted, xdist: tuple[str, ...]
) -> None:
    counted.write(body=FLAKY)
    recorded = counted.run(*xdist, "--reruns=1", "--record-mode=once")
    assert recorded.parseoutcomes() == {"passed": 1, "rerun": 1}
    recorded.stdout.fnmatch_lines([exact(summary(recorded=1))])  # the attempt that counts
    assert counted.sent == 6  # the failed attempt's recording was dropped, the rerun recorded again
    cassette = counted.cassette().read_bytes()

    (counted.pytester.path / "attempted").unlink()
    counted.pytester._monkeypatch.setenv("CI", "1")
    replayed = counted.run(*xdist, "--reruns=1")
    assert replayed.parseoutcomes() == {"passed": 1, "rerun": 1}
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1))])
    assert "the session has finished" not in replayed.stdout.str()
    assert counted.sent == 6
    assert counted.cassette().read_bytes() == cassette


@pytest.mark.parametrize("xdist", XDIST)
def test_every_repetition_replays_the_one_cassette(counted: Counted, xdist: tuple[str, ...]) -> None:
    counted.write()
    recorded = counted.run("--count=3", "--record-mode=once")
    recorded.assert_outcomes(passed=3)
    recorded.stdout.fnmatch_lines([exact(summary(replayed=2, recorded=1))])
    assert [p.name for p in counted.cassette().parent.iterdir()] == ["test_weather.json"]
    assert counted.sent == 3

    counted.pytester._monkeypatch.setenv("CI", "1")
    replayed = counted.run(*xdist, "--count=3")
    replayed.assert_outcomes(passed=3)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=3))])
    assert counted.sent == 3


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
