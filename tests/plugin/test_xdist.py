"""Under pytest-xdist the workers' summaries add up to exactly the serial run's summary."""

from __future__ import annotations

import re
import shutil

import pytest

from .conftest import ASK, HEADER, Suite, exact, summary

MIXED = """
PHASE = os.environ.get("MIX_PHASE", "setup")


@pytest.mark.blackbox
DEF test_replayed(blackbox, anthropic_options):
    assert AWAIT ask(blackbox, anthropic_options, "Paris")


@pytest.mark.blackbox
DEF test_diverged(blackbox, anthropic_options):
    try:
        AWAIT ask(blackbox, anthropic_options, "Paris" if PHASE == "setup" else "Oslo")
    except Exception:
        pass


@pytest.mark.blackbox(record_mode="once")
DEF test_recorded(blackbox, anthropic_options):
    assert AWAIT ask(blackbox, anthropic_options, "Lima")


@pytest.mark.blackbox(record_mode="once")
DEF test_not_written(blackbox, anthropic_options):
    AWAIT ask(blackbox, anthropic_options, "Lima")
    pytest.fail("the test failed after the agent answered")


@pytest.mark.blackbox(record_mode="once")
def test_unsupported(blackbox, anthropic_options):
    client = anthropic.Anthropic(**anthropic_options)
    found = {"type": "search_result", "source": "https://example.com", "title": "Clouds", "content": []}
    messages = [{"role": "user", "content": [found]}]
    client.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=messages)
"""


def _mixed_suite(suite: Suite, folder: str) -> None:
    """Two recorded cassettes, one stray cassette, and five tests that each end differently."""
    directory = suite.pytester.mkdir(folder)
    source = HEADER + ASK[suite.flavor] + MIXED
    source = source.replace("DEF ", "async def " if suite.flavor == "async" else "def ")
    source = source.replace("AWAIT ", "await " if suite.flavor == "async" else "")
    (directory / "test_mix.py").write_text(source, encoding="utf-8")
    setup = suite.run(folder, "--record-mode=once", "-k", "replayed or diverged")
    setup.assert_outcomes(passed=2)
    cassettes = directory / "cassettes" / "test_mix"
    shutil.copyfile(cassettes / "test_replayed.json", cassettes / "test_gone.json")


def _report(result: pytest.RunResult, folder: str) -> list[str]:
    return [
        line.replace(f"{folder}/", "")
        for line in result.stdout.lines
        if re.match(r"blackbox: \d+ replayed, |  unused: ", line)
    ]


def test_the_summary_is_identical_with_and_without_xdist(suite: Suite) -> None:
    _mixed_suite(suite, "serial")
    _mixed_suite(suite, "parallel")
    suite.pytester._monkeypatch.setenv("MIX_PHASE", "run")

    serial = suite.run("-v", "serial")
    parallel = suite.run("-v", "-n", "2", "parallel")

    expected = [
        summary(replayed=1, recorded=1, diverged=1, unsupported=1, not_written=1, unused=1),
        "  unused: cassettes/test_mix/test_gone.json",
    ]
    for result, folder in ((serial, "serial"), (parallel, "parallel")):
        result.assert_outcomes(passed=2, failed=3)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        assert _report(result, folder) == expected
    parallel.stdout.fnmatch_lines(["created: 2/2 workers"])
    for folder in ("serial", "parallel"):
        cassettes = suite.pytester.path / folder / "cassettes" / "test_mix"
        assert sorted(p.name for p in cassettes.iterdir()) == [
            "test_diverged.json",
            "test_gone.json",
            "test_recorded.json",
            "test_replayed.json",
        ]


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_record_then_replay_under_xdist(sync_suite: Suite, xdist: tuple[str, ...]) -> None:
    sync_suite.write()
    sync_suite.write(name="test_other")
    recorded = sync_suite.run(*xdist, "--record-mode=once")
    recorded.assert_outcomes(passed=2)
    recorded.stdout.fnmatch_lines([exact(summary(recorded=2))])
    replayed = sync_suite.run(*xdist)
    replayed.assert_outcomes(passed=2)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=2))])
