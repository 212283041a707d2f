"""One test's cassette run under pytest: which mode, which file, and how it ended.

A recording goes to a hidden pending file that only a passing test moves into place (an atomic
rename), so a failing test never writes or replaces a cassette. Under ``blackbox fork … -- pytest``
the launcher's variables pick the one test that runs as the fork. See docs/pytest.md.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import pytest

from ..analysis.verify import ACTIONS, VerifyReport, render_row, verify_trace
from ..engine.fork import SessionFork, fork_options_for
from ..engine.keys import environment_keys, set_placeholder_keys
from ..engine.launched import write_report
from ..engine.options import SessionOptions
from ..engine.session import Session
from ..errors import (
    BlackboxError,
    BlackboxUnsupportedError,
    CassetteError,
    OfflineRequestError,
    ReplayDivergenceError,
)
from .config import Settings, rerecord_command
from .paths import trace_id_for

#: How a test's cassette run ended; the summary counts some of these (``reporting.COUNTED`` and
#: ``reporting.COUNTED_IF_ANY``).
Outcome = Literal[
    "replayed",
    "recorded",
    "diverged",
    "unsupported",
    "not_written",
    "invalid",
    "missing",
    "refused",
    "failed",
    "skipped",
]

#: Outcomes that mean the cassette or the agent is wrong, whatever the test's own verdict was.
FAILURE_OUTCOMES: tuple[Outcome, ...] = ("diverged", "unsupported", "invalid")

_FALSE_VALUES = ("", "0", "false", "no")
_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_STDLIB_DIR = Path(sysconfig.get_paths()["stdlib"])
_MAX_MESSAGE_LINES = 12


def in_ci() -> bool:
    """The ``CI`` variable, set by every CI service, means no test may reach a real model."""
    return os.environ.get("CI", "").strip().lower() not in _FALSE_VALUES


def _match_hint(message: str) -> str:
    """The session speaks of the CLI's ``--match``; under pytest the option has another name."""
    return message.replace("rerun with --match sequence", "rerun with --blackbox-match=sequence")


@dataclass
class TestRun:
    """The cassette run of one test item."""

    item: pytest.Item
    settings: Settings
    session: Session | None = None
    setup_error: str | None = None
    outcome: Outcome | None = None
    pending: Path | None = None
    reported: bool = False
    #: Set when ``blackbox fork`` forks this test's cassette: where the child cassette goes.
    fork_out: Path | None = None
    forking: bool = False
    _env_patched: list[str] = field(default_factory=list)

    @property
    def cassette(self) -> Path:
        return self.settings.cassette

    def shown_path(self, path: Path | None = None) -> str:
        """A path as the user types it: relative to the rootdir when it is inside."""
        target = path if path is not None else self.cassette
        try:
            return target.relative_to(self.item.config.rootpath).as_posix()
        except ValueError:
            return str(target)

    # -- set-up ----------------------------------------------------------------------------------

    def start(self) -> None:
        """Decide record, replay or fork and start the session; problems fail the test when it runs."""
        try:
            fork = fork_options_for(self.cassette, os.environ)
        except BlackboxError as exc:
            self.forking = True
            self._refuse("invalid", self.failure_text(exc))
            self._report_fork_failure(exc)
            return
        if fork is not None:
            self._start_fork(fork)
            return
        mode = self._session_mode()
        if mode is None or (mode == "replay" and not self._verified()):
            return
        if mode == "replay":
            self._set_placeholder_keys()
        try:
            self.session = Session(self._options(mode), exit_net=False).start()
        except BlackboxError as exc:
            self._drop_pending()
            self._refuse("invalid", self.failure_text(exc))

    def _start_fork(self, options: SessionOptions) -> None:
        """Fork this test's cassette: every fork check first, then a session writing a pending file."""
        self.forking = True
        try:
            fork = SessionFork.prepare(options)
            assert options.out is not None
            self.fork_out = options.out
            self.pending = options.out.with_name(f".{options.out.name}.{os.getpid()}.pending")
            if fork.scripted:
                self._set_placeholder_keys()
            pending = replace(options, out=self.pending, trace_id=fork.child_id)
            self.session = Session(pending, exit_net=False).start()
        except BlackboxError as exc:
            self._drop_pending()
            self._refuse("invalid", self.failure_text(exc))
            self._report_fork_failure(exc)

    def _report_fork_failure(self, error: BaseException | str) -> None:
        """The ``blackbox fork`` launcher reads a report: a fork ending in a failed test writes one too."""
        path = os.environ.get("BLACKBOX_REPORT")
        if not self.forking or not path:
            return
        kind = type(error).__name__ if isinstance(error, BaseException) else "TestFailed"
        write_report(Path(path), {"ok": False, "mode": "fork", "error": str(error), "errorType": kind})

    def _options(self, mode: Literal["record", "replay"]) -> SessionOptions:
        """Recordings go to the pending file; ``new_episodes`` replays, and may rewrite, a copy of it."""
        new_episodes = mode == "replay" and self.settings.record_mode == "new_episodes"
        if mode == "record" or new_episodes:
            self.pending = self.cassette.with_name(f".{self.cassette.name}.{os.getpid()}.pending")
        if new_episodes and self.pending is not None:
            shutil.copyfile(self.cassette, self.pending)
        return SessionOptions(
            mode=mode,
            cassette=(self.pending if new_episodes else self.cassette) if mode == "replay" else None,
            out=self.pending if mode == "record" else None,
            trace_id=trace_id_for(self.cassette),
            match=self.settings.match,
            on_divergence="record" if new_episodes else "fail",
        )

    def _session_mode(self) -> Literal["record", "replay"] | None:
        """Record or replay; ``None`` when the test must fail instead (the reason is kept)."""
        exists = self.cassette.is_file()
        mode = self.settings.record_mode
        records = mode in ("all", "rewrite") or (not exists and mode != "none")
        if not exists and mode == "none":
            self._refuse(
                "missing",
                f'blackbox: no cassette at {self.shown_path()}, and record mode "none" only replays\n'
                f"record it with: {rerecord_command(self.item, 'once')}",
            )
            return None
        if (records or mode == "new_episodes") and in_ci() and not self.settings.allow_record:
            self._refuse("refused", self._ci_refusal(mode, exists))
            return None
        if mode == "rewrite" and exists:
            self.cassette.unlink()
        return "record" if records else "replay"

    def _ci_refusal(self, mode: str, exists: bool) -> str:
        record_with = "once" if mode == "once" or not exists else mode
        return (
            f"blackbox: refusing to record {self.shown_path()} in CI (the CI environment variable is set): "
            f'record mode "{mode}" would call the real model\n'
            f"record it locally and commit it: {rerecord_command(self.item, record_with)}\n"
            "or allow recording in CI with --blackbox-allow-record"
        )

    def _verified(self) -> bool:
        """Replay only a cassette that passes ``blackbox verify``; otherwise say which invariant failed."""
        keys = list(environment_keys(os.environ).values())
        report = verify_trace(self.cassette, api_keys=keys)
        if report.ok:
            return True
        self._refuse("invalid", self._verify_text(report))
        return False

    def _verify_text(self, report: VerifyReport) -> str:
        failure = report.first_failure
        assert failure is not None
        where = f" at step {failure.step_index}" if failure.step_index is not None else ""
        absolute, shown = str(self.cassette), self.shown_path()
        rows = [
            render_row(result.name, result.status, result.detail.replace(absolute, shown))
            for result in report.invariants
        ]
        return "\n".join(
            [
                f"blackbox: the cassette failed verification: {failure.name}{where}",
                *rows,
                ACTIONS[failure.name],
                f"cassette: {shown}",
                f"re-record: {rerecord_command(self.item, 'all')}",
            ]
        )

    def _refuse(self, outcome: Outcome, message: str) -> None:
        self.outcome = outcome
        self.setup_error = message

    def _set_placeholder_keys(self) -> None:
        """SDK clients refuse to start without a key; a replay sends none, so a placeholder will do."""
        self._env_patched.extend(set_placeholder_keys(os.environ))

    def restore_env(self) -> None:
        for name in self._env_patched:
            os.environ.pop(name, None)
        self._env_patched.clear()

    # -- the call --------------------------------------------------------------------------------

    def before_call(self) -> None:
        __tracebackhide__ = True
        if self.setup_error is not None:
            self.reported = True
            pytest.fail(self.setup_error, pytrace=False)

    def test_failed(self, exc: BaseException | None) -> None:
        """The test failed (or was skipped) before the session finished: never write its recording."""
        session = self.session
        if session is None:
            return
        session.discard()
        self._drop_pending()
        if isinstance(exc, pytest.skip.Exception):
            self.outcome = "skipped"
        elif session.error is not None:
            self.outcome = _error_outcome(session.error, session.mode == "record")
        else:
            self.outcome = "not_written" if session.mode == "record" else "failed"
        why = "was skipped" if self.outcome == "skipped" else "failed"
        self._report_fork_failure(session.error or f"the test {why}, so the fork was not written")

    def after_call(self) -> None:
        """The test body passed: finish the session; a divergence or refusal fails the test here."""
        __tracebackhide__ = True
        session = self.session
        if session is None:
            return
        error = self._finish(session) or self._commit(session)
        if error is None:
            self.outcome = "recorded" if session.mode == "record" else "replayed"
            return
        self._drop_pending()
        self.outcome = _error_outcome(error, session.mode == "record")
        self.reported = True
        self._report_fork_failure(error)
        pytest.fail(self.failure_text(error), pytrace=False)

    @staticmethod
    def _finish(session: Session) -> BlackboxError | None:
        """Finish once: the test may have called ``finish()`` itself, or met an error it swallowed."""
        if session.error is not None:
            session.discard()
            return session.error
        if session.report is not None:
            return None
        try:
            session.finish()
        except BlackboxError as exc:
            session.discard()
            return exc
        return None

    def _commit(self, session: Session) -> BlackboxError | None:
        """Move a finished recording into place; a replay leaves the cassette as it was."""
        pending = self.pending
        if pending is None:
            return None
        if session.mode != "record":
            self._drop_pending()
            return None
        try:
            os.replace(pending, self.fork_out or self.cassette)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            return CassetteError(f"could not write {self.shown_path(self.fork_out)}: {reason}")
        self.pending = None
        return None

    def _drop_pending(self) -> None:
        if self.pending is not None:
            self.pending.unlink(missing_ok=True)
            self.pending = None

    # -- what the user sees ----------------------------------------------------------------------

    def _recording(self) -> bool:
        return self.session is not None and self.session.mode == "record"

    def failure_text(self, error: BaseException) -> str:
        """The blackbox block: the error, the cassette and, where it helps, the re-record command."""
        lines = [f"blackbox: {_match_hint(str(error))}"]
        if self._recording():
            lines.append(f"cassette: {self.shown_path()} (not written: the test failed)")
            return "\n".join(lines)
        lines.append(f"cassette: {self.shown_path()}")
        if isinstance(error, (ReplayDivergenceError, CassetteError)):
            lines.append(f"re-record: {rerecord_command(self.item, 'all')}")
        return "\n".join(lines)

    def failure_report(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
        """A short report for a test that failed after the session met an error.

        The agent usually saw that error as an SDK exception (or swallowed it and failed later), and
        the traceback through the SDK says nothing useful: show the blackbox block, then only the
        user's own frames and the exception line.
        """
        session = self.session
        if session is None or session.error is None or self.reported:
            return None
        lines = [self.failure_text(session.error), ""]
        lines += self._user_frames(excinfo)
        lines += _exception_lines(excinfo.value)
        return "\n".join(lines)

    def not_written_note(self) -> str | None:
        """The note under a failed test whose recording was dropped."""
        if self.outcome != "not_written" or self.reported:
            return None
        return f"blackbox: {self.shown_path()} was not written: the test failed"

    def _user_frames(self, excinfo: pytest.ExceptionInfo[BaseException]) -> list[str]:
        root = Path(str(self.item.config.rootpath))
        lines: list[str] = []
        for entry in excinfo.traceback:
            path = entry.path
            if not isinstance(path, Path) or entry.ishidden(excinfo) or not _is_user_file(path, root):
                continue
            lines.append(f"{self.shown_path(path)}:{entry.lineno + 1}: in {entry.name}")
            statement = str(entry.statement).strip().splitlines()
            if statement:
                lines.append(f"    {statement[0].strip()}")
        return lines


def _error_outcome(error: BaseException, recording: bool) -> Outcome:
    """What the summary counts for an error; any other error while recording means nothing was written."""
    if isinstance(error, ReplayDivergenceError):
        return "diverged"
    if isinstance(error, BlackboxUnsupportedError):
        return "unsupported"
    if isinstance(error, OfflineRequestError):
        return "refused"
    if recording:
        return "not_written"
    if isinstance(error, CassetteError):
        return "invalid"
    return "failed"


def _is_user_file(path: Path, root: Path) -> bool:
    """A frame worth showing: the user's code, not an installed library, the stdlib or this plugin."""
    if "site-packages" in path.parts or "dist-packages" in path.parts:
        return False
    if path.is_relative_to(_PACKAGE_DIR):
        return False
    if path.is_relative_to(_STDLIB_DIR):
        return False
    return path.is_relative_to(root)


def _exception_lines(exc: BaseException) -> list[str]:
    kind = type(exc)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    message = str(exc)
    if isinstance(exc, BlackboxError) or "[blackbox]" in message:
        return [f"E   {name}: the blackbox error above"]
    shown = message.splitlines()[:_MAX_MESSAGE_LINES] or [""]
    first = f"E   {name}: {shown[0]}" if shown[0] else f"E   {name}"
    return [first, *(f"E   {line}" for line in shown[1:])]
