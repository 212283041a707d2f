"""assert: verification first, then exact expectations."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_blackbox.analysis.assertions import assert_cassette, parse_tools, render_assert_report
from pytest_blackbox.cli import main
from pytest_blackbox.trace.model import Trace
from tests import VECTORS

from .conftest import read_trace

FIXED = VECTORS / "examples/fleet-triage/cassettes/triage-fixed.json"
ERROR = VECTORS / "fixtures/traces/error-unknown-tool.v2.json"


def _checks(report: object) -> list[tuple[str, str, str]]:
    return [(c.name, c.status, c.detail) for c in report.checks]  # type: ignore[attr-defined]


def test_parse_tools() -> None:
    assert parse_tools("a,b") == ["a", "b"]
    assert parse_tools(" a , b ") == ["a", "b"]
    assert parse_tools("") == []


def test_passing_expectations() -> None:
    report = assert_cassette(
        FIXED, expect_status="success", expect_tools=["lookup_dtc", "get_telemetry", "open_work_order"]
    )
    assert report.ok
    assert _checks(report) == [
        ("status", "pass", "success"),
        ("tools", "pass", "lookup_dtc, get_telemetry, open_work_order"),
    ]


def test_failing_expectations_are_exact() -> None:
    report = assert_cassette(
        ERROR,
        expect_status="success",
        expect_final_answer="anything",
        expect_tools=[],
        expect_failure_reason="unknown_tool",
    )
    assert not report.ok
    assert _checks(report) == [
        ("status", "fail", "expected success, got error"),
        ("final_answer", "fail", 'expected "anything", got (none)'),
        ("failure_reason", "pass", "unknown_tool"),
        ("tools", "fail", "expected (none), got flights"),
    ]


def test_final_answer_must_match_exactly() -> None:
    answer = read_trace("fixtures/traces/success-final-answer.v2.json")["steps"][-1]["payload"]["result"]
    path = VECTORS / "fixtures/traces/success-final-answer.v2.json"
    assert assert_cassette(path, expect_final_answer=answer).ok
    near = assert_cassette(path, expect_final_answer=answer + " ")
    assert _checks(near) == [
        ("final_answer", "fail", f'expected "{answer} ", got "{answer}"'),
    ]
    assert assert_cassette(path, expect_tools=[]).ok


def test_verification_failure_skips_every_expectation(write_trace: Callable[[Trace, str], Path]) -> None:
    trace = read_trace("fixtures/traces/success-final-answer.v2.json")
    trace["steps"][0]["timestamp"] = 1
    report = assert_cassette(write_trace(trace, "edited.json"), expect_status="success", expect_tools=[])
    assert not report.ok and not report.verify.ok
    assert _checks(report) == [
        ("status", "skip", "skipped (verification failed)"),
        ("tools", "skip", "skipped (verification failed)"),
    ]


def test_render_and_cli_exact_output(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "assert",
            str(FIXED),
            "--expect-status",
            "success",
            "--expect-tools",
            "lookup_dtc,get_telemetry,open_work_order",
        ]
    )
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3:] == [
        "expectations",
        "  status               pass  success",
        "  tools                pass  lookup_dtc, get_telemetry, open_work_order",
    ]
    assert lines[:3] == ["◼ blackbox · verify", f"Path:   {FIXED}", "Result: ✓ PASS"]


def test_cli_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["assert", str(ERROR), "--expect-status", "error", "--expect-failure-reason", "unknown_tool"])
        == 0
    )
    assert main(["assert", str(ERROR), "--expect-tools", ""]) == 1
    assert main(["assert", str(VECTORS / "manifest.json"), "--expect-status", "success"]) == 1
    out = capsys.readouterr().out
    assert "  tools                fail  expected (none), got flights" in out
    assert "  status               skip  skipped (verification failed)" in out


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["assert", str(ERROR), "--expect-status", "error", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pass"] is True
    assert data["expectations"] == [{"name": "status", "status": "pass", "detail": "error"}]
    assert data["verify"]["pass"] is True


def test_no_expectations_only_verifies() -> None:
    report = assert_cassette(ERROR)
    assert report.ok and report.checks == []
    assert render_assert_report(report).splitlines()[-2:] == [
        "expectations",
        "  (none given: only verification was checked)",
    ]


def test_answers_are_masked_in_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-ant-api03-" + "m" * 30
    report = assert_cassette(ERROR, expect_final_answer=f"use {key}")
    assert _checks(report) == [("final_answer", "fail", 'expected "use [redacted]", got (none)')]
