"""The README's ``blackbox`` examples run verbatim from the repository root, on files in the repository."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.machine import scaled

REPO = Path(__file__).resolve().parents[1]
BLACKBOX = Path(sys.executable).with_name("blackbox")


def _console_block() -> tuple[list[str], dict[str, str]]:
    """The commands of the README's console block, and each command's printed output."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```console\n(.*?)```", text, re.DOTALL)
    assert block is not None, "the README has no console block"
    commands: list[str] = []
    outputs: dict[str, str] = {}
    for line in block.group(1).splitlines():
        if line.startswith("$ "):
            commands.append(line[2:])
            outputs[commands[-1]] = ""
        elif commands:
            outputs[commands[-1]] += line + "\n"
    return commands, outputs


COMMANDS, OUTPUTS = _console_block()
BLACKBOX_COMMANDS = [command for command in COMMANDS if command.startswith("blackbox ")]


def test_the_block_activates_the_environment_of_command_1() -> None:
    assert COMMANDS[0] == ". .venv/bin/activate"
    assert len(BLACKBOX_COMMANDS) == len(COMMANDS) - 1


@pytest.mark.parametrize("command", BLACKBOX_COMMANDS, ids=[c.split()[1] for c in BLACKBOX_COMMANDS])
def test_readme_command_runs_from_the_repository_root(command: str, tmp_path: Path) -> None:
    (tmp_path / "tests").symlink_to(REPO / "tests")  # the root's files, with anything written kept out
    argv = shlex.split(command, comments=True)
    done = subprocess.run(
        [str(BLACKBOX), *argv[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
        timeout=scaled(60),
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    shown = OUTPUTS[command].strip()
    if shown:
        assert done.stdout.strip() == shown
