"""``blackbox demo``, ``check``, the command-less ``fork`` and ``import``, end to end through ``main``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.cli import main
from pytest_blackbox.errors import ForkError
from pytest_blackbox.trace.io import load_trace
from pytest_blackbox.trace.payloads import terminal_outcome

FORK_ANSWER = (
    'Based on the search result, no options are available: "No hotels available for that date.". '
    "I could not complete the booking."
)


@pytest.fixture
def workdir(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> Path:
    clean_env.chdir(tmp_path)
    return tmp_path


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_demo_writes_both_scenarios(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert out == (
        "◼ blackbox · demo  wrote traces/example-trace.json (15 steps, success)\n"
        "◼ blackbox · demo  wrote traces/example-error-trace.json (5 steps, error/unknown_tool)\n"
    )
    success = load_trace(workdir / "traces" / "example-trace.json")
    assert success["id"] == "example-run-001"
    assert load_trace(workdir / "traces" / "example-error-trace.json")["id"] == "example-error-run"


def test_demo_one_scenario_into_a_directory(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--scenario", "error", "--out-dir", "out/nested"]) == 0
    assert capsys.readouterr().out == (
        "◼ blackbox · demo  wrote out/nested/example-error-trace.json (5 steps, error/unknown_tool)\n"
    )
    assert _files(workdir) == ["out/nested/example-error-trace.json"]


def test_check_passes_and_leaves_nothing_behind(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 0
    assert capsys.readouterr().out == (
        "◼ blackbox · check  ✓ PASS  record → verify → fork → verify → diff (diverges at step 3)\n"
    )
    assert _files(workdir) == []


def test_check_keeps_its_cassettes_when_asked(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--out-dir", "chk"]) == 0
    assert capsys.readouterr().out == (
        "◼ blackbox · check  ✓ PASS  record → verify → fork → verify → diff (diverges at step 3; "
        "cassettes in chk)\n"
    )
    assert _files(workdir) == ["chk/example-trace-fork.json", "chk/example-trace.json"]
    assert verify_trace(workdir / "chk" / "example-trace-fork.json").ok


def test_check_reports_a_failing_stage(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_blackbox.cli import fork as forking

    def broken_fork(*_args: object, **_kwargs: object) -> object:
        raise ForkError("fork_run: fork_index 4 out of range — parent has 0 step(s)")

    monkeypatch.setattr(forking, "fork_run", broken_fork)
    assert main(["check"]) == 1
    assert capsys.readouterr().out == (
        "◼ blackbox · check  ✗ FAIL  fork: fork_run: fork_index 4 out of range — parent has 0 step(s)\n"
    )


def test_fork_with_defaults(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["demo", "--scenario", "success"])
    capsys.readouterr()
    assert main(["fork"]) == 0
    assert capsys.readouterr().out == (
        "◼ blackbox · fork  wrote traces/example-trace-fork.json (7 steps, success); steps 0–2 are copied "
        "from traces/example-trace.json, step 3 is your new result\n"
        f"  answer: {FORK_ANSWER}\n"
        "  next:   blackbox diff traces/example-trace.json traces/example-trace-fork.json\n"
    )
    parent = load_trace(workdir / "traces" / "example-trace.json")
    child = load_trace(workdir / "traces" / "example-trace-fork.json")
    assert child["id"] == "example-run-001-fork"
    assert child["parentId"] == "example-run-001"
    assert child["forkedFromStepId"] == "example-run-001:4"
    assert [s["hash"] for s in child["steps"][:3]] == [s["hash"] for s in parent["steps"][:3]]
    assert child["steps"][3]["payload"]["result"] == {
        "results": [],
        "available": False,
        "message": "No hotels available for that date.",
    }
    assert terminal_outcome(child).final_answer == FORK_ANSWER


def test_fork_prompt_mode(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["demo", "--scenario", "success"])
    capsys.readouterr()
    argv = ["fork", "--mode", "prompt", "--prompt", "Find a hostel.", "--out", "p.json"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "◼ blackbox · fork  wrote p.json (7 steps, success); steps 0–3 are copied from "
        "traces/example-trace.json, step 4 starts from your new prompt"
    )
    child = load_trace(workdir / "p.json")
    assert child["steps"][4]["payload"]["messages"] == [{"role": "user", "content": "Find a hostel."}]


def _link_symbolic(parent: Path, out: Path) -> None:
    os.symlink(parent, out)


def _link_hard(parent: Path, out: Path) -> None:
    os.link(parent, out)


@pytest.mark.parametrize(
    ("spelling", "make_link"),
    [
        ("traces/example-trace.json", None),
        ("traces/../traces/example-trace.json", None),
        ("./traces/example-trace.json", None),
        ("alias.json", _link_symbolic),
        ("hard.json", _link_hard),
    ],
)
def test_fork_refuses_to_overwrite_its_parent(
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    spelling: str,
    make_link: Callable[[Path, Path], None] | None,
) -> None:
    main(["demo", "--scenario", "success"])
    capsys.readouterr()
    parent = workdir / "traces" / "example-trace.json"
    if make_link is not None:
        make_link(parent, workdir / spelling)
    before = parent.read_bytes()
    files_before = _files(workdir)
    assert main(["fork", "--out", spelling]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "blackbox fork: Refusing to overwrite the parent trace at traces/example-trace.json. "
        "Pass an explicit --out.\n"
    )
    assert parent.read_bytes() == before
    assert _files(workdir) == files_before


def test_fork_refuses_a_default_output_that_links_to_the_parent(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["demo", "--scenario", "success"])
    os.symlink("example-trace.json", workdir / "traces" / "example-trace-fork.json")
    capsys.readouterr()
    assert main(["fork"]) == 1
    assert "Refusing to overwrite the parent trace at traces/example-trace.json" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["fork", "--mode", "prompt"],
            "blackbox fork: --mode prompt needs the new prompt: --prompt TEXT\n",
        ),
        (
            ["fork", "--payload-json", '{"secret-ish": '],
            "blackbox fork: --payload-json is not valid JSON (Expecting value at line 1, column 16); pass "
            'one JSON value, e.g. {"results":[],"available":false,"message":"No hotels available for that '
            'date."}\n',
        ),
        (
            ["fork", "--trace", "missing.json"],
            "blackbox fork: missing.json does not exist; run `blackbox demo` first, "
            "or pass --trace <cassette>\n",
        ),
        (
            ["fork", "--fork-index", "14", "--out", "c.json"],
            "blackbox fork: fork_run: step 14 is a metadata step, which ends a run and cannot be forked; "
            "fork at a model_input, model_output, tool_call or tool_result step\n",
        ),
    ],
)
def test_fork_usage_errors(
    workdir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    main(["demo", "--scenario", "success"])
    capsys.readouterr()
    assert main(argv) == 1
    assert capsys.readouterr().err == message
    assert _files(workdir) == ["traces/example-trace.json"]


def test_import_chat_json(
    workdir: Path, capsys: pytest.CaptureFixture[str], vectors_dir: Path, vector_text: Callable[[str], str]
) -> None:
    source = vectors_dir / "fixtures" / "external" / "chat-tool-use.foreign.json"
    argv = [
        "import",
        "--from",
        "chat-json",
        "--in",
        str(source),
        "--out",
        "chat.json",
        "--id",
        "external-chat-tool-use",
    ]
    assert main(argv) == 0
    assert capsys.readouterr().out == (
        "◼ blackbox · import\n"
        f"From:    {source} (chat-json)\n"
        "Out:     chat.json\n"
        "Steps:   11\n"
        "Status:  success\n"
        "Tools:   get_weather → send_email\n"
    )
    converted = vector_text("fixtures/external/chat-tool-use.converted.v2.json")
    assert (workdir / "chat.json").read_bytes().decode("utf-8") == converted


def test_import_claude_code_takes_its_id_from_the_out_file(
    workdir: Path, capsys: pytest.CaptureFixture[str], vectors_dir: Path
) -> None:
    source = vectors_dir / "examples" / "claude-code-session" / "session.jsonl"
    assert main(["import", "--from", "claude-code", "--in", str(source), "--out", "runs/session.json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:] == [
        "Out:     runs/session.json",
        "Steps:   39",
        "Status:  success",
        "Tools:   Bash → Read → Read → Bash → Bash → Bash → Edit → Bash → Bash → SubagentHandback",
    ]
    trace = load_trace(workdir / "runs" / "session.json")
    assert trace["id"] == "session"
    assert trace["steps"][-1]["hash"].startswith("6ae515ae")


def _transcript_with(workdir: Path, text: str) -> Path:
    line = {
        "type": "user",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": f"my key is {text} ok"},
    }
    path = workdir / "leak.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("variable", ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"])
def test_import_refuses_the_environments_api_key(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    key = "test-key-0123456789"
    monkeypatch.setenv(variable, f"  {key}\n")
    source = _transcript_with(workdir, key)
    assert main(["import", "--from", "claude-code", "--in", str(source), "--out", "out.json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"blackbox import: {source} contains your API key (the value of {variable}); remove it from the "
        "transcript and import again. Nothing was written.\n"
    )
    assert key not in captured.err
    assert not (workdir / "out.json").exists()


def test_import_writes_nothing_when_verify_fails(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _transcript_with(workdir, "sk-ant-api03-" + "A" * 40)
    assert main(["import", "--from", "claude-code", "--in", str(source), "--out", "out.json"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "blackbox import: the imported cassette does not pass verify (provider_neutrality failed"
    )
    assert err.endswith("; nothing was written\n")
    assert "AAAAAAAA" not in err
    assert not (workdir / "out.json").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json\n", "Claude Code JSONL line 1 is not valid JSON"),
        ('{"type": "system"}\n', "Claude Code transcript contains no user/assistant messages"),
    ],
)
def test_import_errors_exit_1_and_write_nothing(
    workdir: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    (workdir / "t.jsonl").write_text(content, encoding="utf-8")
    assert main(["import", "--from", "claude-code", "--in", "t.jsonl", "--out", "out.json"]) == 1
    assert capsys.readouterr().err == f"blackbox import: {message}\n"
    assert _files(workdir) == ["t.jsonl"]


def test_import_accepts_a_byte_order_mark(
    workdir: Path, capsys: pytest.CaptureFixture[str], vectors_dir: Path
) -> None:
    source = vectors_dir / "fixtures" / "import" / "claude-code-session.jsonl"
    (workdir / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    assert main(["import", "--from", "claude-code", "--in", "bom.jsonl", "--out", "bom.json"]) == 0
    assert capsys.readouterr().out.splitlines()[3:5] == ["Steps:   9", "Status:  success"]


def test_import_missing_input(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "--from", "chat-json", "--in", "nope.json", "--out", "out.json"]) == 1
    assert capsys.readouterr().err == "blackbox import: cannot read the transcript nope.json: no such file\n"


def test_import_refuses_to_overwrite_its_input(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "t.json").write_text("{}", encoding="utf-8")
    assert main(["import", "--from", "chat-json", "--in", "t.json", "--out", "./t.json"]) == 1
    assert capsys.readouterr().err == (
        "blackbox import: --out ./t.json is the transcript itself; choose another output path\n"
    )
    assert (workdir / "t.json").read_text(encoding="utf-8") == "{}"


def test_import_needs_its_options(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["import", "--from", "other", "--in", "a", "--out", "b"])
    assert exited.value.code == 2
    assert "invalid choice: 'other'" in capsys.readouterr().err
