"""Under pytest-xdist the workers' summaries add up to exactly the serial run's summary, and a cassette
is recorded, replayed and recorded again (``rewrite``, ``all``) as in one process."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace

import pytest

from pytest_blackbox.analysis.verify import verify_trace

from .conftest import ASK, CHANGED, HEADER, UNCHANGED, WEATHER_TEST, Suite, exact, summary

FLAVORS = ("sync", "async")

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
    """Per flavor, two recorded cassettes and five tests that each end differently; one stray cassette."""
    directory = suite.pytester.mkdir(folder)
    for flavor in FLAVORS:
        source = HEADER + ASK[flavor] + MIXED
        source = source.replace("DEF ", "async def " if flavor == "async" else "def ")
        source = source.replace("AWAIT ", "await " if flavor == "async" else "")
        (directory / f"test_mix_{flavor}.py").write_text(source, encoding="utf-8")
    setup = suite.run(folder, "--record-mode=once", "-k", "replayed or diverged")
    setup.assert_outcomes(passed=2 * len(FLAVORS))
    cassettes = directory / "cassettes" / "test_mix_sync"
    shutil.copyfile(cassettes / "test_replayed.json", cassettes / "test_gone.json")


def _report(result: pytest.RunResult, folder: str) -> list[str]:
    return [
        line.replace(f"{folder}/", "")
        for line in result.stdout.lines
        if re.match(r"blackbox: \d+ replayed, |  unused: ", line)
    ]


def test_the_summary_is_identical_with_and_without_xdist(sync_suite: Suite) -> None:
    """Both flavors in each run: one inner run under xdist (two worker start-ups) covers both."""
    _mixed_suite(sync_suite, "serial")
    _mixed_suite(sync_suite, "parallel")
    sync_suite.pytester._monkeypatch.setenv("MIX_PHASE", "run")

    serial = sync_suite.run("-v", "serial")
    parallel = sync_suite.run("-v", "-n", "2", "parallel")

    expected = [
        summary(replayed=2, recorded=2, diverged=2, unsupported=2, not_written=2, unused=1),
        "  unused: cassettes/test_mix_sync/test_gone.json",
    ]
    for result, folder in ((serial, "serial"), (parallel, "parallel")):
        result.assert_outcomes(passed=4, failed=6)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        assert _report(result, folder) == expected
    parallel.stdout.fnmatch_lines(["created: 2/2 workers"])
    recorded = ["test_diverged.json", "test_recorded.json", "test_replayed.json"]
    for folder in ("serial", "parallel"):
        cassettes = sync_suite.pytester.path / folder / "cassettes"
        assert {
            flavor: sorted(p.name for p in (cassettes / f"test_mix_{flavor}").iterdir()) for flavor in FLAVORS
        } == {
            "sync": sorted([*recorded, "test_gone.json"]),
            "async": recorded,
        }


def test_record_then_replay(sync_suite: Suite) -> None:
    sync_suite.write()
    sync_suite.write(name="test_other")
    recorded = sync_suite.run("--record-mode=once")
    recorded.assert_outcomes(passed=2)
    recorded.stdout.fnmatch_lines([exact(summary(recorded=2))])
    replayed = sync_suite.run()
    replayed.assert_outcomes(passed=2)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=2))])


#: The standard scenario with the city fixed: recorded again with ``WEATHER_CITY`` set, it is unchanged.
IN_PARIS = WEATHER_TEST.replace("city()", '"Paris"')


def _in_mode(body: str, mode: str) -> str:
    """The test with its record mode on its marker, so modules in different modes share one run."""
    return body.replace("@pytest.mark.blackbox", f'@pytest.mark.blackbox(record_mode="{mode}")')


#: Each stage of a cassette's life as a module per flavor: (module stem, body, recorded beforehand).
STAGES = [
    ("test_new", _in_mode(WEATHER_TEST, "once"), False),
    ("test_kept", IN_PARIS, True),
    ("test_same", _in_mode(IN_PARIS, "rewrite"), True),
    ("test_changed", _in_mode(WEATHER_TEST, "rewrite"), True),
    ("test_all", _in_mode(IN_PARIS, "all"), True),
]


def test_record_replay_and_re_record_under_xdist(sync_suite: Suite) -> None:
    """A cassette's life under ``-n 2``: recorded (``once``), replayed, recorded again with ``rewrite``
    (unchanged, and changed) and with ``all`` (unchanged). Each stage is a module per flavor whose
    marker names its record mode, so one inner run under xdist (two worker start-ups) holds them all;
    it checks what test_modes.py checks serially for each flavor. The controller writes the
    ``--blackbox-report=github`` report from the summaries the workers sent (test_review_report.py
    checks it in one process)."""
    modules = {stem: [f"{stem}_{flavor}" for flavor in FLAVORS] for stem, _, _ in STAGES}

    def write(stem: str, body: str) -> None:
        for flavor in FLAVORS:
            replace(sync_suite, flavor=flavor).write(name=f"{stem}_{flavor}", body=body)

    for stem, body, before in STAGES:
        if before:
            write(stem, body)
    sync_suite.run("--record-mode=once").assert_outcomes(passed=8)  # one process: not what is checked
    write(*STAGES[0][:2])
    old = {module: sync_suite.load(module) for module in modules["test_changed"]}
    kept = {
        module: sync_suite.cassette(module).read_bytes()
        for stem in ("test_kept", "test_same", "test_all")
        for module in modules[stem]
    }

    job_summary = sync_suite.pytester.path / "step-summary.md"
    job_summary.write_text("earlier step\n", encoding="utf-8")
    sync_suite.pytester._monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(job_summary))
    sync_suite.pytester._monkeypatch.setenv("WEATHER_CITY", "Oslo")
    result = sync_suite.run("-n", "2", "--blackbox-report=github")
    result.assert_outcomes(passed=10)
    line = summary(replayed=2, recorded=4, unchanged=4)
    where = "(step 0 model_input: messages[0].content)"
    result.stdout.fnmatch_lines(
        [
            exact(line),
            *[exact(f"  changed: cassettes/{module}/test_weather.json {where}") for module in sorted(old)],
            exact(f"blackbox: report written to {job_summary}"),
        ],
        consecutive=True,
    )
    assert job_summary.read_text(encoding="utf-8").splitlines() == [
        "earlier step",
        "### blackbox: re-recorded cassettes",
        "",
        f"`{line}`",
        "",
        f"8 re-recorded: 2 new, 2 changed, 4 {UNCHANGED}",
        "",
        "| Cassette | What happened |",
        "| --- | --- |",
        *[f"| `cassettes/{module}/test_weather.json` | {CHANGED} |" for module in sorted(old)],
        *[f"| `cassettes/{module}/test_weather.json` | new |" for module in sorted(modules["test_new"])],
        "",
    ]
    result.stdout.fnmatch_lines(["created: 2/2 workers"])
    assert {module: sync_suite.cassette(module).read_bytes() for module in kept} == kept
    for module, before in old.items():
        new = sync_suite.load(module)
        assert new["steps"][0]["payload"]["messages"][0]["content"] == "What is the weather in Oslo?"
        assert new["steps"][0]["hash"] != before["steps"][0]["hash"]
    for module in modules["test_new"]:
        assert sync_suite.load(module)["steps"][0]["payload"]["messages"][0]["content"] == (
            "What is the weather in Oslo?"
        )
    for module in [module for stem in modules.values() for module in stem]:
        assert verify_trace(sync_suite.cassette(module)).ok
        assert [p.name for p in sync_suite.cassette(module).parent.iterdir()] == ["test_weather.json"]
