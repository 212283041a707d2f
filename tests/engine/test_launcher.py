"""``blackbox record`` / ``blackbox replay`` around a real agent program."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_blackbox.cli import build_parser
from pytest_blackbox.cli import main as cli_main
from pytest_blackbox.cli.launcher import _command as launcher_command
from pytest_blackbox.cli.launcher import child_env, outcome_line
from pytest_blackbox.engine.keys import GOOGLE_PLACEHOLDER_CREDENTIALS, OFFLINE_PLACEHOLDER_KEY
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests import TEST_KEYS
from tests.agents import PROGRAM
from tests.agents.travel import FINAL, script
from tests.machine import scaled

MARK = "◼ blackbox"


def launch(
    argv: list[str], env: dict[str, str], scenario: str = "finish"
) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "pytest_blackbox.cli",
        *argv,
        "--",
        sys.executable,
        str(PROGRAM),
        scenario,
    ]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=scaled(120), check=False)


def parent_env(root: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLACKBOX_")}
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        env.pop(name, None)
    env.update(AGENT_SDK="anthropic", AGENT_BASE_URL=root, PYTHONWARNINGS="ignore")
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A cassette recorded through the launcher, once per module (the replays only read it).

    Stale BLACKBOX_* variables in the launcher's own environment are ignored.
    """
    tmp_path = tmp_path_factory.mktemp("launched")
    out = tmp_path / "trip.json"
    stale = {
        "BLACKBOX_MODE": "replay",
        "BLACKBOX_CASSETTE": str(tmp_path / "missing.json"),
        "BLACKBOX_OUT": str(tmp_path / "elsewhere.json"),
        "BLACKBOX_MATCH": "bogus",
        "BLACKBOX_REPORT": str(out),
    }
    with FakeProvider() as fake:
        script(fake, "anthropic")
        env = parent_env(fake.base_url, ANTHROPIC_API_KEY=TEST_KEYS["ANTHROPIC_API_KEY"], **stale)
        done = launch(["record", "--out", str(out)], env)
        root = fake.base_url
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == f"{MARK} · record  wrote {out} (13 steps, success)"
    assert "tools run: 3" in done.stdout
    assert not (tmp_path / "elsewhere.json").exists()
    return out, root


def test_record_then_replay_passes_offline(launched: tuple[Path, str]) -> None:
    out, root = launched
    done = launch(["replay", str(out)], parent_env(root))
    assert done.returncode == 0, done.stderr
    assert f"answer: {FINAL}; tools run: 0" in done.stdout
    assert done.stderr.splitlines()[-1] == (
        f"{MARK} · replay  ✓ PASS  replayed 13 steps from {out} with no network calls (success)"
    )
    assert load_trace(out)["id"] == "trip"


def test_a_program_that_never_calls_finish_is_still_checked(launched: tuple[Path, str]) -> None:
    """The exit safety net checks a replay as finish() would (the outcome comes from the final answer)."""
    out, root = launched
    done = launch(["replay", str(out)], parent_env(root), scenario="no-finish")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"{MARK} · replay  ✓ PASS  replayed 13 steps from {out} with no network calls (success)"
    )


def test_a_divergence_exits_non_zero_with_replay_diverged(launched: tuple[Path, str]) -> None:
    out, root = launched
    done = launch(["replay", str(out)], parent_env(root, AGENT_SYSTEM="Be brief."))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    start = lines.index(f"{MARK} · replay  ✗ FAIL  replay diverged at step 0, systemPrompt")
    assert lines[start + 1 : start + 3] == [
        '  recorded: "You are a travel assistant. Answer only from the tools\' data."',
        '  actual:   "Be brief."',
    ]


def test_sequence_match_replays_the_changed_prompt(launched: tuple[Path, str]) -> None:
    out, root = launched
    done = launch(["replay", str(out), "--match", "sequence"], parent_env(root, AGENT_SYSTEM="Be brief."))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"{MARK} · replay  ✓ PASS  replayed 13 steps")


def test_a_divergence_the_agent_caught_is_one_clear_block(launched: tuple[Path, str]) -> None:
    """finish() raises the kept error at the user's own line: no inner frames, no chained SDK error."""
    out, root = launched
    done = launch(["replay", str(out)], parent_env(root, AGENT_SYSTEM="Be brief.", AGENT_CATCH="1"))
    assert done.returncode == 1
    child_traceback = done.stderr.split(MARK)[0]
    assert child_traceback.count("Traceback (most recent call last)") == 1
    assert "During handling" not in child_traceback
    frames = [line for line in child_traceback.splitlines() if line.startswith('  File "')]
    assert [f.split('"')[1].rsplit("/", 1)[-1] for f in frames] == [
        "program.py",
        "program.py",
        "session.py",
    ]
    assert child_traceback.rstrip().endswith(
        "pytest_blackbox.errors.ReplayDivergenceError: replay diverged at step 0, systemPrompt\n"
        '  recorded: "You are a travel assistant. Answer only from the tools\' data."\n'
        '  actual:   "Be brief."\n'
        "The agent sent a different request than the one recorded. If the difference comes from something "
        "nondeterministic (a timestamp, a random id), rerun with --match sequence."
    )


def test_a_child_killed_by_a_signal_exits_128_plus_n(launched: tuple[Path, str]) -> None:
    out, root = launched
    done = launch(["replay", str(out)], parent_env(root), scenario="kill-self")
    assert done.returncode == 137
    assert done.stderr.splitlines()[-1] == (
        f"{MARK} · replay  ✗ the command was killed by signal 9 (exit code 137) before its blackbox() "
        "session could report"
    )


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        (
            "second-session",
            "a second blackbox() session was created in a process started by the blackbox CLI; the CLI runs "
            "one session per command and reports on it",
        ),
        (
            "override",
            "blackbox() options match override the CLI's settings; under `blackbox record/replay/fork` the "
            "command line decides them, so remove them from the code",
        ),
    ],
)
def test_the_launcher_owns_the_session(launched: tuple[Path, str], scenario: str, message: str) -> None:
    out, root = launched
    done = launch(["replay", str(out)], parent_env(root), scenario=scenario)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == f"{MARK} · replay  ✗ FAIL  failed: {message}"


def test_offline_runs_get_placeholder_keys_only_where_none_is_set() -> None:
    base = {
        "ANTHROPIC_API_KEY": "sk-ant-real",
        "OPENAI_API_KEY": " ",
        "BLACKBOX_MODE": "record",
        "PATH": "/bin",
    }
    offline = child_env({"BLACKBOX_MODE": "replay"}, offline=True, base=base)
    assert offline == {
        "ANTHROPIC_API_KEY": "sk-ant-real",
        "OPENAI_API_KEY": OFFLINE_PLACEHOLDER_KEY,
        "GEMINI_API_KEY": OFFLINE_PLACEHOLDER_KEY,
        "AZURE_OPENAI_API_KEY": OFFLINE_PLACEHOLDER_KEY,
        "GOOGLE_APPLICATION_CREDENTIALS": GOOGLE_PLACEHOLDER_CREDENTIALS,
        "BLACKBOX_MODE": "replay",
        "BLACKBOX_LAUNCHED": "1",
        "PATH": "/bin",
    }
    live = child_env({"BLACKBOX_MODE": "record"}, offline=False, base={"PATH": "/bin", "BLACKBOX_MATCH": "x"})
    assert live == {"PATH": "/bin", "BLACKBOX_MODE": "record", "BLACKBOX_LAUNCHED": "1"}


def test_outcome_lines() -> None:
    ok = {"ok": True, "steps": 9, "status": "success"}
    assert outcome_line("record", ok, 0, "runs/trip.json") == (
        f"{MARK} · record  wrote runs/trip.json (9 steps, success)",
        0,
    )
    assert outcome_line("replay", None, 0, "x") == (
        f"{MARK} · replay  ✗ the command created no blackbox() session (exit code 0)",
        1,
    )
    failed = {"ok": False, "error": "boom", "errorType": "BlackboxUnsupportedError"}
    assert outcome_line("replay", failed, 3, "x") == (f"{MARK} · replay  ✗ FAIL  failed: boom", 3)


@pytest.mark.parametrize(
    ("argv", "command", "match"),
    [
        (["replay", "c.json", "--", "python", "a.py"], ["python", "a.py"], "strict"),
        (["replay", "c.json", "--match", "sequence", "--", "python", "a.py"], ["python", "a.py"], "sequence"),
        (
            ["replay", "--match", "sequence", "c.json", "--", "python", "a.py", "--", "x"],
            ["python", "a.py", "--", "x"],
            "sequence",
        ),
        (
            ["replay", "c.json", "python", "a.py", "--match", "x"],
            ["python", "a.py", "--match", "x"],
            "strict",
        ),
        (
            ["record", "--out", "c.json", "--", "python", "a.py", "--", "x"],
            ["python", "a.py", "--", "x"],
            None,
        ),
    ],
)
def test_the_command_line_is_split_at_the_first_double_dash(
    argv: list[str], command: list[str], match: str | None
) -> None:
    args = build_parser().parse_args(argv)
    assert launcher_command(args, argv[0]) == command
    assert getattr(args, "match", None) == match


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["replay", "c.json", "--match", "sequence", "python"],
            "put -- between the options and the command, e.g. -- python agent.py",
        ),
        (["record", "--out", "c.json", "--"], "a command is needed after --, e.g. -- python agent.py"),
    ],
)
def test_a_bad_command_line_is_one_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(argv) == 1
    assert capsys.readouterr().err == f"blackbox {argv[0]}: {message}\n"
