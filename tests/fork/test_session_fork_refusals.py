"""Every refusal of the session fork: made before the command runs, one line, nothing written.

The command each test hands ``blackbox fork`` would create a file named ``ran``; its absence proves
that nothing ran. Messages about the script or ``--set`` give the expected shape and never quote the
file (the files hold a marker that must not appear).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_blackbox.cli import main as cli_main
from pytest_blackbox.engine.fork import SCRIPT_SHAPE
from pytest_blackbox.engine.options import resolve_options
from pytest_blackbox.engine.session import Session
from pytest_blackbox.errors import BlackboxError
from tests.agents import triage
from tests.machine import scaled

from .forkhelp import write_script

MARKER = "do-not-quote-7f3a"
RAN = [sys.executable, "-c", "open('ran', 'w').close()"]
TOOL_RESULTS = "(this cassette has tool results at 3, 5, 9, 13)"
USAGE = "blackbox fork <cassette> --at N --set JSON --out F (--live | --script R) -- <command>"


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, provider_keys: pytest.MonkeyPatch, vectors_dir: Path) -> Path:
    """A directory holding the parent, a plain cassette without tools, and a script."""
    provider_keys.chdir(tmp_path)
    (tmp_path / "parent.json").write_bytes(triage.INCIDENT.read_bytes())
    (tmp_path / "plain.json").write_bytes(
        (vectors_dir / "fixtures/traces/success-final-answer.v2.json").read_bytes()
    )
    write_script(tmp_path / "replies.json", [{"type": "final_answer", "text": "done"}])
    (tmp_path / "sub").mkdir()
    return tmp_path


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``blackbox fork`` in process: exit 1, nothing run or written. Returns the message."""
    code = cli_main(["fork", *argv, "--", *RAN])
    err = capsys.readouterr().err
    print(err)
    assert code == 1
    assert not Path("ran").exists()
    assert not Path("child.json").exists()
    assert err.startswith("blackbox fork: ") and err.endswith("\n") and err.count("\n") == 1
    return err[len("blackbox fork: ") : -1]


def argv(
    *, at: str | None = "5", fork_set: str | None = "{}", out: str | None = "child.json", **how: str
) -> list[str]:
    args = ["parent.json"]
    for flag, value in (("--at", at), ("--set", fork_set), ("--out", out)):
        if value is not None:
            args += [flag, value]
    if how.get("live"):
        args.append("--live")
    script = how.get("script", "replies.json")
    if script:
        args += ["--script", script]
    return args


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (argv(at=None), "fork mode needs a fork step (fork_at / BLACKBOX_FORK_AT; --at N)"),
        (
            argv(fork_set=None),
            "fork mode needs a replacement result (fork_set / BLACKBOX_FORK_SET; --set JSON)",
        ),
        (argv(out=None), "fork mode needs an output path (out / BLACKBOX_OUT; --out F)"),
        (
            argv(script=""),
            'fork mode needs to know how to continue after the fork point: "live" (your real API client) or '
            '"script" (recorded replies from a file); pass --live or --script R',
        ),
        (argv(at="4"), f"step 4 is a tool_call step; fork at a tool_result step {TOOL_RESULTS}"),
        (
            argv(at="99"),
            f"step 99 is past the end of the cassette (17 steps); fork at a tool_result step {TOOL_RESULTS}",
        ),
        (
            ["plain.json", *argv(at="1")[1:]],
            "step 1 is a model_output step; fork at a tool_result step. This cassette has no tool results: "
            "wrap your tools with blackbox.tools({...}) when recording",
        ),
        (
            argv(out="replies.json"),
            "fork refuses to write its output over its script: replies.json is the same file as "
            "replies.json; --out must differ from --script",
        ),
        (argv(fork_set="@missing.json"), "cannot read the --set file missing.json: no such file"),
        (argv(script="missing.json"), "cannot read the fork script missing.json: no such file"),
        (argv(fork_set="@."), "cannot read the --set file .: it is a directory"),
        (argv(script="."), "cannot read the fork script .: it is a directory"),
        (
            ["--fork-index", "2", *argv()],
            "--fork-index belongs to the demo fork (blackbox fork without a cassette); the session fork "
            "replaces the result at step --at with --set",
        ),
    ],
    ids=[
        "no-at",
        "no-set",
        "no-out",
        "no-continue",
        "not-a-tool-result",
        "past-the-end",
        "no-tool-results",
        "out-is-the-script",
        "set-file-missing",
        "script-missing",
        "set-file-is-a-directory",
        "script-is-a-directory",
        "demo-option",
    ],
)
def test_refusals(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(args, capsys) == message


@pytest.mark.parametrize("spelling", ["same", "dotdot", "symlink", "hardlink"])
def test_the_out_path_is_never_the_parent(
    spelling: str, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = {
        "same": "parent.json",
        "dotdot": "sub/../parent.json",
        "symlink": "link.json",
        "hardlink": "hard.json",
    }[spelling]
    if spelling == "symlink":
        (workdir / "link.json").symlink_to(workdir / "parent.json")
    elif spelling == "hardlink":
        os.link(workdir / "parent.json", workdir / "hard.json")
    before = (workdir / "parent.json").read_bytes()
    assert refused(argv(out=out), capsys) == (
        f"fork refuses to write its output over the cassette it forks: {out} is the same file as "
        "parent.json; choose another out path"
    )
    assert (workdir / "parent.json").read_bytes() == before


def test_a_malformed_set_value_is_not_quoted(capsys: pytest.CaptureFixture[str]) -> None:
    message = refused(argv(fork_set='{"' + MARKER + '": '), capsys)
    assert message == (
        "--set must be JSON (the replacement tool result), e.g. --set '{\"available\": false}' or "
        "--set @result.json; the value is not: Expecting value at line 1, column 23"
    )


def test_a_malformed_set_file_is_not_quoted(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "bad.json").write_text("{\n  " + MARKER + "\n}\n", encoding="utf-8")
    message = refused(argv(fork_set="@bad.json"), capsys)
    assert message.startswith("--set must be JSON (the replacement tool result), e.g. ")
    assert message.endswith(
        "; the file bad.json is not: Expecting property name enclosed in double quotes at line 2, column 3"
    )
    assert MARKER not in message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "[{" + MARKER + "}]",
            "is not valid JSON (Expecting property name enclosed in double quotes at line 1, column 3)",
        ),
        ('{"type": "' + MARKER + '"}', "; it is not an array"),
        ('[{"type": "' + MARKER + '"}]', '; [0].type must be "final_answer" or "tool_calls"'),
        ('[{"type": "final_answer", "text": 1}]', "; [0].text must be a string"),
        ('[{"type": "final_answer", "text": "a", "' + MARKER + '": 1}]', "; [0] may hold only text, type"),
        ('[{"type": "tool_calls", "calls": []}]', "; [0].calls must be a non-empty array"),
        (
            '[{"type": "tool_calls", "calls": [{"toolName": ""}]}]',
            "; [0].calls[0].toolName must be a non-empty string",
        ),
        (
            '[{"type": "tool_calls", "calls": [{"toolName": "a", "toolCallId": "' + MARKER + '"}]}]',
            "; [0].calls[0] may hold only toolName and toolInput",
        ),
    ],
    ids=[
        "not-json",
        "not-an-array",
        "bad-type",
        "bad-text",
        "extra-key",
        "no-calls",
        "bad-tool-name",
        "call-id",
    ],
)
def test_a_malformed_script_gets_the_examples(
    text: str, problem: str, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workdir / "bad-script.json").write_text(text, encoding="utf-8")
    message = refused(argv(script="bad-script.json"), capsys)
    assert message.startswith("the fork script bad-script.json ")
    assert SCRIPT_SHAPE in message
    assert problem in message
    assert MARKER not in message


def test_session_options_need_the_cassette(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["fork", "--at", "5", "--out", "child.json"])
    assert code == 1
    assert (
        capsys.readouterr().err
        == f"blackbox fork: --at belongs to the session fork, which needs the cassette: {USAGE}\n"
    )
    assert not Path("ran").exists()


@pytest.mark.parametrize("tail", [[], ["--"]], ids=["no-dashes", "dashes"])
def test_a_command_is_needed(tail: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["fork", *argv(), *tail]) == 1
    assert capsys.readouterr().err == f"blackbox fork: a command is needed after --, e.g. {USAGE}\n"


def test_the_command_comes_after_dashes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["fork", *argv(), *RAN]) == 1
    expected = "blackbox fork: put -- between the options and the command, e.g. -- python agent.py\n"
    assert capsys.readouterr().err == expected
    assert not Path("ran").exists()


@pytest.mark.parametrize(
    "args", [[*argv(), "--live"], argv(at="x"), argv(at="-1")], ids=["live-and-script", "at-x", "at-negative"]
)
def test_usage_errors_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli_main(["fork", *args, "--", *RAN])
    assert caught.value.code == 2
    print(capsys.readouterr().err)
    assert not Path("ran").exists()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "fork mode needs a cassette to fork (cassette / BLACKBOX_CASSETTE)"),
        ({"BLACKBOX_FORK_AT": "x"}, 'BLACKBOX_FORK_AT must be a step index; got "x"'),
        (
            {"BLACKBOX_FORK_AT": "5", "BLACKBOX_FORK_SET": "{" + MARKER},
            "BLACKBOX_FORK_SET must be JSON (the replacement tool result)",
        ),
        (
            {
                "BLACKBOX_FORK_AT": "5",
                "BLACKBOX_FORK_SET": "1",
                "BLACKBOX_OUT": "c.json",
                "BLACKBOX_CONTINUE": "script",
            },
            "a fork that continues with a script needs the script file "
            "(script / BLACKBOX_SCRIPT; --script R)",
        ),
    ],
    ids=["no-cassette", "bad-at", "bad-set", "no-script"],
)
def test_the_session_checks_its_environment(env: dict[str, str], message: str) -> None:
    """A session started with ``BLACKBOX_MODE=fork`` makes the same checks; the cassette comes last here."""
    full = {"BLACKBOX_MODE": "fork", **env}
    if "BLACKBOX_CONTINUE" in env:
        full["BLACKBOX_CASSETTE"] = "parent.json"
    with pytest.raises(BlackboxError) as caught:
        Session(resolve_options(env=full), exit_net=False)
    assert str(caught.value) == message


def test_a_fork_that_fails_while_running_reports_it(workdir: Path) -> None:
    """The script runs out: the launcher prints the session's error and exits 1; nothing is written."""
    write_script(workdir / "empty.json", [])
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLACKBOX_")}
    env.pop("ANTHROPIC_API_KEY", None)
    command = [sys.executable, "-m", "pytest_blackbox.cli", "fork", *argv(script="empty.json")]
    done = subprocess.run(
        [*command, "--", sys.executable, triage.__file__],
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "◼ blackbox · fork  ✗ FAIL  failed: the fork script ran out after 0 response(s); add more model "
        "outputs to it or continue with --live"
    )
    assert not (workdir / "child.json").exists()
