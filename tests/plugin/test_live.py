"""Live mode (``--blackbox-disable``): blackbox tests call the provider and run their tools for real,
with no cassette read or written; the fixture still works."""

from __future__ import annotations

import pytest

from .conftest import Counted, exact, summary

LIVE = """
import pathlib


def counted_tools():
    \"\"\"The example's tools, each counting its real runs in a file.\"\"\"
    def counting(name, fn):
        def run(*args, **kwargs):
            ran = pathlib.Path("tool-runs")
            ran.write_text(str(int(ran.read_text()) + 1) if ran.exists() else "1")
            return fn(*args, **kwargs)
        return run
    return {name: counting(name, fn) for name, fn in TOOLS.items()}


@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    tools = counted_tools()
    wrapped = blackbox.tools(tools)
    answer = AWAIT RUN
    assert answer.endswith(" in " + city() + ".")
    # live, the tools run as they are; their calls are seen all the same
    assert blackbox.run.tools == ["get_weather", "celsius_to_fahrenheit"]
"""
QUESTION = 'f"What is the weather in {city()}?"'
RUN = {
    "sync": f"run_agent(anthropic.Anthropic(**anthropic_options), {QUESTION}, wrapped)",
    "async": f"run_agent_async(anthropic.AsyncAnthropic(**anthropic_options), {QUESTION}, wrapped)",
}


def _live(counted: Counted) -> None:
    counted.write(body=LIVE.replace("RUN", RUN[counted.flavor]))


def test_live_mode_calls_the_provider_and_runs_the_tools_without_a_cassette(counted: Counted) -> None:
    _live(counted)
    counted.pytester._monkeypatch.setenv("CI", "1")  # the flag is an explicit choice: CI may run live
    result = counted.run("--blackbox-disable")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([exact(summary(live=1))])
    assert counted.sent == 3
    assert (counted.pytester.path / "tool-runs").read_text() == "2"
    assert not (counted.pytester.path / "cassettes").exists()


def test_live_mode_neither_reads_nor_writes_an_existing_cassette(counted_sync: Counted) -> None:
    _live(counted_sync)
    counted_sync.run("--record-mode=once").assert_outcomes(passed=1)
    recorded = counted_sync.cassette().read_bytes()
    counted_sync.pytester._monkeypatch.setenv("WEATHER_CITY", "Oslo")  # a replay would diverge
    for mode in ("none", "all"):
        result = counted_sync.run("--blackbox-disable", f"--record-mode={mode}")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines([exact(summary(live=1))])
    assert counted_sync.sent == 9
    assert counted_sync.cassette().read_bytes() == recorded


@pytest.mark.parametrize("option", ["--blackbox-disable", None])
def test_the_fixture_reports_the_mode(counted_sync: Counted, option: str | None) -> None:
    counted_sync.pytester.makepyfile(
        test_mode="import pytest\n\n@pytest.mark.blackbox\ndef test_mode(blackbox):\n"
        "    print('mode:', blackbox.mode)\n    blackbox.finish(result='ok')\n"
    )
    result = counted_sync.run("-s", "--record-mode=once", *([option] if option else []))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*mode: off*" if option else "*mode: record*"])
