"""``blackbox verify``: the four checks that make a cassette trustworthy to commit and replay.

Verification never raises for bad data: a report (the failing check, the step, a fix) is what a CI
job and a human both need. See docs/cli-analysis.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from ..trace.canonical import js_number
from ..trace.chain import validate_chain
from ..trace.errors import CanonicalJSONError, CassetteError
from ..trace.io import parse_json, read_text
from ..trace.model import CURRENT_TRACE_VERSION, Trace
from ..trace.payloads import terminal_outcome
from ..trace.schema import validate_schema
from ..trace.secrets import mask
from .neutrality import scan_trace

__all__ = [
    "ACTIONS",
    "INVARIANTS",
    "InvariantResult",
    "VerifyReport",
    "render_row",
    "render_status",
    "render_verify_report",
    "verify_trace",
]

InvariantStatus = Literal["pass", "fail", "skip"]

INVARIANTS: Final = ("schema_version", "hash_chain", "provider_neutrality", "replayability")

#: What to do about each failure; the same advice the original Blackbox gives.
ACTIONS: Final = {
    "schema_version": (
        "The cassette is missing a version, unsupported, malformed, or unreadable. Older cassettes are "
        "not migrated — re-record the run (`blackbox record --out <file> -- <command>`)."
    ),
    "hash_chain": (
        "A step's stored hash no longer matches its contents, or the chain links are broken — the cassette "
        "was edited or corrupted after recording. Do not hand-edit cassettes; re-record to regenerate a "
        "valid chain."
    ),
    "provider_neutrality": (
        "A provider-native field leaked into the trace (an id prefix, usage/stop metadata, or a key). The "
        "recorder/adapter boundary let a raw provider object through — never commit this cassette; fix the "
        "boundary and re-record."
    ),
    "replayability": (
        "The trace does not replay to a consistent verdict — its success marker is not the terminal step, "
        "or replay could not reconstruct the run (truncated/inconsistent trace). Re-record to produce a "
        "replayable cassette."
    ),
}


@dataclass(frozen=True)
class InvariantResult:
    """One invariant's verdict; ``step_index`` names the step a failure was found at, if any."""

    name: str
    status: InvariantStatus
    detail: str
    step_index: int | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "status": self.status, "detail": self.detail}
        if self.step_index is not None:
            data["stepIndex"] = self.step_index
        return data


@dataclass(frozen=True)
class VerifyReport:
    """The four verdicts in order; ``trace`` is the checked trace when it could be loaded."""

    ok: bool
    path: str | None
    invariants: list[InvariantResult]
    first_failure: InvariantResult | None
    trace: Trace | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """``{pass, path?, invariants: [{name, status, detail, stepIndex?}], firstFailure?}``."""
        data: dict[str, Any] = {"pass": self.ok}
        if self.path is not None:
            data["path"] = self.path
        data["invariants"] = [result.to_json() for result in self.invariants]
        if self.first_failure is not None:
            data["firstFailure"] = self.first_failure.to_json()
        return data


class _Failed(Exception):
    """One invariant failed; carries the result to report."""

    def __init__(self, result: InvariantResult) -> None:
        super().__init__(result.detail)
        self.result = result


def _version_problem(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return "the cassette is not a JSON object"
    if "version" not in doc:
        return "version field is missing"
    version = doc["version"]
    if isinstance(version, bool) or not isinstance(version, (int, float)):
        return f"version field is not a number (expected {CURRENT_TRACE_VERSION})"
    if version != CURRENT_TRACE_VERSION:
        try:
            shown = js_number(version)
        except CanonicalJSONError:
            shown = repr(version)
        return f"version {shown} is not supported (expected {CURRENT_TRACE_VERSION})"
    return None


def _path_of(source: Any) -> str | None:
    if isinstance(source, dict):
        return None
    try:
        return str(os.fspath(source))
    except TypeError:
        return None


def _load(source: Any, keys: Sequence[str]) -> tuple[Any, str | None, str | None]:
    """(document, file text, path), or ``_Failed`` at ``schema_version``."""
    if isinstance(source, dict):
        return source, None, None
    path = _path_of(source)
    if path is None:
        detail = f"expected a trace or a cassette path, not {type(source).__name__}"
        raise _Failed(InvariantResult("schema_version", "fail", detail))
    try:
        text = read_text(path)
        return parse_json(text, path=path), text, path
    except CassetteError as exc:
        raise _Failed(InvariantResult("schema_version", "fail", mask(str(exc), keys), None)) from None


def _check_schema(doc: Any, path: str | None, keys: Sequence[str]) -> InvariantResult:
    problem = _version_problem(doc)
    if problem is not None:
        raise _Failed(InvariantResult("schema_version", "fail", problem))
    try:
        validate_schema(doc, path=path)
    except CassetteError as exc:
        raise _Failed(
            InvariantResult("schema_version", "fail", mask(str(exc), keys), exc.step_index)
        ) from None
    except RecursionError:
        raise _Failed(
            InvariantResult("schema_version", "fail", "the cassette is nested too deeply to read")
        ) from None
    return InvariantResult("schema_version", "pass", f"version {CURRENT_TRACE_VERSION}")


def _check_chain(doc: Trace, path: str | None, keys: Sequence[str]) -> InvariantResult:
    try:
        validate_chain(doc, path=path)
    except CassetteError as exc:
        raise _Failed(InvariantResult("hash_chain", "fail", mask(str(exc), keys), exc.step_index)) from None
    except RecursionError:
        raise _Failed(InvariantResult("hash_chain", "fail", "a step is nested too deeply to hash")) from None
    return InvariantResult("hash_chain", "pass", f"{len(doc['steps'])} step(s), chain intact")


def _check_neutrality(doc: Trace, text: str | None, keys: Sequence[str]) -> InvariantResult:
    scan = scan_trace(doc, keys, text=text)
    if scan.markers:
        detail = "markers: " + ", ".join(scan.markers)
        raise _Failed(InvariantResult("provider_neutrality", "fail", detail, scan.step_index))
    return InvariantResult("provider_neutrality", "pass", "no forbidden markers")


def _is_success_marker(step: Any) -> bool:
    payload = step.get("payload")
    return (
        step.get("type") == "metadata"
        and isinstance(payload, dict)
        and payload.get("event") == "run_completed"
        and payload.get("status") == "success"
    )


def _check_replayability(doc: Trace) -> InvariantResult:
    status = terminal_outcome(doc).status
    steps = doc["steps"]
    for position, step in enumerate(steps[:-1]):
        if step.get("type") == "metadata" and _is_success_marker(step):
            detail = f'trace claims run_completed/success but replay status is "{status}"'
            raise _Failed(InvariantResult("replayability", "fail", detail, position))
    return InvariantResult("replayability", "pass", f"status={status}")


def verify_trace(source: Trace | str | os.PathLike[str], *, api_keys: Sequence[str] = ()) -> VerifyReport:
    """Run the four invariants on a trace or a cassette file; never raises for bad data.

    ``api_keys`` are literal key values to look for anywhere (reported as ``<api-key-value>``,
    never echoed).
    """
    keys = [key for key in api_keys if isinstance(key, str)]
    path = _path_of(source)
    results: list[InvariantResult] = []
    trace: Trace | None = None
    try:
        doc, text, path = _load(source, keys)
        results.append(_check_schema(doc, path, keys))
        trace = cast(Trace, doc)
        results.append(_check_chain(trace, path, keys))
        results.append(_check_neutrality(trace, text, keys))
        results.append(_check_replayability(trace))
    except _Failed as failed:
        results.append(failed.result)
    failure = next((result for result in results if result.status == "fail"), None)
    skip_reason = (
        "skipped (load failed)" if failure is not None and failure.name == "schema_version" else "skipped"
    )
    for name in INVARIANTS[len(results) :]:
        results.append(InvariantResult(name, "skip", skip_reason))
    return VerifyReport(failure is None, path, results, failure, trace)


_GREEN, _RED, _DIM, _RESET = "\033[32m", "\033[31m", "\033[2m", "\033[0m"


def _paint(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{_RESET}" if color else text


def render_status(status: str, color: bool = False) -> str:
    """``pass``/``fail``/``skip``, coloured when asked."""
    code = {"pass": _GREEN, "fail": _RED}.get(status, _DIM)
    return _paint(status, code, color)


def render_row(name: str, status: str, detail: str, color: bool = False) -> str:
    """``  schema_version       pass  version 2``: the row shape ``verify`` and ``assert`` share."""
    return f"  {name:<20} {render_status(status, color)}  {detail}"


def render_verify_report(report: VerifyReport, color: bool = False) -> str:
    """The ``blackbox verify`` text report (the original's 0.1 layout)."""
    verdict = _paint("✓ PASS", _GREEN, color) if report.ok else _paint("✗ FAIL", _RED, color)
    lines = ["◼ blackbox · verify"]
    if report.path is not None:
        lines.append(f"Path:   {report.path}")
    lines += [f"Result: {verdict}", ""]
    lines += [render_row(result.name, result.status, result.detail, color) for result in report.invariants]
    failure = report.first_failure
    if failure is not None:
        lines += ["", "Failure", f"  invariant: {failure.name}"]
        if failure.step_index is not None:
            lines.append(f"  at:        step {failure.step_index}")
        lines += [f"  detail:    {failure.detail}", f"  action:    {ACTIONS[failure.name]}"]
    return "\n".join(lines)
