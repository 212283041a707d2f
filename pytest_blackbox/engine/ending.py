"""How a run ends: its terminal payload, the report ``finish()`` returns, what refuses to end it
(after ``finish()`` or at the process exit), the checks before a cassette is written (it must verify
and hold no known API key), the replay's last check and the launcher's report. The session calls
these with what each needs. See docs/engine.md#ending-a-run-finish.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.jsondiff import format_path
from ..analysis.verify import verify_trace
from ..errors import BlackboxError, BlackboxUsageError, CassetteError, SecretLeakError
from ..trace.io import cassette_text, save_text
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
from ..vocabulary import UNSET
from .fork import SessionFork
from .keys import KnownKeys
from .launched import write_report
from .options import SessionOptions
from .recording import Recording
from .replay import ReplayCursor

__all__ = [
    "RunReport",
    "cassette_out",
    "check_finish_arguments",
    "check_replay",
    "exit_terminal",
    "launcher_report",
    "refuse_exit",
    "refuse_finish",
    "report_to_launcher",
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
    if result is not UNSET and error is not UNSET:
        raise BlackboxUsageError("finish() takes a result or an error, not both")
    if result is not UNSET and not isinstance(result, str):
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
    if error is not UNSET and error is not None:
        message = error if isinstance(error, str) else (str(error) or type(error).__name__)
        return agent_error(mask(message))
    if result is not UNSET:
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
    return terminal_payload(UNSET, UNSET, steps, mask)


def refuse_finish(running: int, first_error: BlackboxError | None, fork: SessionFork | None) -> None:
    """Raise why ``finish()`` cannot end the run: wrapped calls still running, the run's kept error,
    or a fork whose fork point was never reached."""
    if running:
        raise BlackboxUsageError(
            f"finish() was called while {running} wrapped call(s) were still running; await every model "
            "call and tool call before finish(). Nothing was written, and later calls on this session "
            "are refused."
        )
    if first_error is not None:
        raise first_error
    if fork is not None:
        fork.check_end()


def refuse_exit(
    mode: str, exit_code: int, running: int, first_error: BlackboxError | None, fork: SessionFork | None
) -> None:
    """Raise why the process exit cannot end the run: the run's kept error (as ``finish()`` would:
    nothing unfaithful is written), a fork point never reached, or a replay that cannot be checked
    (the program failed or calls were running)."""
    if first_error is not None:
        raise first_error
    if mode == "fork":
        assert fork is not None
        fork.check_end()  # the fork point was never reached: this raises
    if mode == "replay" and (exit_code != 0 or running):
        still = f" with {running} wrapped call(s) still running" if running else ""
        raise BlackboxUsageError(
            f"the program exited (exit code {exit_code}) before finish(){still}; "
            "the replay could not be checked"
        )


def cassette_out(options: SessionOptions) -> Path:
    """Where a recording is written: a replay gone live re-records its own cassette (the plugin hands
    it a private copy)."""
    out = options.out if options.mode in ("record", "fork") else options.cassette
    assert out is not None
    return out


def write_refusal(
    trace: Trace, secrets: KnownKeys, mask: Callable[[str], str], text: str | None = None
) -> BlackboxError | None:
    """Why this cassette must not be written (it holds a known key, or fails verify), or ``None``.

    ``text``: the file's text (``cassette_text``), when made already; it is looked in for keys.
    """
    if _contains_secret(trace, secrets, text):
        return _leak(trace, secrets)
    failure = verify_trace(trace, api_keys=sorted(secrets)).first_failure
    if failure is not None:
        return CassetteError(
            f"refusing to write the cassette: {failure.name} failed — {mask(failure.detail)}"
        )
    return None


#: What a JSON writer may escape: quotes, backslashes, control characters, and lone surrogates (which
#: the cassette's writer escapes as JavaScript does, where ``json.dumps`` leaves them raw).
_JSON_ESCAPED = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


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


def _contains_secret(trace: Trace, secrets: Iterable[str], text: str | None = None) -> bool:
    """``contains_secret``, with a C-speed first look at the whole trace as JSON text: ``text``, the
    cassette file's (which a recording writes next), or else the trace's ``json.dumps``.

    A secret free of characters JSON writers escape appears verbatim in the text of any string holding
    it, so when none is in the text there is none in the trace; only a hit is confirmed by the exact
    walk, and a secret that holds such a character is looked for by the walk alone.
    """
    wanted = known_secrets(secrets)
    if not wanted:
        return False
    if not any(_JSON_ESCAPED.search(secret) for secret in wanted):
        if text is None:
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
    unreplayable = recording.unreplayable()
    if unreplayable is not None:
        raise keep(unreplayable)
    text = cassette_text(trace, out)
    refused = write_refusal(trace, secrets, mask, text)
    if refused is not None:
        raise keep(refused)
    save_text(text, out)
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


def report_to_launcher(
    path: Path | None,
    report: RunReport | None,
    mode: str,
    error: BaseException | None,
    mask: Callable[[str], str],
) -> None:
    """Write the JSON status report the ``blackbox`` launcher reads (only when it asked for one)."""
    if path is not None:
        write_report(path, launcher_report(report, mode, error, mask))
