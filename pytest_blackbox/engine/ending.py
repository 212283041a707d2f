"""How a run ends: its terminal payload, the report ``finish()`` returns, the checks before a
cassette is written (it must verify and hold no known API key), and the session's ending half
(:class:`Ending`: write, check the replay, end at the process exit, report to the launcher). See
docs/engine.md#ending-a-run-finish.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ..analysis.jsondiff import format_path
from ..analysis.verify import verify_trace
from ..errors import BlackboxError, BlackboxUsageError, CassetteError, ReplayDivergenceError, SecretLeakError
from ..trace.io import save_trace
from ..trace.model import Terminal, Trace, TraceStep
from ..trace.payloads import (
    agent_error,
    calls_in_flight,
    model_output_text,
    outcome_of,
    process_exit,
    run_completed,
)
from ..trace.secrets import contains_secret, known_secrets
from .fork import SessionFork
from .keys import KnownKeys
from .launched import write_report
from .options import _UNSET, SessionOptions
from .recording import Recording
from .replay import ReplayCursor

__all__ = [
    "Ending",
    "RunReport",
    "check_finish_arguments",
    "check_replay",
    "exit_refusal",
    "exit_terminal",
    "launcher_report",
    "terminal_payload",
    "write_cassette",
    "write_refusal",
]


@dataclass(frozen=True)
class RunReport:
    """What ``finish()`` did: the launcher and the pytest plugin print it."""

    mode: str
    path: str | None
    steps: int
    status: str
    replayed_steps: int = 0
    finished: bool = True

    @classmethod
    def of(
        cls, mode: str, path: object, steps: int, terminal: Terminal | None, replayed_steps: int = 0
    ) -> RunReport:
        """The report of a run whose cassette ended with ``terminal`` (``None``: incomplete)."""
        return cls(mode, str(path), steps, outcome_of(terminal).status, replayed_steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "mode": self.mode,
            "path": self.path,
            "steps": self.steps,
            "status": self.status,
            "replayedSteps": self.replayed_steps,
            "finished": self.finished,
        }


def check_finish_arguments(result: Any, error: Any) -> None:
    """``finish()`` takes a final answer (a string) or an error, not both."""
    if result is not _UNSET and error is not _UNSET:
        raise BlackboxUsageError("finish() takes a result or an error, not both")
    if result is not _UNSET and not isinstance(result, str):
        raise BlackboxUsageError(
            f"finish(result=…) takes the final answer as a string, not {type(result).__name__}; "
            "pass json.dumps(value) to record a structured answer"
        )


def terminal_payload(
    result: Any, error: Any, steps: list[TraceStep], mask: Callable[[str], str]
) -> Terminal | None:
    """The terminal step ``finish(result=…)`` / ``finish(error=…)`` writes (or a replay expects).

    Without either, a run whose last model output is a final answer completed with that answer;
    any other run ends without a terminal step (incomplete).
    """
    if error is not _UNSET and error is not None:
        message = error if isinstance(error, str) else (str(error) or type(error).__name__)
        return agent_error(mask(message))
    if result is not _UNSET:
        return run_completed(result)
    outputs = [s for s in steps if s["type"] == "model_output"]
    last = outputs[-1]["payload"] if outputs else None
    text = model_output_text(last)
    if isinstance(last, dict) and last.get("type") == "final_answer" and text is not None:
        return run_completed(text)
    return None


def exit_terminal(
    exit_code: int, in_flight: int, steps: list[TraceStep], mask: Callable[[str], str]
) -> Terminal | None:
    """The terminal step of a recording the process exit ends (see ``exithooks``)."""
    if in_flight:
        return calls_in_flight(exit_code, in_flight)
    if exit_code != 0:
        return process_exit(exit_code)
    return terminal_payload(_UNSET, _UNSET, steps, mask)


def exit_refusal(exit_code: int, in_flight: int) -> BlackboxUsageError | None:
    """Why a replay the process exit ends cannot be checked (it failed or calls were running)."""
    if exit_code == 0 and not in_flight:
        return None
    still = f" with {in_flight} wrapped call(s) still running" if in_flight else ""
    return BlackboxUsageError(
        f"the program exited (exit code {exit_code}) before finish(){still}; the replay could not be checked"
    )


def write_refusal(trace: Trace, secrets: KnownKeys, mask: Callable[[str], str]) -> BlackboxError | None:
    """Why this cassette must not be written (it holds a known key, or fails verify), or ``None``."""
    if _contains_secret(trace, secrets):
        return _leak(trace, secrets)
    failure = verify_trace(trace, api_keys=sorted(secrets)).first_failure
    if failure is not None:
        return CassetteError(
            f"refusing to write the cassette: {failure.name} failed — {mask(failure.detail)}"
        )
    return None


_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')


def _leak(trace: Trace, secrets: KnownKeys) -> SecretLeakError:
    """The refusal naming the step and field holding a key, and where the key came from (never the key)."""
    wanted = known_secrets(secrets)
    for step in trace["steps"]:
        found = _find(step["payload"], wanted, [])
        if found is not None:
            secret, path = found
            return SecretLeakError(
                f"refusing to write the cassette: it contains {secrets.describe(secret)} in step "
                f"{step['index']} ({step['type']}) at {format_path(path, wanted)}; keep it out of what the "
                "agent sends and what its tools return"
            )
    return SecretLeakError("refusing to write the cassette: it contains your API key")


def _find(value: Any, wanted: list[str], path: list[str | int]) -> tuple[str, list[str | int]] | None:
    """The first known secret in a string or object key inside ``value``, and where it is."""
    if isinstance(value, str):
        return next(((secret, path) for secret in wanted if secret in value), None)
    if isinstance(value, dict):
        for key, child in value.items():
            if any(secret in key for secret in wanted):
                return next(secret for secret in wanted if secret in key), [*path, key]
            found = _find(child, wanted, [*path, key])
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found = _find(child, wanted, [*path, index])
            if found is not None:
                return found
    return None


def _contains_secret(trace: Trace, secrets: Iterable[str]) -> bool:
    """``contains_secret``, with a C-speed first look at the whole trace as JSON text.

    A secret free of characters JSON escapes appears verbatim in the text of any string holding it,
    so when none is in the text there is none in the trace; only a hit is confirmed by the exact walk.
    """
    wanted = known_secrets(secrets)
    if not wanted:
        return False
    if not any(_JSON_ESCAPED.search(secret) for secret in wanted):
        text = json.dumps(trace, ensure_ascii=False, check_circular=False)
        if not any(secret in text for secret in wanted):
            return False
    return contains_secret(trace, wanted)


def write_cassette(
    recording: Recording,
    out: Path,
    terminal_of: Callable[[list[TraceStep]], Terminal | None],
    *,
    mode: str,
    secrets: KnownKeys,
    mask: Callable[[str], str],
    keep: Callable[[BlackboxError], BlackboxError],
) -> RunReport:
    """Write the recording, ending with ``terminal_of(steps)``; a refusal is raised as ``keep`` keeps it."""
    trace, terminal = recording.close(terminal_of)
    problem = recording.unreplayable() or write_refusal(trace, secrets, mask)
    if problem is not None:
        raise keep(problem)
    save_trace(trace, out)
    return RunReport.of(mode, out, len(trace["steps"]), terminal)


def check_replay(
    cursor: ReplayCursor,
    path: object,
    result: Any,
    error: Any,
    mask: Callable[[str], str],
    redact: Callable[[Any], Any],
) -> RunReport:
    """Check that the replay used every recorded step and ended as recorded (``ReplayDivergenceError``).

    The outcome is compared as a recording would have written it (``redact``).
    """
    outcome = redact(terminal_payload(result, error, cursor.steps[: cursor.pos], mask))
    replayed = cursor.finish(outcome)
    return RunReport.of("replay", path, len(cursor.steps), outcome, replayed)


def launcher_report(
    report: RunReport | None, mode: str, error: BaseException | None, mask: Callable[[str], str]
) -> dict[str, Any]:
    """The launcher's JSON status report: the run's report, or its error (masked)."""
    data: dict[str, Any] = report.to_json() if report is not None else {"ok": False, "mode": mode}
    if error is not None:
        data.update(ok=False, error=mask(str(error)), errorType=type(error).__name__)
    return data


class Ending:
    """How a session ends, after ``finish()`` or at the process exit: the session's ending half.

    ``Session`` inherits it; the attributes below are the session's, named here so each method can
    be read (and type-checked) on its own.
    """

    options: SessionOptions
    mode: str
    report: RunReport | None
    _lock: threading.RLock
    _finished: bool
    _ended_by_exit: bool
    _first_error: BlackboxError | None
    _recording: Recording | None
    _cursor: ReplayCursor | None
    _fork: SessionFork | None
    _secrets: KnownKeys
    _fail: Callable[[BlackboxError], BlackboxError]
    _mask: Callable[[str], str]
    _redacted: Callable[[Any], Any]
    _go_live_or_raise: Callable[[ReplayDivergenceError], None]
    _end: Callable[[], None]

    def _reported(self, end: Callable[[], RunReport], *, keep_error: bool) -> RunReport:
        """Run ``end`` and tell the launcher how it went (when it asked for a report)."""
        try:
            report = end()
        except BaseException as exc:
            self._write_report(self._fail(exc) if keep_error and isinstance(exc, BlackboxError) else exc)
            raise
        self._write_report(self._first_error)
        return report

    def _finish(self, result: Any, error: Any) -> RunReport:
        running = self._recording.running if self._recording is not None else 0
        if running:
            raise BlackboxUsageError(
                f"finish() was called while {running} wrapped call(s) were still running; await every model "
                "call and tool call before finish(). Nothing was written, and later calls on this session "
                "are refused."
            )
        if self._first_error is not None:
            raise self._first_error
        if self._fork is not None:
            self._fork.check_end()
        if self.mode == "record":
            return self._write(partial(terminal_payload, result, error, mask=self._mask))
        if self.mode == "replay":
            return self._check_replay(result, error)
        return RunReport(mode="off", path=None, steps=0, status="incomplete")

    def _write(self, terminal_of: Callable[[list[TraceStep]], Terminal | None]) -> RunReport:
        """Write the cassette, ending with the terminal step ``terminal_of(steps)`` (if any)."""
        # a replay gone live re-records its own cassette (the plugin hands it a private copy)
        out = self.options.out if self.options.mode in ("record", "fork") else self.options.cassette
        assert self._recording is not None and out is not None
        mode = "fork" if self._fork is not None else "record"  # a fork records from its fork point on
        self.report = write_cassette(
            self._recording,
            out,
            terminal_of,
            mode=mode,
            secrets=self._secrets,
            mask=self._mask,
            keep=self._fail,
        )
        return self.report

    def _check_replay(self, result: Any, error: Any) -> RunReport:
        assert self._cursor is not None
        try:
            self.report = check_replay(
                self._cursor, self.options.cassette, result, error, self._mask, self._redacted
            )
        except ReplayDivergenceError as exc:
            try:
                self._go_live_or_raise(exc)
            except ReplayDivergenceError:
                raise self._fail(exc) from None
            return self._write(partial(terminal_payload, result, error, mask=self._mask))
        return self.report

    def _end_by_exit(self, exit_code: int) -> None:
        """End an unfinished run as the process ends (see ``exithooks``).

        A recording is written with the terminal step that says how the process ended. A replay is
        checked as ``finish()`` would check it, so the launcher can still report a divergence (or a
        pass) for a program that never called ``finish()``.
        """
        with self._lock:
            if self._finished or self.mode not in ("record", "replay", "fork"):
                return
            self._ended_by_exit = True
            self._end()
            self._reported(lambda: self._exit(exit_code), keep_error=True)

    def _exit(self, exit_code: int) -> RunReport:
        if self._first_error is not None:
            raise self._first_error  # as finish() would: nothing unfaithful is written
        if self.mode == "fork":
            assert self._fork is not None
            self._fork.check_end()  # the fork point was never reached: this raises
        running = self._recording.running if self._recording is not None else 0
        if self.mode != "replay":
            return self._write(partial(exit_terminal, exit_code, running, mask=self._mask))
        problem = exit_refusal(exit_code, running)
        if problem is not None:
            raise problem
        return self._check_replay(_UNSET, _UNSET)

    def _write_report(self, error: BaseException | None) -> None:
        """The JSON status report the ``blackbox`` launcher reads (only when it asked for one)."""
        if self.options.report_path is not None:
            data = launcher_report(self.report, self.mode, error, self._mask)
            write_report(self.options.report_path, data)
