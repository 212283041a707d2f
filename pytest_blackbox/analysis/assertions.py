"""``blackbox assert``: pin a recorded run's outcome in CI.

Verification runs first, and a cassette that fails it has no expectation judged: a cassette is only
evidence if it verifies. See docs/cli-analysis.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..trace.model import Trace
from ..trace.payloads import terminal_outcome, tool_call_sequence
from ..trace.secrets import truncate_masked
from .verify import InvariantStatus, VerifyReport, render_row, render_verify_report, verify_trace

__all__ = [
    "AssertReport",
    "CheckResult",
    "assert_cassette",
    "check_final_answer",
    "check_status",
    "check_tools",
    "parse_tools",
    "render_assert_report",
]

SKIPPED: Final = "skipped (verification failed)"
#: Answers in a report row are cut here (masked first), so one row stays readable.
ANSWER_LIMIT: Final = 120


@dataclass(frozen=True)
class CheckResult:
    """One expectation's verdict: ``status``, ``final_answer``, ``failure_reason`` or ``tools``."""

    name: str
    status: InvariantStatus
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class AssertReport:
    """The verification report, then one result per supplied expectation."""

    ok: bool
    verify: VerifyReport
    checks: list[CheckResult]

    def to_json(self) -> dict[str, Any]:
        return {
            "pass": self.ok,
            "verify": self.verify.to_json(),
            "expectations": [c.to_json() for c in self.checks],
        }


def parse_tools(value: str) -> list[str]:
    """``a,b`` → ``["a", "b"]``; ``""`` → ``[]`` (a run with no tool calls)."""
    return [name.strip() for name in value.split(",")] if value.strip() else []


def _tools_text(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "(none)"


def _quoted(text: str | None, keys: Sequence[str]) -> str:
    if text is None:
        return "(none)"
    return truncate_masked(json.dumps(text, ensure_ascii=False), ANSWER_LIMIT, keys)


def _compare(name: str, expected: Any, actual: Any, shown_expected: str, shown_actual: str) -> CheckResult:
    if expected == actual:
        return CheckResult(name, "pass", shown_actual)
    return CheckResult(name, "fail", f"expected {shown_expected}, got {shown_actual}")


def check_status(expected: str, actual: str) -> CheckResult:
    """The terminal status, exactly."""
    return _compare("status", expected, actual, expected, actual)


def check_final_answer(expected: str, actual: str | None, keys: Sequence[str] = ()) -> CheckResult:
    """The final answer, exactly (both shown quoted, masked and cut)."""
    return _compare("final_answer", expected, actual, _quoted(expected, keys), _quoted(actual, keys))


def check_tools(expected: Sequence[str], actual: Sequence[str]) -> CheckResult:
    """The names of the tools called, exactly and in order (``[]``: no tool call)."""
    return _compare("tools", list(expected), list(actual), _tools_text(expected), _tools_text(actual))


def _checks(
    trace: Trace,
    keys: Sequence[str],
    status: str | None,
    final_answer: str | None,
    tools: Sequence[str] | None,
    failure_reason: str | None,
) -> list[CheckResult]:
    outcome = terminal_outcome(trace)
    results: list[CheckResult] = []
    if status is not None:
        results.append(check_status(status, outcome.status))
    if final_answer is not None:
        results.append(check_final_answer(final_answer, outcome.final_answer, keys))
    if failure_reason is not None:
        got = outcome.failure_reason
        results.append(
            _compare(
                "failure_reason", failure_reason, got, failure_reason, got if got is not None else "(none)"
            )
        )
    if tools is not None:
        results.append(check_tools(tools, tool_call_sequence(trace)))
    return results


def assert_cassette(
    source: Trace | str | os.PathLike[str],
    *,
    expect_status: str | None = None,
    expect_final_answer: str | None = None,
    expect_tools: Sequence[str] | None = None,
    expect_failure_reason: str | None = None,
    api_keys: Sequence[str] = (),
) -> AssertReport:
    """Verify, then check only the supplied expectations, exactly. Never raises for bad data."""
    report = verify_trace(source, api_keys=api_keys, keep_trace=True)
    if report.ok and report.trace is not None:
        checks = _checks(
            report.trace, api_keys, expect_status, expect_final_answer, expect_tools, expect_failure_reason
        )
    else:
        supplied = (
            ("status", expect_status),
            ("final_answer", expect_final_answer),
            ("failure_reason", expect_failure_reason),
            ("tools", expect_tools),
        )
        checks = [CheckResult(name, "skip", SKIPPED) for name, value in supplied if value is not None]
    ok = report.ok and all(check.status == "pass" for check in checks)
    return AssertReport(ok, report, checks)


def render_assert_report(report: AssertReport, color: bool = False) -> str:
    """The verification report, then an ``expectations`` block with one row per check."""
    lines = [render_verify_report(report.verify, color), "", "expectations"]
    if not report.checks:
        lines.append("  (none given: only verification was checked)")
    lines += [render_row(check.name, check.status, check.detail, color) for check in report.checks]
    return "\n".join(lines)
