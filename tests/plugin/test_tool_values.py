"""A wrapped tool's value reaches the agent in the cassette's key order while recording, so a fresh
recording replays: an object with an array-index key (``"2024"``) is handed over with that key first,
as JavaScript orders it, the cassette stores it and a replay hands it back."""

from __future__ import annotations

from .conftest import Suite, exact, summary

#: The weather tool returns an object whose year key JavaScript (and the cassette) puts first; the
#: agent writes the value into its next request with ``json.dumps``, key order included.
KEYED_TEST = """
import agent


def keyed_weather(city):
    return {**agent.get_weather(city), "2024": "the hottest year on record"}


TOOLS["get_weather"] = keyed_weather


@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    answer = AWAIT ask(blackbox, anthropic_options, city())
    assert answer.endswith(" in " + city() + ".")
"""


def test_a_fresh_recording_of_a_tool_value_with_an_index_key_replays(suite: Suite) -> None:
    suite.write(body=KEYED_TEST)
    suite.run("--record-mode=once").assert_outcomes(passed=1)
    steps = suite.load()["steps"]
    sent_back = steps[4]["payload"]["messages"][2]["content"][0]["result"]
    assert sent_back.startswith('{"2024": "the hottest year on record", "city": "Paris"')
    replay = suite.run()
    replay.assert_outcomes(passed=1)
    replay.stdout.fnmatch_lines([exact(summary(replayed=1))])
