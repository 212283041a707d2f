"""The exit safety net in real processes: SIGTERM, a crash, a clean exit without finish(), calls in flight."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.engine.options import SessionOptions
from pytest_blackbox.engine.session import Session
from pytest_blackbox.errors import BlackboxUsageError
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests import TEST_KEYS
from tests.agents import PROGRAM
from tests.agents.travel import FINAL, script
from tests.machine import scaled


def agent_env(fake: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, **extra: str) -> dict[str, str]:
    sdk, is_async = flavor
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLACKBOX_")}
    env.update(
        **TEST_KEYS,
        AGENT_SDK=sdk,
        AGENT_ASYNC="1" if is_async else "0",
        AGENT_BASE_URL=fake.base_url,
        AGENT_READY=str(tmp_path / "ready"),
        BLACKBOX_MODE="record",
        BLACKBOX_OUT=str(tmp_path / "run.json"),
        PYTHONWARNINGS="ignore",
    )
    env.update(extra)
    return env


def start(scenario: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(PROGRAM), scenario],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_ready(proc: subprocess.Popen[str], ready: Path) -> None:
    deadline = time.monotonic() + scaled(30)
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate()
            pytest.fail(f"the agent never reached its blocking tool:\n{err}")
        time.sleep(0.02)


def terminal_of(path: Path) -> tuple[list[str], Any]:
    assert verify_trace(path).ok, verify_trace(path)
    steps = load_trace(path)["steps"]
    return [step["type"] for step in steps], steps[-1]["payload"]


@pytest.mark.parametrize(
    ("scenario", "terminal"),
    [
        (
            "block-unwrapped",
            {"event": "run_failed", "status": "error", "reason": "process_exit", "exitCode": 143},
        ),
        (
            "block-wrapped",
            {
                "event": "run_failed",
                "status": "error",
                "reason": "calls_in_flight",
                "exitCode": 143,
                "inFlight": 1,
            },
        ),
    ],
)
def test_sigterm_mid_run_writes_a_verifying_cassette(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, scenario: str, terminal: Any
) -> None:
    script(fake_provider, flavor[0])
    env = agent_env(fake_provider, flavor, tmp_path)
    proc = start(scenario, env)
    wait_ready(proc, tmp_path / "ready")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=scaled(30))
    assert proc.returncode == -signal.SIGTERM, err
    types, payload = terminal_of(tmp_path / "run.json")
    assert types == ["model_input", "model_output", "metadata"]
    assert payload == terminal


def test_an_uncaught_exception_ends_with_process_exit_code_1(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    script(fake_provider, "anthropic")
    proc = start("crash", agent_env(fake_provider, ("anthropic", False), tmp_path))
    _, err = proc.communicate(timeout=scaled(60))
    assert proc.returncode == 1
    assert "RuntimeError: the agent crashed" in err
    types, payload = terminal_of(tmp_path / "run.json")
    assert types == ["model_input", "model_output", "tool_call", "tool_result", "metadata"]
    assert payload == {"event": "run_failed", "status": "error", "reason": "process_exit", "exitCode": 1}


def test_a_clean_exit_without_finish_writes_what_finish_would(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    script(fake_provider, "openai")
    proc = start("no-finish", agent_env(fake_provider, ("openai", True), tmp_path))
    _, err = proc.communicate(timeout=scaled(60))
    assert proc.returncode == 0, err
    types, payload = terminal_of(tmp_path / "run.json")
    assert len(types) == 13
    assert payload == {"event": "run_completed", "status": "success", "result": FINAL}


def test_a_call_in_flight_at_exit_gives_calls_in_flight(fake_provider: FakeProvider, tmp_path: Path) -> None:
    script(fake_provider, "anthropic")
    proc = start("tool-in-flight", agent_env(fake_provider, ("anthropic", False), tmp_path))
    _, err = proc.communicate(timeout=scaled(60))
    assert proc.returncode == 0, err
    types, payload = terminal_of(tmp_path / "run.json")
    assert len(types) == 13
    assert payload == {
        "event": "run_failed",
        "status": "error",
        "reason": "calls_in_flight",
        "exitCode": 0,
        "inFlight": 1,
    }


def test_finish_after_the_exit_write_is_refused(tmp_path: Path) -> None:
    session = Session(
        SessionOptions(mode="record", out=tmp_path / "run.json"), clock=lambda: 5, exit_net=False
    )
    session._end_by_exit(0)  # what the exit hooks call at process exit
    assert load_trace(tmp_path / "run.json")["steps"] == []
    with pytest.raises(
        BlackboxUsageError, match=r"^the run already ended \(the process exit wrote the cassette\)$"
    ):
        session.finish()
