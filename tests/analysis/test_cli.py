"""The inspect, list and diff commands, help texts and error lines."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_blackbox.cli import analysis as cli_analysis
from pytest_blackbox.cli import main
from pytest_blackbox.cli.analysis import iso_time
from tests import VECTORS

from .conftest import CASSETTES

SMALL = VECTORS / "fixtures/traces/success-final-answer.v2.json"
TRIAGE = VECTORS / "examples/fleet-triage/cassettes/triage-incident.json"


def test_inspect_exact_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(SMALL)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"Path:         {SMALL}",
        "Id:           fixture-success-final-answer",
        "Version:      2",
        "Parent:       (none)",
        "Forked from:  (none)",
        "Created:      1970-01-01T00:00:00.000Z",
        "Steps:        3",
        "Status:       success",
        "Result:       The capital of France is Paris.",
        "",
        "   0  model_input     69f285d5  Model called with 1 message(s)",
        '   1  model_output    92e98ba5  Model → final_answer: "The capital of France is Paris."',
        '   2  metadata        b691b4fd  Run completed: "The capital of France is Paris."',
    ]


def test_inspect_fork_and_error_metadata(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(VECTORS / "fixtures/traces/fork-child.v2.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3:5] == ["Parent:       fixture-fork-parent", "Forked from:  fixture-fork-parent:4"]
    assert main(["inspect", str(VECTORS / "fixtures/traces/error-unknown-tool.v2.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[7:9] == ["Status:       error", "Reason:       unknown_tool"]


def test_inspect_timeline_matches_the_documented_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(TRIAGE)]) == 0
    lines = capsys.readouterr().out.splitlines()
    timeline = lines[lines.index("") + 1 :]
    assert timeline[:8] == [
        "   0  model_input     f4dadc31  Model called with 1 message(s)",
        "   1  model_output    87030bbf  Model → tool_calls: lookup_dtc, get_telemetry (with text)",
        "   2  tool_call       e4b15efb  Tool called: lookup_dtc",
        "   3  tool_result     382a63da  Tool result: lookup_dtc → ok",
        "   4  tool_call       de735110  Tool called: get_telemetry",
        "   5  tool_result     a2044742  Tool result: get_telemetry → ok",
        "   6  model_input     0b0461cc  Model called with 3 message(s)",
        "   7  model_output    198b3de1  Model → tool_calls: get_service_history (with text)",
    ]
    assert timeline[11] == "  11  model_output    7e078428  Model → tool_calls: open_work_order"


def test_inspect_step(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(TRIAGE), "--step", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:6] == [
        "Step:      5 of 17",
        "Type:      tool_result",
        "Hash:      a20447424308600138e500ecb59e8bc6cc416a56622b5547bb6a98a642164d21",
        "Time:      2026-09-29T09:05:03.500Z",
        "Summary:   Tool result: get_telemetry → ok",
        "Payload:",
    ]
    assert lines[6:11] == [
        "{",
        '  "toolCallId": "call-1",',
        '  "toolName": "get_telemetry",',
        '  "result": {',
        '    "vehicle_id": "VAN-14",',
    ]
    assert json.loads("\n".join(lines[6:]))["result"]["data"][0]["dp"]["value"] == "91"


def test_inspect_step_out_of_range(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(SMALL), "--step", "3"]) == 1
    assert main(["inspect", str(SMALL), "--step", "-1"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"blackbox inspect: --step 3 is out of range: `{SMALL}` has 3 step(s) (valid indexes: 0–2)",
        f"blackbox inspect: --step -1 is out of range: `{SMALL}` has 3 step(s) (valid indexes: 0–2)",
    ]


@pytest.mark.parametrize("command", [["inspect"], ["diff", str(SMALL)], ["list"]])
def test_bad_path_is_one_line(command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.json"
    assert main([*command, str(missing)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and str(missing) in lines[0] and "Traceback" not in captured.err


def test_corrupt_cassette_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"version": 2, "id": ', encoding="utf-8")
    assert main(["inspect", str(corrupt)]) == 1
    assert main(["diff", str(SMALL), str(corrupt)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    assert err[0].startswith(f"blackbox inspect: `{corrupt}` is not valid JSON: ")
    assert err[1].startswith(f"blackbox diff: `{corrupt}` is not valid JSON: ")


def test_diff_command(capsys: pytest.CaptureFixture[str]) -> None:
    parent = VECTORS / "fixtures/traces/fork-parent.v2.json"
    child = VECTORS / "fixtures/traces/fork-child.v2.json"
    assert main(["diff", str(parent), str(child)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[6] == "First divergence at index 3"
    assert main(["diff", str(parent), str(child), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["firstDivergenceIndex"] == 3 and data["sharedPrefixLength"] == 3
    assert data["parentStep"] == {
        "id": "fixture-fork-parent:3",
        "index": 3,
        "type": "tool_result",
        "hash": "a201c4698c41848d1ed3ac13ef8ee87e784b8bcb73371ccf446d2e5f362655e7",
    }
    assert data["outcome"]["verdict"] == "same final status (success), but the final answer changed"
    fixed = VECTORS / "examples/fleet-triage/cassettes/triage-fixed.json"
    assert main(["diff", str(TRIAGE), str(fixed), "--semantic", "--json"]) == 0
    semantic = json.loads(capsys.readouterr().out)
    assert (semantic["comparison"], semantic["firstDivergenceIndex"]) == ("semantic", 5)
    assert main(["diff", str(parent), str(parent), "--json"]) == 0
    same = json.loads(capsys.readouterr().out)
    assert (same["hasDivergence"], same["summary"]) == (False, "no divergence")
    assert same["outcome"]["verdict"] == "no behavioral change: the divergence did not alter the run outcome"
    assert main(["diff", str(parent), str(parent)]) == 0
    assert "Traces are identical (no divergence)" in capsys.readouterr().out.splitlines()


def test_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(VECTORS / "fixtures/traces/error-unknown-tool.v2.json", tmp_path / "b-error.json")
    shutil.copy(TRIAGE, tmp_path / "a-triage.json")
    shutil.copy(VECTORS / "manifest.json", tmp_path / "c-manifest.json")
    (tmp_path / "notes.txt").write_text("not a cassette", encoding="utf-8")
    (tmp_path / "sub.json").mkdir()
    assert main(["list", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "a-triage.json  id=triage-incident v=2 steps=17 status=success created=2026-09-29",
        "b-error.json  id=fixture-error-unknown-tool v=2 steps=5 status=error/unknown_tool "
        "created=1970-01-01",
        f"warning: `{tmp_path / 'c-manifest.json'}` is not a v2 cassette: version field is missing",
        "2 of 3 trace(s) valid, 1 warning(s).",
    ]


def _pytest_layout(root: Path) -> Path:
    """Cassettes as the plugin lays them out: one folder per test module, any depth."""
    cassettes = root / "cassettes"
    (cassettes / "test_triage").mkdir(parents=True)
    (cassettes / "test_demo" / "nested").mkdir(parents=True)
    (cassettes / ".cache").mkdir()
    shutil.copy(TRIAGE, cassettes / "test_triage" / "test_incident.json")
    shutil.copy(SMALL, cassettes / "test_demo" / "nested" / "test_answer.json")
    (cassettes / ".cache" / "junk.json").write_text("{", encoding="utf-8")
    (cassettes / "test_demo" / ".test_answer.json.0123456789ab.tmp").write_text("{", encoding="utf-8")
    (cassettes / "README.txt").write_text("not a cassette", encoding="utf-8")
    return cassettes


def test_list_walks_the_pytest_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", str(_pytest_layout(tmp_path))]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "test_demo/nested/test_answer.json  id=fixture-success-final-answer v=2 steps=3 status=success "
        "created=1970-01-01",
        "test_triage/test_incident.json  id=triage-incident v=2 steps=17 status=success created=2026-09-29",
        "2 of 2 trace(s) valid, 0 warning(s).",
    ]


def test_verify_a_folder_checks_every_cassette_under_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassettes = _pytest_layout(tmp_path)
    assert main(["verify", str(cassettes)]) == 0
    out = capsys.readouterr().out
    assert out.count("Result: ✓ PASS") == 2
    assert f"Path:   {cassettes / 'test_demo' / 'nested' / 'test_answer.json'}" in out
    assert out.splitlines()[-1] == "2 cassette(s) checked: 2 passed, 0 failed."
    (cassettes / "test_triage" / "broken.json").write_text('{"version": 2}', encoding="utf-8")
    assert main(["verify", str(cassettes), "--json"]) == 1
    reports = json.loads(capsys.readouterr().out)
    assert [Path(report["path"]).name for report in reports] == [
        "test_answer.json",
        "broken.json",
        "test_incident.json",
    ]
    assert [report["pass"] for report in reports] == [True, False, True]


def test_verify_an_empty_folder_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cassettes" / "test_none").mkdir(parents=True)
    assert main(["verify", str(tmp_path / "cassettes")]) == 1
    assert capsys.readouterr().err == (
        f"blackbox verify: `{tmp_path / 'cassettes'}` holds no .json file, in it or in any subfolder\n"
    )


def test_verify_on_several_cores_reports_as_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_analysis, "PARALLEL_FROM_BYTES", 0)
    for index, name in enumerate(CASSETTES * 2):
        shutil.copy(VECTORS / name, tmp_path / f"{index:02d}.json")
    (tmp_path / "05.json").write_text(SMALL.read_text(encoding="utf-8")[:-40], encoding="utf-8")
    outputs = []
    for jobs in ("1", "2"):
        assert main(["verify", str(tmp_path), "--jobs", jobs, "--json"]) == 1
        outputs.append(json.loads(capsys.readouterr().out))
    assert outputs[0] == outputs[1]
    assert len(outputs[1]) == 2 * len(CASSETTES)
    assert [report["pass"] for report in outputs[1]].count(False) == 1


def test_list_defaults_to_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["list"]) == 1
    assert capsys.readouterr().err == (
        "blackbox list: `traces` is not a directory (give the folder that holds your cassettes)\n"
    )
    (tmp_path / "traces").mkdir()
    assert main(["list"]) == 0
    assert capsys.readouterr().out == "0 of 0 trace(s) valid, 0 warning(s).\n"


@pytest.mark.parametrize("command", ["verify", "diff", "inspect", "list", "assert"])
def test_help_has_description_and_example(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: blackbox {command}")
    assert "examples:\n  blackbox " + command in out


def test_iso_time() -> None:
    assert iso_time(0) == "1970-01-01T00:00:00.000Z"
    assert iso_time(1790672700350) == "2026-09-29T09:05:00.350Z"
    assert iso_time(-1) == "1969-12-31T23:59:59.999Z"
    assert iso_time(1e300) == "1e+300 (not a valid time)"


FIXED = VECTORS / "examples/fleet-triage/cassettes/triage-fixed.json"
FORK_PARENT = VECTORS / "fixtures/traces/fork-parent.v2.json"
FORK_CHILD = VECTORS / "fixtures/traces/fork-child.v2.json"


@pytest.mark.parametrize(
    ("pair", "flags", "comparison", "index"),
    [
        ((TRIAGE, FIXED), [], "semantic", 5),  # two recordings: by type and payload
        ((TRIAGE, FIXED), ["--by-hash"], "integrity", 0),  # only step 0's timestamp differs
        ((FORK_PARENT, FORK_CHILD), [], "integrity", 3),  # a fork and its parent: by hash
        ((FORK_CHILD, FORK_PARENT), [], "integrity", 3),  # in either order
        ((FORK_PARENT, FORK_CHILD), ["--semantic"], "semantic", 3),
    ],
)
def test_diff_compares_recordings_semantically_and_forks_by_hash(
    pair: tuple[Path, Path], flags: list[str], comparison: str, index: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diff", *map(str, pair), *flags, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["comparison"], data["firstDivergenceIndex"]) == (comparison, index)


def test_default_diff_of_two_recordings_names_the_real_change(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(TRIAGE), str(FIXED)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3:8] == [
        "Comparison:      semantic (step type + payload; timestamps and hash-chain fields ignored)",
        "Shared prefix:  5 step(s)",
        "",
        "Summary:        tool_result differs at index 5",
        "First divergence at index 5",
    ]


def test_the_fork_report_is_unchanged_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    """The original Blackbox's report of a fork pair, line for line: no comparison line, by hash."""
    assert main(["diff", str(FORK_PARENT), str(FORK_CHILD)]) == 0
    by_default = capsys.readouterr().out
    assert main(["diff", str(FORK_PARENT), str(FORK_CHILD), "--by-hash"]) == 0
    assert capsys.readouterr().out == by_default
    assert "Comparison:" not in by_default


def test_semantic_and_by_hash_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["diff", str(TRIAGE), str(FIXED), "--semantic", "--by-hash"])
    assert exit_info.value.code == 2
    assert "argument --by-hash: not allowed with argument --semantic" in capsys.readouterr().err


def test_the_read_only_commands_never_import_the_execution_side() -> None:
    """``verify``, ``diff`` and ``view`` build every command's parser, and start as fast as the
    analysis side imports: the recording session, the interception and respx stay unloaded."""
    code = (
        "import sys\n"
        "from pytest_blackbox.cli import build_parser\n"
        "build_parser()\n"
        "print(sorted(m for m in ('respx', 'pytest_blackbox.engine.recording', "
        "'pytest_blackbox.interception') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
