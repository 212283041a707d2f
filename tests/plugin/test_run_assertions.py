"""``blackbox.run`` and the assertions on what the agent did: the same in the recording and its replay."""

from __future__ import annotations

import pytest

from .conftest import Suite

CHECKS = """
@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    answer = AWAIT ask(blackbox, anthropic_options, "Paris")
    run = blackbox.run
    assert run.tools == ["get_weather", "celsius_to_fahrenheit"]
    first, second = run.tool_calls
    assert (first.input, first.result, first.error) == (
        {"city": "Paris"}, {"city": "Paris", "celsius": 21, "conditions": "sunny"}, None
    )
    assert (second.input, second.result) == ({"celsius": 21}, 69.8)
    assert [call.tool_requests for call in run.model_calls] == [
        ["get_weather"], ["celsius_to_fahrenheit"], []
    ]
    assert run.model_calls[0].input["messages"][0]["content"] == "What is the weather in Paris?"
    assert (run.final_answer, run.status) == (answer, None)
    blackbox.assert_tools("get_weather", "celsius_to_fahrenheit")
    blackbox.assert_tool_called("get_weather", times=1, input={"city": "Paris"})
    blackbox.assert_tool_called("celsius_to_fahrenheit")
    blackbox.assert_not_called("book_flight")
    blackbox.finish(result=answer)
    blackbox.assert_outcome("success", final_answer=answer)
"""

WRONG = """
@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    AWAIT ask(blackbox, anthropic_options, "Paris")
    EXPECTATION
"""

CALLS = [
    'E         1. get_weather({"city": "Paris"}) -> {"city": "Paris", "celsius": 21, "conditions": "sunny"}',
    'E         2. celsius_to_fahrenheit({"celsius": 21}) -> 69.8',
]


def test_the_run_reads_the_same_recorded_and_replayed(suite: Suite) -> None:
    suite.write(body=CHECKS)
    suite.run("--record-mode=once").assert_outcomes(passed=1)
    suite.pytester._monkeypatch.setenv("CI", "true")
    suite.run().assert_outcomes(passed=1)  # replayed: no tool ran, the same calls are seen


@pytest.mark.parametrize(
    ("expectation", "verdict"),
    [
        (
            'blackbox.assert_tools("get_weather")',
            "tools called: expected get_weather, got get_weather, celsius_to_fahrenheit",
        ),
        (
            'blackbox.assert_tool_called("get_weather", input={"city": "Oslo"})',
            'get_weather was called 0 times with input {"city": "Oslo"}, expected at least once',
        ),
        (
            'blackbox.assert_tool_called("celsius_to_fahrenheit", times=2)',
            "celsius_to_fahrenheit was called once, expected 2 times",
        ),
        (
            'blackbox.assert_not_called("get_weather")',
            "get_weather was called once, expected 0 times",
        ),
        (
            'blackbox.assert_outcome(final_answer="Sunny.")',
            'final answer: expected "Sunny.", got "It is 21 °C (69.8 °F) and sunny in Paris."',
        ),
    ],
)
def test_a_failed_assertion_reads_like_pytests(suite: Suite, expectation: str, verdict: str) -> None:
    """The same lines when the run records (nothing is written) and when it replays."""
    wrong = WRONG.replace("EXPECTATION", expectation)
    expected = [
        f">       {expectation}",
        f"E       AssertionError: blackbox: {verdict}",
        "E       tool calls so far:",
        *CALLS,
    ]
    suite.write(body=wrong)
    recording = suite.run("--record-mode=once")
    recording.assert_outcomes(failed=1)
    recording.stdout.fnmatch_lines([line.replace("[", "[[]") for line in expected], consecutive=True)
    assert not suite.cassette().exists()
    suite.write(body=CHECKS)
    suite.run("--record-mode=once").assert_outcomes(passed=1)
    suite.write(body=wrong)
    suite.pytester._monkeypatch.setenv("CI", "true")
    replaying = suite.run()
    replaying.assert_outcomes(failed=1)
    replaying.stdout.fnmatch_lines([line.replace("[", "[[]") for line in expected], consecutive=True)
