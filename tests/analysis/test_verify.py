"""verify: the four invariants, short-circuiting, tamper detection and the report texts."""

from __future__ import annotations

import copy
import json
import random
import re
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.analysis.verify import ACTIONS, render_verify_report, verify_trace
from pytest_blackbox.cli import main
from pytest_blackbox.trace import stream
from pytest_blackbox.trace.canonical import canonical_json
from pytest_blackbox.trace.errors import CassetteError
from pytest_blackbox.trace.io import load_trace
from pytest_blackbox.trace.model import Trace
from pytest_blackbox.trace.recorder import TraceRecorder
from tests import VECTORS

from .conftest import CASSETTES, read_trace, rechain

SMALL = "fixtures/traces/success-final-answer.v2.json"


def _rows(report: Any) -> list[tuple[str, str, str]]:
    return [(r.name, r.status, r.detail) for r in report.invariants]


@pytest.mark.parametrize("name", CASSETTES)
def test_every_vector_verifies(name: str, expectations: dict[str, Any]) -> None:
    report = verify_trace(VECTORS / name)
    expected = expectations["cassettes"][name]
    assert _rows(report) == [
        ("schema_version", "pass", "version 2"),
        ("hash_chain", "pass", f"{expected['stepCount']} step(s), chain intact"),
        ("provider_neutrality", "pass", "no forbidden markers"),
        ("replayability", "pass", f"status={expected['status']}"),
    ]
    assert report.ok and report.first_failure is None
    assert report.to_json()["pass"] is True


def test_cli_verify_all_vectors_exit_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", *(str(VECTORS / name) for name in CASSETTES)]) == 0
    out = capsys.readouterr().out
    assert out.count("Result: ✓ PASS") == len(CASSETTES)


def test_cli_verify_exact_output(capsys: pytest.CaptureFixture[str]) -> None:
    path = VECTORS / SMALL
    assert main(["verify", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "◼ blackbox · verify",
        f"Path:   {path}",
        "Result: ✓ PASS",
        "",
        "  schema_version       pass  version 2",
        "  hash_chain           pass  3 step(s), chain intact",
        "  provider_neutrality  pass  no forbidden markers",
        "  replayability        pass  status=success",
    ]


def test_cli_verify_json_one_document_per_file(capsys: pytest.CaptureFixture[str]) -> None:
    path = VECTORS / SMALL
    assert main(["verify", str(path), "--json"]) == 0
    single = json.loads(capsys.readouterr().out)
    assert single == {
        "pass": True,
        "path": str(path),
        "invariants": [
            {"name": "schema_version", "status": "pass", "detail": "version 2"},
            {"name": "hash_chain", "status": "pass", "detail": "3 step(s), chain intact"},
            {"name": "provider_neutrality", "status": "pass", "detail": "no forbidden markers"},
            {"name": "replayability", "status": "pass", "detail": "status=success"},
        ],
    }
    assert main(["verify", str(path), str(VECTORS / "manifest.json"), "--json"]) == 1
    several = json.loads(capsys.readouterr().out)
    assert [doc["pass"] for doc in several] == [True, False]
    assert several[1]["firstFailure"] == {
        "name": "schema_version",
        "status": "fail",
        "detail": "version field is missing",
    }


# --------------------------------------------------------------------------------------------
# Tampering


def _flip(char: str) -> str | None:
    """Another character of the same class, so the JSON stays well formed."""
    if char.isdigit():
        return str((int(char) + 1) % 10)
    if "a" <= char <= "z":
        return chr((ord(char) - 97 + 1) % 26 + 97)
    if "A" <= char <= "Z":
        return chr((ord(char) - 65 + 1) % 26 + 65)
    return None


def _payload_mutations(payload: Any, positions: Iterator[int] | range) -> Iterator[tuple[int, Any]]:
    """(position, new payload) for each position of the canonical text whose flip still parses."""
    text = canonical_json(payload)
    for position in positions:
        flipped = _flip(text[position])
        if flipped is None:
            continue
        try:
            changed = json.loads(text[:position] + flipped + text[position + 1 :])
        except ValueError:
            continue
        if canonical_json(changed) != text:
            yield position, changed


def _assert_chain_failure(trace: Trace, index: int) -> None:
    report = verify_trace(trace)
    assert not report.ok
    failure = report.first_failure
    assert failure is not None
    assert (failure.name, failure.step_index) == ("hash_chain", index), failure
    assert _rows(report)[2:] == [
        ("provider_neutrality", "skip", "skipped"),
        ("replayability", "skip", "skipped"),
    ]


def test_every_payload_character_of_a_small_vector_is_protected() -> None:
    original = read_trace(SMALL)
    checked = 0
    for index, step in enumerate(original["steps"]):
        text = canonical_json(step["payload"])
        for _, changed in _payload_mutations(step["payload"], range(len(text))):
            trace = copy.deepcopy(original)
            trace["steps"][index]["payload"] = changed
            report = verify_trace(trace)
            assert not report.ok
            failure = report.first_failure
            assert failure is not None
            # A flip inside a key or an enum breaks the schema first; anything else is the chain's.
            assert (failure.name, failure.step_index) in {("hash_chain", index), ("schema_version", index)}
            checked += failure.name == "hash_chain"
    assert checked >= 100  # the free-text characters of the three payloads


@pytest.mark.parametrize("name", CASSETTES)
def test_sampled_payload_flips_in_every_vector_break_the_chain(name: str) -> None:
    original = read_trace(name)
    rng = random.Random(name)
    chain_failures = 0
    for index, step in enumerate(original["steps"]):
        text = canonical_json(step["payload"])
        sample = iter(rng.sample(range(len(text)), min(len(text), 12)))
        for _, changed in _payload_mutations(step["payload"], sample):
            trace = copy.deepcopy(original)
            trace["steps"][index]["payload"] = changed
            failure = verify_trace(trace).first_failure
            assert failure is not None and failure.step_index == index
            assert failure.name in {"hash_chain", "schema_version"}
            chain_failures += failure.name == "hash_chain"
    assert chain_failures >= len(original["steps"])


@pytest.mark.parametrize("name", CASSETTES)
def test_hash_and_prev_hash_characters_are_protected(name: str) -> None:
    """Every character of every link in the small vector, eight sampled per link elsewhere."""
    original = read_trace(name)
    rng = random.Random(name)
    hex_digits = "0123456789abcdef"
    for index, step in enumerate(original["steps"]):
        for field in ("hash", "prevHash"):
            value = step[field]
            if value is None:
                continue
            positions = range(len(value)) if name == SMALL else rng.sample(range(len(value)), 8)
            for position in positions:
                trace = copy.deepcopy(original)
                other = hex_digits[(hex_digits.index(value[position]) + 1) % 16]
                trace["steps"][index][field] = value[:position] + other + value[position + 1 :]
                _assert_chain_failure(trace, index)


@pytest.mark.parametrize("name", CASSETTES)
def test_index_and_timestamp_edits_break_the_chain(name: str) -> None:
    original = read_trace(name)
    for index in range(len(original["steps"])):
        moved = copy.deepcopy(original)
        moved["steps"][index]["index"] += 1
        _assert_chain_failure(moved, index)
        retimed = copy.deepcopy(original)
        retimed["steps"][index]["timestamp"] += 1
        _assert_chain_failure(retimed, index)


def test_ids_and_trace_fields_are_not_hashed() -> None:
    trace = read_trace("fixtures/traces/fork-child.v2.json")
    trace["id"] = "renamed"
    trace["createdAt"] = 12345
    trace["parentId"] = "someone-else"
    trace["steps"][2]["id"] = "renamed:2"
    assert verify_trace(trace).ok


def test_cli_tampered_file_fails_at_hash_chain(
    capsys: pytest.CaptureFixture[str], write_trace: Callable[[Trace, str], Path]
) -> None:
    trace = read_trace(SMALL)
    trace["steps"][1]["payload"]["text"] = "The capital of France is Lyon."
    path = write_trace(trace, "tampered.json")
    assert main(["verify", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "Result: ✗ FAIL"
    assert lines[4:8] == [
        "  schema_version       pass  version 2",
        f"  hash_chain           fail  `{path}` failed its hash-chain check: step 1: stored hash does not "
        "match its contents (the cassette was edited or corrupted after recording)",
        "  provider_neutrality  skip  skipped",
        "  replayability        skip  skipped",
    ]
    assert lines[8:] == [
        "",
        "Failure",
        "  invariant: hash_chain",
        "  at:        step 1",
        f"  detail:    {lines[5].split('fail  ', 1)[1]}",
        f"  action:    {ACTIONS['hash_chain']}",
    ]
    assert "Lyon" not in "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Loading and the other invariants


def test_load_failures_fail_schema_version_and_skip_the_rest(tmp_path: Path) -> None:
    cases = {
        "missing.json": None,
        "bad.json": '{"version": 2,',
        "v3.json": json.dumps({"version": 3, "id": "x", "createdAt": 0, "steps": []}),
        "v1.json": json.dumps({"version": 1}),
        "noversion.json": json.dumps({"id": "x"}),
        "list.json": "[]",
    }
    details = {}
    for name, content in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_text(content, encoding="utf-8")
        report = verify_trace(path)
        assert [(r.name, r.status) for r in report.invariants] == [
            ("schema_version", "fail"),
            ("hash_chain", "skip"),
            ("provider_neutrality", "skip"),
            ("replayability", "skip"),
        ]
        assert {r.detail for r in report.invariants[1:]} == {"skipped (load failed)"}
        details[name] = report.invariants[0].detail
    assert details["bad.json"].startswith(f"`{tmp_path / 'bad.json'}` is not valid JSON: ")
    assert details["bad.json"].endswith(" at line 1, column 15")
    assert details == {
        "missing.json": f"`{tmp_path / 'missing.json'}` does not exist",
        "bad.json": details["bad.json"],
        "v3.json": "version 3 is not supported (expected 2)",
        "v1.json": "version 1 is not supported (expected 2)",
        "noversion.json": "version field is missing",
        "list.json": "the cassette is not a JSON object",
    }


def test_schema_violation_names_the_step() -> None:
    trace = read_trace(SMALL)
    trace["steps"][1]["payload"]["extra"] = 1
    report = verify_trace(rechain(trace))
    failure = report.first_failure
    assert failure is not None
    assert (failure.name, failure.step_index) == ("schema_version", 1)
    assert failure.detail.startswith("the cassette does not match the trace v2 schema at /steps/1/payload")


def test_directory_and_garbage_sources_never_raise(tmp_path: Path) -> None:
    assert verify_trace(tmp_path).invariants[0].detail == f"`{tmp_path}` is a directory, not a cassette file"
    for garbage in (
        {},
        {"version": 2},
        {"version": 2, "id": 1, "createdAt": 0, "steps": [{"x": float("nan")}]},
    ):
        report = verify_trace(garbage)  # type: ignore[arg-type]
        assert not report.ok and report.first_failure is not None
        assert report.first_failure.name == "schema_version"
    odd = verify_trace([1])  # type: ignore[arg-type]
    assert odd.invariants[0].detail == "expected a trace or a cassette path, not list"
    assert verify_trace(tmp_path / "nope.json").path == str(tmp_path / "nope.json")


def test_success_marker_before_the_end_fails_replayability() -> None:
    trace = read_trace(SMALL)
    trace["steps"].append({**trace["steps"][0], "payload": {"messages": [], "tools": []}})
    report = verify_trace(rechain(trace))
    assert _rows(report)[3] == (
        "replayability",
        "fail",
        'trace claims run_completed/success but replay status is "incomplete"',
    )
    assert report.first_failure is not None and report.first_failure.step_index == 2


def test_incomplete_trace_still_verifies() -> None:
    trace = read_trace(SMALL)
    del trace["steps"][2]
    assert _rows(verify_trace(trace))[3] == ("replayability", "pass", "status=incomplete")


def test_render_failure_block_without_step() -> None:
    report = verify_trace({"id": "x"})  # type: ignore[arg-type]
    assert render_verify_report(report).splitlines() == [
        "◼ blackbox · verify",
        "Result: ✗ FAIL",
        "",
        "  schema_version       fail  version field is missing",
        "  hash_chain           skip  skipped (load failed)",
        "  provider_neutrality  skip  skipped (load failed)",
        "  replayability        skip  skipped (load failed)",
        "",
        "Failure",
        "  invariant: schema_version",
        "  detail:    version field is missing",
        f"  action:    {ACTIONS['schema_version']}",
    ]


def test_render_color_marks_the_verdict() -> None:
    text = render_verify_report(verify_trace(VECTORS / SMALL), color=True)
    assert "\033[32m✓ PASS\033[0m" in text
    assert re.search(r"schema_version\s+\033\[32mpass\033\[0m", text)


def test_cli_env_api_key_is_flagged_and_never_printed(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    write_trace: Callable[[Trace, str], Path],
) -> None:
    key = "live-key-9f8e7d6c5b4a"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    trace = read_trace("fixtures/traces/error-unknown-tool.v2.json")
    trace["steps"][3]["payload"] = {"toolCallId": "call-0", "toolName": "flights", "result": f"token {key}"}
    path = write_trace(rechain(trace), "leak.json")
    assert main(["verify", str(path)]) == 1
    assert main(["verify", str(path), "--json"]) == 1
    captured = capsys.readouterr()
    assert "  provider_neutrality  fail  markers: <api-key-value>" in captured.out
    assert '"detail": "markers: <api-key-value>"' in captured.out
    assert key not in captured.out + captured.err


def test_cli_api_key_env_option(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    write_trace: Callable[[Trace, str], Path],
) -> None:
    key = "gateway-key-1234567"
    monkeypatch.setenv("MY_GATEWAY_KEY", key)
    trace = read_trace("fixtures/traces/error-unknown-tool.v2.json")
    trace["steps"][3]["payload"] = {"toolCallId": "call-0", "toolName": "flights", "error": f"bad key {key}"}
    path = write_trace(rechain(trace), "gateway.json")
    assert main(["verify", str(path)]) == 0
    assert main(["verify", str(path), "--api-key-env", "MY_GATEWAY_KEY"]) == 1
    assert main(["verify", str(path), "--api-key-env", "UNSET_VARIABLE_X"]) == 1
    captured = capsys.readouterr()
    assert key not in captured.out + captured.err
    assert captured.err.splitlines() == [
        "blackbox verify: --api-key-env UNSET_VARIABLE_X: "
        "the environment variable UNSET_VARIABLE_X is not set"
    ]


# --------------------------------------------------------------------------------------------
# Provider keys are reported under provider_neutrality, as the original reports them


@pytest.mark.parametrize("as_file", [False, True], ids=["trace", "file"])
def test_a_provider_key_in_a_payload_is_a_neutrality_failure(
    as_file: bool, write_trace: Callable[[Trace, str], Path]
) -> None:
    trace = read_trace(SMALL)
    trace["steps"][1]["payload"]["stop_reason"] = "end_turn"
    trace["steps"][1]["payload"]["usage"] = {"input_tokens": 3}
    trace = rechain(trace)
    report = verify_trace(write_trace(trace, "leak.json") if as_file else trace)
    assert _rows(report) == [
        ("schema_version", "pass", "version 2"),
        ("hash_chain", "pass", "3 step(s), chain intact"),
        ("provider_neutrality", "fail", "markers: stop_reason, usage"),
        ("replayability", "skip", "skipped"),
    ]
    assert report.first_failure is not None and report.first_failure.step_index == 1


def test_provider_keys_in_a_step_or_at_the_top_level_are_named_too() -> None:
    trace = rechain(read_trace(SMALL))
    trace["steps"][2]["finish_reason"] = "stop"  # type: ignore[typeddict-unknown-key]  # beside the hashed fields: the chain holds
    trace["system_fingerprint"] = "fp_1"  # type: ignore[typeddict-unknown-key]
    report = verify_trace(trace)
    assert report.first_failure is not None
    assert (report.first_failure.name, report.first_failure.detail) == (
        "provider_neutrality",
        "markers: finish_reason, system_fingerprint",
    )
    assert report.first_failure.step_index == 2


def test_a_provider_key_beside_another_schema_error_is_still_a_schema_failure() -> None:
    trace = read_trace(SMALL)
    trace["steps"][1]["payload"]["stop_reason"] = "end_turn"
    trace["steps"][1]["payload"]["type"] = "tool_call"  # no toolCallId, toolName or toolInput
    report = verify_trace(rechain(trace))
    assert report.first_failure is not None
    assert (report.first_failure.name, report.first_failure.step_index) == ("schema_version", 1)


def test_provider_keys_in_user_data_are_neither_schema_nor_neutrality_failures() -> None:
    trace = read_trace("fixtures/traces/error-unknown-tool.v2.json")
    trace["steps"][2]["payload"]["toolInput"] = {"usage": 1, "stop_reason": "x"}
    assert verify_trace(rechain(trace)).ok


# --------------------------------------------------------------------------------------------
# Files are read one step at a time, with the strict reader's rules and messages


def _cut_small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read files 5 bytes at a time, so every token is cut by a refill somewhere."""
    monkeypatch.setattr(stream, "CHUNK", 5)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda t: t.replace('"role": "user"', '"role": "user", "role": "user"', 1), "duplicate object key"),
        (lambda t: t.replace('"timestamp": 0', '"timestamp": NaN', 1), "NaN or Infinity"),
        (lambda t: t.replace('"timestamp": 0', '"timestamp": 1e999', 1), "too large for a double"),
        (lambda t: t.replace('"timestamp": 0', '"timestamp": 9007199254740993', 1), r"beyond 2\*\*53"),
        (lambda t: t[: len(t) // 2], "Unterminated string|Expecting"),
        (lambda t: t + "{}", "Extra data"),
    ],
)
def test_a_strict_reading_problem_anywhere_names_its_line_and_column(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, edit: Callable[[str], str], problem: str
) -> None:
    text = (VECTORS / SMALL).read_text(encoding="utf-8")
    path = tmp_path / "bad.json"
    path.write_text(edit(text), encoding="utf-8")
    _cut_small(monkeypatch)
    failure = verify_trace(path).first_failure
    assert failure is not None and failure.name == "schema_version"
    assert re.search(problem, failure.detail)
    assert re.search(r" at line \d+, column \d+", failure.detail)
    with pytest.raises(CassetteError) as raised:
        load_trace(path)
    assert failure.detail == str(raised.value)


def test_bytes_that_are_not_utf8_are_named_by_offset(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    data = (VECTORS / SMALL).read_bytes()
    path = tmp_path / "latin1.json"
    path.write_bytes(data.replace(b"Paris", b"Par\xefs", 1))
    _cut_small(monkeypatch)
    failure = verify_trace(path).first_failure
    assert failure is not None
    assert failure.detail == f"`{path}` is not UTF-8 text (invalid byte at offset {data.index(b'Paris') + 3})"


def test_escapes_numbers_and_member_order_survive_every_cut(
    monkeypatch: pytest.MonkeyPatch, write_trace: Callable[[Trace, str], Path]
) -> None:
    trace = read_trace(SMALL)
    trace["steps"][1]["payload"]["text"] = 'lone \ud800 pair \U0001f600 °C \\ " \u2028'
    trace["steps"][0]["payload"]["params"] = {"n": [2**64, 1e-7, 1e21, 0.1, -0.0, 123456789012345, 2.5]}
    trace = rechain(trace)
    path = write_trace(trace, "tricky.json")
    reordered = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({"steps": reordered.pop("steps"), **reordered}), encoding="utf-8")
    _cut_small(monkeypatch)
    report = verify_trace(path, keep_trace=True)
    assert report.ok, report.to_json()
    assert canonical_json(report.trace) == canonical_json(trace)


def test_verifying_a_file_holds_one_step_at_a_time(
    monkeypatch: pytest.MonkeyPatch, write_trace: Callable[[Trace, str], Path]
) -> None:
    monkeypatch.setattr(stream, "CHUNK", 1 << 16)
    recorder = TraceRecorder("big", 0)
    for index in range(400):
        recorder.append("metadata", {"event": "note", "detail": f"{index:05d} " + "x" * 10_000}, index)
    path = write_trace(recorder.trace(), "big.json")
    size = path.stat().st_size
    tracemalloc.start()
    try:
        report = verify_trace(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.ok
    assert peak < size / 8, f"verify held {peak / size:.2f}x the file size"
