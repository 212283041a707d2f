"""Forking a pytest test: ``blackbox fork <its cassette> … -- pytest path::test``.

The weather example is copied to a temporary directory and run there by the ``blackbox`` launcher:
the test whose cassette is the forked one runs as the fork and writes the child to ``--out``; the
other test of the file replays its own cassette as usual. A fork whose test fails writes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.analysis.diff import diff_traces
from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.trace.io import load_trace
from tests import OTHER_PLUGINS_OFF, QUIET
from tests.machine import scaled

from .forkhelp import write_script

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "weather"
CASSETTE = "weather/cassettes/test_agent/test_weather_agent.json"
HAIL = {"city": "Paris", "celsius": 21, "conditions": "hail"}


@pytest.fixture
def weather(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLE, tmp_path / "weather", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def launch(
    cwd: Path, replies: list[dict[str, object]], *pytest_args: str
) -> subprocess.CompletedProcess[str]:
    write_script(cwd / "replies.json", replies)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BLACKBOX_", "PYTEST_"))}
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("CI", None)
    command = [
        *(sys.executable, "-m", "pytest_blackbox.cli", "fork", CASSETTE, "--at", "3"),
        *("--set", json.dumps(HAIL), "--out", "hail.json", "--script", "replies.json"),
        *(
            "--",
            sys.executable,
            "-m",
            "pytest",
            "-q",
            *QUIET,
            "-p",
            "no:xdist",
            *pytest_args,
        ),
    ]
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=scaled(180), check=False
    )


def test_the_selected_test_is_forked_and_the_others_replay(weather: Path) -> None:
    parent_bytes = (weather / CASSETTE).read_bytes()
    replies: list[dict[str, Any]] = [
        {
            "type": "tool_calls",
            "calls": [{"toolName": "celsius_to_fahrenheit", "toolInput": {"celsius": 21}}],
        },
        {"type": "final_answer", "text": "Hail in Paris at 21 °C (69.8 °F)."},
    ]
    done = launch(weather, replies, "weather/test_agent.py")
    print(done.stdout, done.stderr)
    assert done.returncode == 0
    assert done.stderr.splitlines()[-1] == (
        f"◼ blackbox · fork  wrote hail.json (11 steps, success); steps 0–2 are copied from {CASSETTE}, "
        "step 3 is your new result"
    )
    assert "blackbox: 1 replayed, 1 recorded, 0 diverged" in done.stdout  # the async test replayed
    assert (weather / CASSETTE).read_bytes() == parent_bytes
    parent, child = load_trace(weather / CASSETTE), load_trace(weather / "hail.json")
    assert (child["id"], child.get("parentId"), child.get("forkedFromStepId")) == (
        "hail",
        "test_weather_agent",
        "test_weather_agent:3",
    )
    assert child["createdAt"] == parent["createdAt"]
    assert child["steps"][:3] == parent["steps"][:3]
    assert child["steps"][3]["payload"] == {"toolCallId": "call-0", "toolName": "get_weather", "result": HAIL}
    assert child["steps"][3]["timestamp"] == parent["steps"][3]["timestamp"]
    assert child["steps"][7]["payload"] == {
        "toolCallId": "call-1",
        "toolName": "celsius_to_fahrenheit",
        "result": 69.8,
    }
    assert child["steps"][-1]["payload"]["result"] == "Hail in Paris at 21 °C (69.8 °F)."
    assert diff_traces(parent, child).first_divergence_index == 3
    assert verify_trace(weather / "hail.json").ok
    assert not list(weather.glob("weather/cassettes/test_agent/.*pending"))


def test_one_test_selected_by_node_id(weather: Path) -> None:
    replies: list[dict[str, Any]] = [
        {
            "type": "tool_calls",
            "calls": [{"toolName": "celsius_to_fahrenheit", "toolInput": {"celsius": 21}}],
        },
        {"type": "final_answer", "text": "Hail: 69.8 °F in Paris."},
    ]
    done = launch(weather, replies, "weather/test_agent.py::test_weather_agent")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert load_trace(weather / "hail.json")["steps"][-1]["payload"]["result"] == "Hail: 69.8 °F in Paris."


def test_a_fork_whose_test_fails_writes_nothing(weather: Path) -> None:
    """The scripted answer lacks the Fahrenheit figure the test checks: the test fails, no child."""
    replies: list[dict[str, Any]] = [{"type": "final_answer", "text": "Hail in Paris."}]
    done = launch(weather, replies, "weather/test_agent.py::test_weather_agent")
    print(done.stdout, done.stderr)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "◼ blackbox · fork  ✗ FAIL  failed: the test failed, so the fork was not written"
    )
    assert "1 failed" in done.stdout
    assert not (weather / "hail.json").exists()
    assert not list(weather.glob("*pending"))


def test_a_divergence_before_the_fork_point_is_reported(weather: Path) -> None:
    """The test's agent asks for another model than recorded: the prefix diverges, nothing is written."""
    agent = weather / "weather" / "agent.py"
    agent.write_text(
        agent.read_text(encoding="utf-8").replace('"claude-haiku-4-5"', '"claude-opus-4"'), "utf-8"
    )
    done = launch(
        weather, [{"type": "final_answer", "text": "x"}], "weather/test_agent.py::test_weather_agent"
    )
    print(done.stdout, done.stderr)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[-4:] == [
        "◼ blackbox · fork  ✗ FAIL  replay diverged at step 0, model",
        '  recorded: "claude-haiku-4-5"',
        '  actual:   "claude-opus-4"',
        "The agent sent a different request than the one recorded. If the difference comes from something "
        "nondeterministic (a timestamp, a random id), rerun with --match sequence.",
    ]
    assert not (weather / "hail.json").exists()


TOOL_TESTS = """
def test_tool(blackbox):
    lookup = blackbox.tool("lookup", lambda key: {"key": key, "v": 1})
    assert lookup(key="a")["v"] in (1, 2)


def test_other(blackbox):
    assert blackbox.tool("echo", lambda text: text)(text="hi") == "hi"
"""


@pytest.fixture
def tool_tests(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> Path:
    """Two tool-only tests, recorded; then the fork settings go in the environment, as the launcher does.

    The environment is clean: no CI flag (recording is refused in CI, and this fixture records on
    purpose) and no launcher variables but the ones set here.
    """
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_tools=TOOL_TESTS)
    pytester.runpytest(*OTHER_PLUGINS_OFF, "-p", "no:xdist", "--record-mode=once").assert_outcomes(passed=2)
    cassette = pytester.path / "cassettes" / "test_tools" / "test_tool.json"
    fork_env = {
        "BLACKBOX_MODE": "fork",
        "BLACKBOX_CASSETTE": str(cassette),
        "BLACKBOX_OUT": str(pytester.path / "child.json"),
        "BLACKBOX_FORK_SET": '{"key": "a", "v": 2}',
        "BLACKBOX_CONTINUE": "script",
        "BLACKBOX_SCRIPT": str(write_script(pytester.path / "replies.json", [])),
        "BLACKBOX_REPORT": str(pytester.path / "report.json"),
    }
    for name, value in fork_env.items():
        clean_env.setenv(name, value)
    return cassette


def test_only_the_forked_cassettes_test_forks(
    pytester: pytest.Pytester, tool_tests: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BLACKBOX_FORK_AT", "1")
    parent_bytes = tool_tests.read_bytes()
    result = pytester.runpytest(*OTHER_PLUGINS_OFF, "-p", "no:xdist")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["blackbox: 1 replayed, 1 recorded, *"])
    assert tool_tests.read_bytes() == parent_bytes
    child = load_trace(pytester.path / "child.json")
    parent = load_trace(tool_tests)
    assert child["id"] == "child" and child.get("forkedFromStepId") == "test_tool:1"
    assert child["steps"][0] == parent["steps"][0]
    assert child["steps"][1]["payload"] == {
        "toolCallId": "call-0",
        "toolName": "lookup",
        "result": {"key": "a", "v": 2},
    }
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert (report["ok"], report["mode"], report["steps"], report["status"]) == (
        True,
        "fork",
        2,
        "incomplete",
    )


def test_a_refused_fork_fails_its_test_and_reports(
    pytester: pytest.Pytester, tool_tests: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BLACKBOX_FORK_AT", "0")
    result = pytester.runpytest(*OTHER_PLUGINS_OFF, "-p", "no:xdist")
    result.assert_outcomes(passed=1, failed=1)
    message = "step 0 is a tool_call step; fork at a tool_result step (this cassette has tool results at 1)"
    result.stdout.fnmatch_lines([f"*blackbox: {message}"])
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert report == {"ok": False, "mode": "fork", "error": message, "errorType": "ForkError"}
    assert not (pytester.path / "child.json").exists()
