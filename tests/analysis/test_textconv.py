"""the git diff driver: a re-recorded cassette's ``git diff`` shows only what changed."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_blackbox.cli import main
from pytest_blackbox.testing import FakeProvider
from tests import VECTORS
from tests.agents.travel import PROMPT, run_agent, script

FORK_CHILD = VECTORS / "fixtures/traces/fork-child.v2.json"
SMALL = VECTORS / "fixtures/traces/success-final-answer.v2.json"
#: The two lines docs/ci.md gives, word for word.
ATTRIBUTES = "tests/cassettes/**/*.json diff=blackbox\n"
TEXTCONV = "blackbox textconv"
XFUNCNAME = "^step [0-9]+ .*$"
CASSETTE = "tests/cassettes/test_agent/test_travel.json"
#: The one-word prompt change a re-recording picks up.
CHANGED_PROMPT = PROMPT.replace("local time", "current time")


def textconv(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["textconv", str(path)]) == 0
    return capsys.readouterr().out


def test_exact_text_of_a_small_cassette(capsys: pytest.CaptureFixture[str]) -> None:
    assert textconv(SMALL, capsys).splitlines() == [
        "cassette fixture-success-final-answer (trace format v2)",
        "outcome: success",
        "",
        "step 0 model_input",
        "  {",
        '    "messages": [',
        "      {",
        '        "role": "user",',
        '        "content": "What is the capital of France?"',
        "      }",
        "    ],",
        '    "tools": [',
        "      {",
        '        "name": "search",',
        '        "description": "search"',
        "      },",
        "      {",
        '        "name": "calendar",',
        '        "description": "calendar"',
        "      },",
        "      {",
        '        "name": "booking",',
        '        "description": "booking"',
        "      }",
        "    ]",
        "  }",
        "",
        "step 1 model_output",
        "  {",
        '    "type": "final_answer",',
        '    "text": "The capital of France is Paris."',
        "  }",
        "",
        "step 2 metadata",
        "  {",
        '    "event": "run_completed",',
        '    "status": "success",',
        '    "result": "The capital of France is Paris."',
        "  }",
    ]


def test_no_timestamp_hash_or_step_id_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    text = textconv(FORK_CHILD, capsys)
    assert text.splitlines()[:3] == [
        "cassette fixture-fork-parent-fork (trace format v2)",
        "parent fixture-fork-parent, forked at fixture-fork-parent:4",
        "outcome: success",
    ]
    for hidden in ('"timestamp"', '"hash"', '"prevHash"', '"createdAt"', "fixture-fork-parent-fork:"):
        assert hidden not in text


def test_a_file_that_is_not_a_cassette_is_shown_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, content in {"other.json": '{"name": "x"}\n', "merge.json": "<<<<<<< HEAD\n{"}.items():
        path = tmp_path / name
        path.write_text(content, encoding="utf-8")
        assert textconv(path, capsys) == content


def test_an_unreadable_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "gone.json"
    assert main(["textconv", str(missing)]) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"blackbox textconv: `{missing}` does not exist\n")


# -- git diff with the driver ----------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(repo.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "LC_ALL": "C",
    }
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def _clock(start: int) -> Callable[[], int]:
    """A recording's clock: each re-recording happens a day after the one before."""
    ticks = itertools.count(start, 7)
    return lambda: next(ticks)


def _record(fake: FakeProvider, path: Path, prompt: str, day: int) -> None:
    script(fake, "anthropic")
    options = {"mode": "record", "out": path, "trace_id": "test_travel", "clock": _clock(day * 86_400_000)}
    run_agent(("anthropic", False), fake, prompts=(prompt,), session_options=options).session.stop()


def _changed_lines(patch: str) -> list[str]:
    return [line for line in patch.splitlines() if line[:1] in "+-" and not line.startswith(("+++ ", "--- "))]


@pytest.fixture
def repo(tmp_path: Path, fake_provider: FakeProvider, provider_keys: pytest.MonkeyPatch) -> Path:
    """A git repository with a recorded cassette committed, then re-recorded after a one-word change."""
    if shutil.which("git") is None:
        pytest.fail("git is needed for the diff driver tests")
    repo = tmp_path / "project"
    cassette = repo / CASSETTE
    cassette.parent.mkdir(parents=True)
    _git(repo, "init", "-q")
    _record(fake_provider, cassette, PROMPT, day=1)
    (repo / ".gitattributes").write_text(ATTRIBUTES, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "record")
    _record(fake_provider, cassette, CHANGED_PROMPT, day=2)
    return repo


def test_git_diff_shows_only_the_changed_prompt(repo: Path) -> None:
    raw = _changed_lines(_git(repo, "diff"))
    _git(repo, "config", "diff.blackbox.textconv", TEXTCONV)
    semantic = _changed_lines(_git(repo, "diff"))
    old, new = f'"content": "{PROMPT}"', f'"content": "{CHANGED_PROMPT}"'
    # the prompt is in each of the three model requests; nothing else changed in the run
    assert semantic == [f"-{' ' * 8}{old}", f"+{' ' * 8}{new}"] * 3
    assert len(raw) > 10 * len(semantic)  # every timestamp and hash, without the driver


def test_hunk_headers_name_the_step(repo: Path) -> None:
    _git(repo, "config", "diff.blackbox.textconv", TEXTCONV)
    _git(repo, "config", "diff.blackbox.xfuncname", XFUNCNAME)
    hunks = [line.split(" @@ ", 1)[1] for line in _git(repo, "diff").splitlines() if line.startswith("@@ ")]
    assert hunks == ["step 0 model_input", "step 4 model_input", "step 10 model_input"]


def test_git_log_and_show_use_the_driver(repo: Path) -> None:
    _git(repo, "config", "diff.blackbox.textconv", TEXTCONV)
    _git(repo, "commit", "-qam", "re-record")
    for command in (["log", "-p", "-1", "--format="], ["show", "--format="]):
        changed = _changed_lines(_git(repo, *command))
        assert len(changed) == 6 and all("current time" in line for line in changed[1::2])
