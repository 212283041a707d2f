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
from ..trace.chain import ChainCheck
from ..trace.errors import CanonicalJSONError, CassetteError
from ..trace.io import collector_paused, parse_json, read_text, share_repeated
from ..trace.model import CURRENT_TRACE_VERSION, Trace
from ..trace.nesting import MAX_NESTING, TOO_DEEP, nested_too_deeply
from ..trace.payloads import ToolRounds, outcome_of, terminal_outcome
from ..trace.schema import validate_step, validate_top_level
from ..trace.secrets import mask
from ..trace.stream import CHUNK, NotStreamable, Step, stream_cassette, stream_text
from .neutrality import NeutralityScanner, without_provider_keys

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

    @property
    def where(self) -> str:
        """`` at step 3``, or nothing when the failure names no step."""
        return f" at step {self.step_index}" if self.step_index is not None else ""

    def summary(self) -> str:
        """``hash_chain failed at step 3: …``: the one line that names a failed invariant."""
        return f"{self.name} failed{self.where}: {self.detail}"

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
    #: What passes the original Blackbox's invariants but a replay refuses (tool rounds that disagree).
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """``{pass, path?, invariants: [{name, status, detail, stepIndex?}], firstFailure?}``."""
        data: dict[str, Any] = {"pass": self.ok}
        if self.path is not None:
            data["path"] = self.path
        data["invariants"] = [result.to_json() for result in self.invariants]
        if self.first_failure is not None:
            data["firstFailure"] = self.first_failure.to_json()
        if self.warnings:
            data["warnings"] = list(self.warnings)
        return data


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


def _is_success_marker(step: Any) -> bool:
    if not isinstance(step, dict) or step.get("type") != "metadata":
        return False
    return outcome_of(step.get("payload")).status == "success"


_TOO_DEEP_TO_READ = f"the cassette is {TOO_DEEP}"


class _Checks:
    """Every invariant over one trace, fed in document order: top-level members, then each step.

    A whole document and a file read one step at a time go through the same checks, and report
    what checking the whole document invariant by invariant would: the schema of every step is
    checked even after a broken link, since a schema failure anywhere comes first, and a file is
    read to its end even after a failure, since not being JSON comes before anything.
    """

    def __init__(
        self,
        path: str | None,
        keys: Sequence[str],
        *,
        text: str | None,
        keep: bool,
        held: bool = False,
        share: bool = False,
    ) -> None:
        """``keep``: keep the steps fed (for the trace); ``held``: the caller holds them all the while;
        ``share``: the steps are this reader's own, and the messages they repeat may become one object
        (``trace.io.share_repeated``), checked once."""
        self.path = path
        self.keys = keys
        self.top: dict[str, Any] = {}
        self.is_object = True
        self.steps: list[Any] | None = [] if keep else None
        self.count = 0
        self.schema_failure: InvariantResult | None = None
        self.chain_failure: InvariantResult | None = None
        self.chain = ChainCheck(path, shared=share or held)
        self.neutrality = NeutralityScanner(keys, text=text)
        self.early_success: int | None = None
        self.rounds = ToolRounds()
        self.last: Any = None
        #: The containers the depth check walked (``nested_too_deeply``), while the steps stay alive.
        self.walked: dict[int, int] | None = {} if keep or held else None
        #: The repeated items read so far, by what ``marshal`` writes of them (``share``).
        self.seen: dict[bytes, Any] | None = {} if share else None

    @property
    def failed(self) -> bool:
        """Whether a step failed already (its schema or the chain), which decides the report unless
        the file turns out not to be JSON."""
        return self.schema_failure is not None or self.chain_failure is not None

    def _fail(self, name: str, exc: CassetteError) -> InvariantResult:
        return InvariantResult(name, "fail", mask(str(exc), self.keys), exc.step_index)

    def member(self, key: str, value: Any) -> None:
        """A top-level member; a ``steps`` list is fed to :meth:`step` element by element."""
        self.top[key] = value
        self.neutrality.member(key, value)

    def step(
        self, position: int, step: Any, exact_numbers: bool = False, containers: int | None = None
    ) -> None:
        """The step at ``position``; ``exact_numbers`` and ``containers`` as the streaming reader
        reports them (``None``: not counted)."""
        if self.seen is not None:
            share_repeated(step, self.seen)
        if self.steps is not None:
            self.steps.append(step)
        self.count = position + 1
        if self.schema_failure is None:
            self.schema_failure = self._step_schema(position, step, containers)
        if self.schema_failure is not None or self.chain_failure is not None:
            return  # that failure is the report: the later invariants are not looked at
        self.chain_failure = self._step_chain(position, step, exact_numbers)
        self.neutrality.step(position, step, self.chain.hashed)
        self.rounds.step(position, step)
        if self.early_success is None and self.last is not None and _is_success_marker(self.last):
            self.early_success = position - 1
        self.last = step

    def _step_schema(self, position: int, step: Any, containers: int | None) -> InvariantResult | None:
        # what loading and replaying refuse, verify fails too; a step holding no more objects and
        # arrays than the limit cannot nest deeper than it, and is not walked
        fits = containers is not None and containers <= MAX_NESTING
        if not fits and nested_too_deeply(step, walked=self.walked):
            return InvariantResult("schema_version", "fail", f"step {position} is {TOO_DEEP}", position)
        try:
            validate_step(step, position, path=self.path)
        except CassetteError as exc:
            if _only_provider_keys(step, position):
                return None  # provider_neutrality names them
            return self._fail("schema_version", exc)
        except RecursionError:
            return InvariantResult("schema_version", "fail", _TOO_DEEP_TO_READ)
        return None

    def _step_chain(self, position: int, step: Any, exact_numbers: bool) -> InvariantResult | None:
        try:
            error = self.chain.check(step, position, exact_numbers=exact_numbers)
        except RecursionError:
            return InvariantResult("hash_chain", "fail", "a step is nested too deeply to hash")
        return None if error is None else self._fail("hash_chain", error)

    def trace(self) -> Trace:
        """The checked trace, as read (only when asked to keep the steps)."""
        doc = dict(self.top)
        if self.steps is not None and isinstance(doc.get("steps"), list):
            doc["steps"] = self.steps
        return cast(Trace, doc)

    def warnings(self) -> tuple[str, ...]:
        """Why a replay would refuse a file that passes: its tool rounds disagree with their model output."""
        message = self.rounds.message
        return () if message is None else (f"{message} (a replay refuses this cassette)",)

    def results(self) -> list[InvariantResult]:
        """The verdicts in invariant order, up to and including the first failure."""
        results = [self._schema_result()]
        if results[-1].status == "fail":
            return results
        if self.chain_failure is not None:
            return [*results, self.chain_failure]
        results.append(InvariantResult("hash_chain", "pass", f"{self.count} step(s), chain intact"))
        scan = self.neutrality.result()
        if scan.markers:
            detail = "markers: " + ", ".join(scan.markers)
            return [*results, InvariantResult("provider_neutrality", "fail", detail, scan.step_index)]
        results.append(InvariantResult("provider_neutrality", "pass", "no forbidden markers"))
        status = terminal_outcome(cast(Trace, {"steps": [self.last] if self.count else []})).status
        if self.early_success is not None:
            detail = f'trace claims run_completed/success but replay status is "{status}"'
            return [*results, InvariantResult("replayability", "fail", detail, self.early_success)]
        return [*results, InvariantResult("replayability", "pass", f"status={status}")]

    def _schema_result(self) -> InvariantResult:
        problem = _version_problem(self.top if self.is_object else None)
        if problem is not None:
            return InvariantResult("schema_version", "fail", problem)
        try:
            validate_top_level(self.top, path=self.path)
        except CassetteError as exc:
            if not _only_provider_keys(self.top, None):
                return self._fail("schema_version", exc)
        except RecursionError:
            return InvariantResult("schema_version", "fail", _TOO_DEEP_TO_READ)
        if self.schema_failure is not None:
            return self.schema_failure
        return InvariantResult("schema_version", "pass", f"version {CURRENT_TRACE_VERSION}")


def _only_provider_keys(value: Any, position: int | None) -> bool:
    """Whether ``value`` breaks the schema only by holding provider keys (``usage``, ``stop_reason``…).

    Those are what ``provider_neutrality`` is for: it reports them by name, as the original does.
    """
    try:
        stripped = without_provider_keys(value)
        if position is None:
            validate_top_level(stripped)
        else:
            validate_step(stripped, position)
    except (CassetteError, RecursionError):
        return False
    return True


def _check_document(doc: Any, path: str | None, keys: Sequence[str], text: str | None) -> _Checks:
    checks = _Checks(path, keys, text=text, keep=False, held=True)
    if not isinstance(doc, dict):
        checks.is_object = False
        return checks
    for key, value in doc.items():
        checks.member(str(key), value)
        if key == "steps" and isinstance(value, list):
            for position, step in enumerate(value):
                checks.step(position, step)
    return checks


def _check_file(path: str, keys: Sequence[str], keep: bool, text: str | None) -> tuple[_Checks, Any]:
    """The checks over the cassette at ``path`` (its ``text`` when already read), and the trace if
    kept; ``CassetteError`` if unreadable.

    A file larger than the reader's window is read one step at a time; a smaller one is read whole,
    which costs no more memory and lets provider neutrality clear the whole text at once. Text that
    reader does not take (not JSON, an unusual shape) is parsed whole, which also gives the exact
    message for what is wrong with it; so is a text in memory once a step has failed, since only
    the rest being JSON can change the report then, and the C parser says that much faster than
    the step reader walks a long array of small values.
    """
    if text is None and _fits_the_window(path):
        text = read_text(path)
    checks = _Checks(path, keys, text=text, keep=keep, share=keep)  # kept steps: walked once too
    try:
        for item in stream_cassette(path) if text is None else stream_text(text):
            if isinstance(item, Step):
                checks.step(item.position, item.value, item.exact_numbers, item.containers)
                if text is not None and checks.failed:
                    raise NotStreamable
            else:
                checks.member(item.key, item.value)
    except NotStreamable:
        text = read_text(path) if text is None else text
        doc = parse_json(text, path=path)
        return _check_document(doc, path, keys, text), doc if keep else None
    return checks, checks.trace() if keep else None


def _fits_the_window(path: str) -> bool:
    try:
        return os.stat(path).st_size <= CHUNK
    except (OSError, ValueError):
        return False  # the streaming reader's fallback names the problem


def verify_trace(
    source: Trace | str | os.PathLike[str],
    *,
    api_keys: Sequence[str] = (),
    keep_trace: bool = False,
    text: str | None = None,
) -> VerifyReport:
    """Run the four invariants on a trace or a cassette file; never raises for bad data.

    ``api_keys`` are literal key values to look for anywhere (reported as ``<api-key-value>``,
    never echoed). A large file is read one step at a time and each step dropped once checked, so
    the report holds the trace read from a file only with ``keep_trace``; a dict is always kept.
    ``text`` is the file's content when the caller has read it already (its bytes decoded as
    UTF-8): that text is checked, and the file is not read. A trace kept from a file holds each
    message the ``model_input`` steps repeat once (``trace.io.share_repeated``): never edit it in
    place.
    """
    keys = [key for key in api_keys if isinstance(key, str)]
    path = _path_of(source)
    trace: Any = None
    warnings: tuple[str, ...] = ()
    if isinstance(source, dict):
        checks = _check_document(source, None, keys, None)
        results, warnings = checks.results(), checks.warnings()
        trace = source
    elif path is None:
        detail = f"expected a trace or a cassette path, not {type(source).__name__}"
        results = [InvariantResult("schema_version", "fail", detail)]
    else:
        try:
            with collector_paused():
                checks, trace = _check_file(path, keys, keep_trace, text)
            results, warnings = checks.results(), checks.warnings()
        except CassetteError as exc:
            results = [InvariantResult("schema_version", "fail", mask(str(exc), keys))]
    failure = results[-1] if results[-1].status == "fail" else None
    unreadable = failure is not None and failure.name == "schema_version"
    skip_reason = "skipped (load failed)" if unreadable else "skipped"
    for name in INVARIANTS[len(results) :]:
        results.append(InvariantResult(name, "skip", skip_reason))
    return VerifyReport(failure is None, path, results, failure, None if unreadable else trace, warnings)


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
    lines += [f"Warning: {warning}" for warning in report.warnings]
    return "\n".join(lines)
