"""What a failing cassette test prints: the blackbox block, the user's frames, nothing from inside."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pytest_blackbox.trace.io import load_trace, save_trace
from pytest_blackbox.trace.recorder import TraceRecorder
from tests.analysis.conftest import rechain

from .conftest import ANSWERS, Suite, exact, summary

REQUEST_HINT = (
    "The agent sent a different request than the one recorded. If the difference comes from something "
    "nondeterministic (a timestamp, a random id), rerun with --blackbox-match=sequence."
)
DIVERGENCE_BLOCK = [
    "blackbox: replay diverged at step 0, messages[0].content",
    '  recorded: "What is the weather in Paris?"',
    '  actual:   "What is the weather in Oslo?"',
    REQUEST_HINT,
    "cassette: cassettes/test_weather/test_weather.json",
    "re-record: pytest test_weather.py::test_weather --record-mode=all",
]


def frame(path: Path, function: str, statement: str) -> list[str]:
    """The two lines a user frame is shown as; the line number is found in the file itself."""
    lines = path.read_text(encoding="utf-8").splitlines()
    numbers = [n for n, line in enumerate(lines, 1) if line.strip() == statement]
    assert len(numbers) == 1, (path, statement)
    return [f"{path.name}:{numbers[0]}: in {function}", f"    {statement}"]


def _recorded(suite: Suite, body: str | None = None) -> Path:
    test_file = suite.write() if body is None else suite.write(body=body)
    suite.run("--record-mode=once").assert_outcomes(passed=1)
    return test_file


def test_a_changed_prompt_shows_the_divergence_and_only_user_frames(suite: Suite) -> None:
    test_file = _recorded(suite)
    suite.pytester._monkeypatch.setenv("WEATHER_CITY", "Oslo")
    agent = suite.pytester.path / "agent.py"
    if suite.flavor == "sync":
        frames = [
            *frame(test_file, "test_weather", "answer = ask(blackbox, anthropic_options, city())"),
            *frame(
                test_file,
                "ask",
                'return run_agent(client, f"What is the weather in {city}?", blackbox.tools(TOOLS))',
            ),
            *frame(agent, "run_agent", "response = client.messages.create(**_request(messages))"),
        ]
    else:
        frames = [
            *frame(test_file, "test_weather", "answer = await ask(blackbox, anthropic_options, city())"),
            *frame(
                test_file,
                "ask",
                "return await run_agent_async("
                'client, f"What is the weather in {city}?", blackbox.tools(TOOLS))',
            ),
            *frame(agent, "run_agent_async", "response = await client.messages.create(**_request(messages))"),
        ]
    result = suite.fails_with(
        [
            *DIVERGENCE_BLOCK,
            "",
            *frames,
            "E   anthropic.BadRequestError: the blackbox error above",
            summary(diverged=1),
        ]
    )
    result.stdout.fnmatch_lines(
        ["FAILED test_weather.py::test_weather - blackbox: replay diverged at step 0*"]
    )
    output = result.stdout.str()
    assert "site-packages" not in output
    assert "pytest_blackbox" not in output
    assert "Traceback" not in output


CARELESS = """
@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    try:
        answer = AWAIT ask(blackbox, anthropic_options, city())
    except Exception:  # a careless agent: any failure becomes an apology
        answer = "Sorry, no weather today."
    assert answer
"""


def test_an_agent_that_swallows_the_sdk_error_still_fails(suite: Suite) -> None:
    _recorded(suite, CARELESS)
    suite.pytester._monkeypatch.setenv("WEATHER_CITY", "Oslo")
    result = suite.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*_ test_weather _*", *(exact(line) for line in DIVERGENCE_BLOCK), exact(summary(diverged=1))],
        consecutive=True,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


ONE_OR_TWO = """
@pytest.mark.blackbox
DEF test_two_cities(blackbox, anthropic_options):
    try:
        AWAIT ask(blackbox, anthropic_options, "Paris")
        if not os.environ.get("ONE_CITY"):
            AWAIT ask(blackbox, anthropic_options, "Oslo")
    except Exception:
        pass
"""


def test_recorded_steps_the_agent_never_reached_fail_the_test(suite: Suite) -> None:
    _recorded(suite, ONE_OR_TWO)
    suite.pytester._monkeypatch.setenv("ONE_CITY", "1")
    suite.fails_with(
        [
            "blackbox: replay diverged at step 10, end of run",
            "  recorded: 3 more model call(s)",
            "  actual:   the agent finished",
            "cassette: cassettes/test_weather/test_two_cities.json",
            "re-record: pytest test_weather.py::test_two_cities --record-mode=all",
            summary(diverged=1),
        ]
    )


def _hand_edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= 1
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_hand_edited_cassette_fails_with_the_verify_report(suite: Suite) -> None:
    _recorded(suite)
    _hand_edit(suite.cassette(), '"conditions": "sunny"', '"conditions": "sunnY"')
    result = suite.fails_with(
        [
            "blackbox: the cassette failed verification: hash_chain at step 3",
            "  schema_version       pass  version 2",
            "  hash_chain           fail  `cassettes/test_weather/test_weather.json` failed its "
            "hash-chain check: step 3: stored hash does not match its contents (the cassette was edited "
            "or corrupted after recording)",
            "  provider_neutrality  skip  skipped",
            "  replayability        skip  skipped",
            "A step's stored hash no longer matches its contents, or the chain links are broken — the "
            "cassette was edited or corrupted after recording. Do not hand-edit cassettes; re-record to "
            "regenerate a valid chain.",
            "cassette: cassettes/test_weather/test_weather.json",
            "re-record: pytest test_weather.py::test_weather --record-mode=all",
            summary(invalid=1),
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_cassette_that_is_not_json_fails_at_schema_version(sync_suite: Suite) -> None:
    _recorded(sync_suite)
    _hand_edit(sync_suite.cassette(), '"version": 2,', '"version": 2')
    result = sync_suite.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "blackbox: the cassette failed verification: schema_version",
            "  schema_version       fail  *cassettes/test_weather/test_weather.json* line 3*",
            "  hash_chain           skip  skipped (load failed)",
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(
        [
            exact(
                "The cassette is missing a version, unsupported, malformed, or unreadable. Older cassettes "
                "are not migrated — re-record the run (the command below)."
            ),
            "cassette: cassettes/test_weather/test_weather.json",
            exact("re-record: pytest test_weather.py::test_weather --record-mode=all"),
        ],
        consecutive=True,
    )
    assert "blackbox record" not in result.stdout.str()


def test_a_cassette_with_a_provider_id_fails_at_provider_neutrality(sync_suite: Suite) -> None:
    _recorded(sync_suite)
    trace = load_trace(sync_suite.cassette())
    recorder = TraceRecorder(trace["id"], trace["createdAt"])
    for step in trace["steps"]:
        payload = step["payload"]
        if step["index"] == 2:
            payload = {**payload, "toolName": "toolu_01X2"}
        recorder.append(step["type"], payload, step["timestamp"])
    save_trace(recorder.trace(), sync_suite.cassette())
    result = sync_suite.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "blackbox: the cassette failed verification: provider_neutrality at step 2",
            "  schema_version       pass  version 2",
            "  hash_chain           pass  11 step(s), chain intact",
            "  provider_neutrality  fail  markers: toolu_",
            "  replayability        skip  skipped",
        ],
        consecutive=True,
    )


FINISHING = """
@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    answer = AWAIT ask(blackbox, anthropic_options, city())
    report = blackbox.finish(result="answer: " + answer)
    assert (report.mode, report.status) == (os.environ["EXPECT_MODE"], "success")
    if os.environ.get("WEATHER_FAIL"):
        pytest.fail("the test failed after finish()")
"""


def test_a_test_may_call_finish_itself(suite: Suite) -> None:
    suite.write(body=FINISHING)
    monkeypatch = suite.pytester._monkeypatch
    monkeypatch.setenv("EXPECT_MODE", "record")
    monkeypatch.setenv("WEATHER_FAIL", "1")
    failed = suite.run("--record-mode=once")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines([exact(summary(not_written=1))])
    assert not suite.cassette().exists()  # finish() ran, but the test failed after it

    monkeypatch.delenv("WEATHER_FAIL")
    recorded = suite.run("--record-mode=once")
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines([exact(summary(recorded=1))])
    assert suite.load()["steps"][-1]["payload"] == {
        "event": "run_completed",
        "status": "success",
        "result": "answer: " + ANSWERS["Paris"],
    }

    monkeypatch.setenv("EXPECT_MODE", "replay")
    replayed = suite.run()
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1))])


MARKER_ONLY = """
from fake_model import respond
from pytest_blackbox.testing.fake_provider import FakeProvider


@pytest.mark.blackbox
def test_marker_only():
    with FakeProvider(respond=respond) as fake:
        client = anthropic.Anthropic(base_url=fake.anthropic_base_url, api_key="fake-provider-key")
        assert run_agent(client, "What is the weather in Paris?") == PARIS
        served = len(fake.requests)
    assert served == int(os.environ["EXPECT_SERVED"])
"""


def test_a_marked_test_is_intercepted_without_the_fixture(sync_suite: Suite) -> None:
    sync_suite.write(body=f"\nPARIS = {json.dumps(ANSWERS['Paris'], ensure_ascii=False)}\n" + MARKER_ONLY)
    monkeypatch = sync_suite.pytester._monkeypatch
    monkeypatch.setenv("EXPECT_SERVED", "3")
    sync_suite.run("--record-mode=once").assert_outcomes(passed=1)
    steps = sync_suite.load(test="test_marker_only")["steps"]
    assert [s["type"] for s in steps] == ["model_input", "model_output"] * 3 + ["metadata"]
    monkeypatch.setenv("EXPECT_SERVED", "0")  # the replay answers everything: the fake sees nothing
    result = sync_suite.run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([exact(summary(replayed=1))])


FIXTURE_ONLY = """
DEF test_fixture_only(blackbox, anthropic_options):
    assert (AWAIT ask(blackbox, anthropic_options, city())).endswith("in Paris.")
"""


def test_the_fixture_alone_records_and_replays(suite: Suite) -> None:
    suite.write(body=FIXTURE_ONLY)
    suite.run("--record-mode=once").stdout.fnmatch_lines([exact(summary(recorded=1))])
    assert suite.cassette(test="test_fixture_only").is_file()
    suite.run().stdout.fnmatch_lines([exact(summary(replayed=1))])


def test_a_long_traceback_is_kept_and_the_block_added_below(sync_suite: Suite) -> None:
    _recorded(sync_suite)
    sync_suite.pytester._monkeypatch.setenv("WEATHER_CITY", "Oslo")
    result = sync_suite.run("--tb=long")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*anthropic/_base_client.py:*: BadRequestError",
            "*- blackbox -*",
            *(exact(line) for line in DIVERGENCE_BLOCK),
        ]
    )


SEARCH_RESULT = """
@pytest.mark.blackbox
def test_search_result(blackbox, anthropic_options):
    client = anthropic.Anthropic(**anthropic_options)
    found = {
        "type": "search_result",
        "source": "https://example.com/clouds",
        "title": "Clouds",
        "content": [{"type": "text", "text": "Cumulus clouds are puffy."}],
    }
    client.messages.create(
        model="claude-haiku-4-5", max_tokens=64, messages=[{"role": "user", "content": [found]}]
    )
"""


STATEMENT = 'ask(blackbox, {"base_url": anthropic_options["base_url"]}, city())'
NO_KEY = f"""
@pytest.mark.blackbox
def test_weather(blackbox, anthropic_options):
    {STATEMENT}
"""


@pytest.mark.parametrize(
    ("body", "test", "statement", "error", "counted"),
    [
        pytest.param(
            SEARCH_RESULT,
            "test_search_result",
            "client.messages.create(",
            'blackbox: "search_result" content blocks is not supported yet; *'
            " (messages[[]0[]].content[[]0[]])",
            summary(unsupported=1),
            id="unsupported-field",
        ),
        pytest.param(
            NO_KEY,
            "test_weather",
            STATEMENT,
            "blackbox: recording needs a real key: this request carries the offline placeholder key *",
            summary(not_written=1),
            id="placeholder-key",
        ),
    ],
)
def test_a_refused_recording_writes_nothing_and_says_so_once(
    sync_suite: Suite, body: str, test: str, statement: str, error: str, counted: str
) -> None:
    """The block names the cassette as not written; no note under it says so again."""
    test_file = sync_suite.write(body=body)
    result = sync_suite.run("--record-mode=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            error,
            exact(f"cassette: cassettes/test_weather/{test}.json (not written: the test failed)"),
            "",
            *(exact(line) for line in frame(test_file, test, statement)),
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(
        [exact("E   anthropic.BadRequestError: the blackbox error above"), exact(counted)]
    )
    assert result.stdout.str().count("not written: the test failed") == 1
    assert not sync_suite.cassette(test=test).exists()


def test_a_rehashed_cassette_whose_tool_round_disagrees_is_refused_before_the_agent_runs(
    suite: Suite,
) -> None:
    _recorded(suite)
    path = suite.cassette()
    trace = copy.deepcopy(load_trace(path))
    for step in trace["steps"]:
        if step["type"] in ("tool_call", "tool_result"):
            step["payload"]["toolCallId"] = "call-9"
    save_trace(rechain(trace), path)
    result = suite.fails_with(
        [
            "blackbox: step 2: its tool_call get_weather has toolCallId call-9, but the model_output at "
            "step 1 announced call-0; this cassette's tool rounds disagree with its model output, so it "
            "cannot be replayed (record it again)",
            "cassette: cassettes/test_weather/test_weather.json",
            "re-record: pytest test_weather.py::test_weather --record-mode=all",
            summary(invalid=1),
        ]
    )
    assert "Traceback" not in result.stdout.str()
