"""One test's cassette run under pytest: which mode, which file, and how it ended.

A recording goes to a hidden pending file that only a passing test moves into place (an atomic
rename), so a failing test never writes or replaces a cassette; a recording that shows the same run
as the cassette leaves it untouched. Under ``blackbox fork … -- pytest`` the launcher's variables
pick the one test that runs as the fork. See docs/pytest.md.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal

import pytest

from ..engine import (
    ChildWatch,
    Session,
    SessionFork,
    SessionOptions,
    environment_keys,
    follow_children,
    fork_options_for,
    load_verified,
    owners,
    set_placeholder_keys,
    write_report,
)
from ..errors import (
    BlackboxError,
    BlackboxUnsupportedError,
    CassetteError,
    OfflineRequestError,
    RelaxedMatchWarning,
    ReplayDivergenceError,
)
from ..interception import Forward, ModelRequest, OtherRequest, Reply
from ..trace.io import load_trace, move_into_place
from ..trace.model import Trace
from ..vocabulary import Outcome
from . import messages
from .config import Settings, rerecord_command
from .decision import Decision, decide
from .expect import RunAssertions
from .paths import pending_owner, pending_path, trace_id_for
from .report import short_report, shown_path
from .rerecord import first_change
from .sockets import SocketGuard

_FALSE_VALUES = ("", "0", "false", "no")
#: A pending file left by a process that is gone (killed mid-run) is removed by the next run; so is
#: one older than this, whatever its process id says (ids are reused).
STALE_PENDING_SECONDS = 24 * 3600
#: Folders already cleaned of stale pending files in this pytest run.
_CLEANED_KEY = pytest.StashKey[set[Path]]()


def in_ci() -> bool:
    """The ``CI`` variable, set by every CI service, means no test may reach a real model."""
    return os.environ.get("CI", "").strip().lower() not in _FALSE_VALUES


class CassetteSession(Session, RunAssertions):
    """The ``blackbox`` fixture: the test's session, where its cassette is, its record mode, and
    assertions on what the agent did (``run``, ``assert_tools``, …; see ``expect``)."""

    def __init__(
        self, options: SessionOptions, *, cassette_path: Path, record_mode: str, trace: Trace | None = None
    ) -> None:
        super().__init__(options, exit_net=False, trace=trace)
        #: The test's cassette file (it may not exist yet, and in live mode it is never read or written).
        self.cassette_path = cassette_path
        #: The record mode that applies to this test (``none``, ``once``, ``new_episodes``, ``all``,
        #: ``rewrite``).
        self.record_mode = record_mode
        #: The test that owns this session: calls from another test's threads are refused.
        self.owner: owners.Owner | None = None
        #: The test's children followed, and the base URLs pointed at their relay.
        self.children: ChildWatch | None = None

    def _on_model(self, request: ModelRequest) -> Reply | Forward:
        other = owners.stray(self.owner)
        if other is not None:
            return owners.refuse_stray(request, other, self.owner)
        if self.children is None:
            return super()._on_model(request)
        return self.children.handle(super()._on_model, request)

    def _on_other(self, request: OtherRequest) -> Reply | Forward:
        """A request to a base URL a recording pointed at the children's relay goes to the real one."""
        if self.children is None:
            return super()._on_other(request)
        return self.children.handle(super()._on_other, request)


def _process_gone(pid: int) -> bool:
    if sys.platform == "win32":
        return False  # no cheap, harmless liveness check there: the age decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def remove_stale_pending(folder: Path, cleaned: set[Path]) -> None:
    """Remove the pending files of recordings whose process died (a SIGTERM, a kill), once per folder.

    Without this, ``git add cassettes/`` would commit them. A live process's files are never touched,
    so a parallel worker's recording in progress is safe.
    """
    if folder in cleaned:
        return
    cleaned.add(folder)
    cutoff = time.time() - STALE_PENDING_SECONDS
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        pid = pending_owner(entry.name)
        if pid is None or pid == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if _process_gone(pid) or entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)


@dataclass
class TestRun:
    """The cassette run of one test item (one attempt: a rerun gets a new one)."""

    item: pytest.Item
    settings: Settings
    session: CassetteSession | None = None
    setup_error: str | None = None
    outcome: Outcome | None = None
    pending: Path | None = None
    reported: bool = False
    #: Set when ``blackbox fork`` forks this test's cassette: where the child cassette goes.
    fork_out: Path | None = None
    forking: bool = False
    #: A re-recording that changed the cassette: where it first departs from the old one.
    change: str | None = None
    guard: SocketGuard | None = None
    #: ``new_episodes`` in a folder that takes no new files: replayed strictly, nothing written.
    read_only: bool = False
    #: The test's child processes followed into its session (``engine/children.py``).
    children: ChildWatch | None = None
    #: A replay that passed only because a match rule relaxed a comparison: the warning saying so.
    relaxed: str | None = None
    owner: owners.Owner | None = None
    _owner_mark: Any = None
    _env_patched: list[str] = field(default_factory=list)

    @property
    def cassette(self) -> Path:
        return self.settings.cassette

    def shown_path(self, path: Path | None = None) -> str:
        """A path as the user types it: relative to the rootdir when it is inside."""
        return shown_path(self.item, path if path is not None else self.cassette)

    # -- set-up ----------------------------------------------------------------------------------

    def start(self, shared_with: str | None = None) -> None:
        """Decide record, replay or fork and start the session; problems fail the test when it runs.

        ``shared_with`` names another test whose derived cassette path is this one's.
        """
        self.owner = owners.Owner(self.item.nodeid)
        self._owner_mark = owners.claim(self.owner)
        if self.settings.live:
            self.session = self._new_session(SessionOptions(mode="off"))
            return
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
        remove_stale_pending(self.cassette.parent, self.item.config.stash.setdefault(_CLEANED_KEY, set()))
        if shared_with is not None:
            self._refuse("invalid", messages.shared(self.item.nodeid, shared_with, self.shown_path()))
            return
        if self.cassette.exists() and not self.cassette.is_file():
            self._refuse("invalid", messages.not_a_file(self.shown_path()))
            return
        decision = self._decide()
        if decision is None or (decision.writes and not self._writable(decision)):
            return
        trace = self._verified() if decision.action == "replay" else None
        if decision.action == "replay" and trace is None:
            return
        if decision.action == "replay":
            self._set_placeholder_keys()
        try:
            session = self.session = self._new_session(self._options(decision), trace)
            session.start()
        except (BlackboxError, OSError) as exc:
            self._drop_pending()
            self._refuse("invalid", self.failure_text(exc))
            return
        if session.mode == "replay" and session.options.on_divergence == "fail":
            refusal = partial(messages.connection_refused, self.item.nodeid, self.settings.allowed_hosts)
            self.guard = SocketGuard(self.settings.allowed_hosts, refusal).start()
        recording = session.mode == "record"
        self.children = session.children = follow_children(
            session, self.owner, recording=recording, allowed_hosts=self.settings.allowed_hosts
        )

    def _new_session(self, options: SessionOptions, trace: Trace | None = None) -> CassetteSession:
        session = CassetteSession(
            options, cassette_path=self.cassette, record_mode=self.settings.record_mode, trace=trace
        )
        session.owner = self.owner
        return session

    def _start_fork(self, options: SessionOptions) -> None:
        """Fork this test's cassette: every fork check first, then a session writing a pending file."""
        self.forking = True
        try:
            fork = SessionFork.prepare(options)
            assert options.out is not None
            self.fork_out = options.out
            self.pending = pending_path(options.out)
            if fork.scripted:
                self._set_placeholder_keys()
            pending = replace(options, out=self.pending, trace_id=fork.child_id)
            self.session = self._new_session(pending)
            self.session.start()
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

    def _options(self, decision: Decision) -> SessionOptions:
        """Recordings go to the pending file; ``new_episodes`` replays, and may rewrite, a copy of it
        (in a read-only folder, the cassette itself, strictly)."""
        if self.read_only:
            decision = replace(decision, writes=False, new_episodes=False)
        if decision.writes:
            self.pending = pending_path(self.cassette)
        if decision.new_episodes and self.pending is not None:
            shutil.copyfile(self.cassette, self.pending)
        return _session_options(decision, self.settings, self.pending)

    def _decide(self) -> Decision | None:
        """Record or replay (``decision.decide``); ``None`` when the test must fail instead (the
        reason is kept)."""
        settings = self.settings
        decision = decide(
            settings.record_mode,
            exists=self.cassette.is_file(),
            ci=in_ci(),
            allow_record=settings.allow_record,
        )
        if decision.action == "missing":
            legacy = settings.legacy_cassette
            shown_legacy = self.shown_path(legacy) if legacy is not None and legacy.is_file() else None
            command = rerecord_command(self.item, "once")
            self._refuse("missing", messages.missing(self.shown_path(), command, shown_legacy))
            return None
        if decision.action == "refused":
            command = rerecord_command(self.item, decision.record_with or settings.record_mode)
            self._refuse("refused", messages.ci_refusal(self.shown_path(), settings.record_mode, command))
            return None
        return decision

    def _writable(self, decision: Decision) -> bool:
        """Whether the run may go on: the cassette's folder takes new files (checked before any model
        call is paid for), or the run is a ``new_episodes`` replay, which needs no write when the run
        matches: it then replays as ``none`` does (a new episode could not be kept: it diverges)."""
        folder = self.cassette.parent
        reason = _unwritable(folder)
        if reason is None:
            return True
        if decision.new_episodes:
            self.read_only = True
            return True
        self._refuse("unwritable", messages.unwritable(self.shown_path(), self.shown_path(folder), reason))
        return False

    def _verified(self) -> Trace | None:
        """The cassette's trace, read and checked once, if it passes ``blackbox verify``; otherwise
        ``None``, and the test fails saying which invariant failed."""
        keys = list(environment_keys(os.environ).values())
        report, trace = load_verified(self.cassette, api_keys=keys)
        if trace is None:
            command = rerecord_command(self.item, "all")
            self._refuse(
                "invalid", messages.verify_failed(report, str(self.cassette), self.shown_path(), command)
            )
        return trace

    def _refuse(self, outcome: Outcome, message: str) -> None:
        self.outcome = outcome
        self.setup_error = message

    def _set_placeholder_keys(self) -> None:
        """SDK clients refuse to start without a key; a replay sends none, so a placeholder will do."""
        self._env_patched.extend(set_placeholder_keys(os.environ))

    def release(self) -> None:
        """At teardown: stop the session and the socket guard, drop what this attempt set."""
        if self.session is not None:
            self.session.stop()  # a finished session refuses late calls until released here
        if self.guard is not None:
            self.guard.stop()
        if self.children is not None:
            self.children.stop()
            self.children = None
            if self.session is not None:
                self.session.children = None
        if self._owner_mark is not None:
            owners.release(self._owner_mark)
            self._owner_mark = None
        for name in self._env_patched:
            os.environ.pop(name, None)
        self._env_patched.clear()

    # -- the call --------------------------------------------------------------------------------

    def before_call(self) -> None:
        __tracebackhide__ = True
        if self.setup_error is not None and not self.reported:
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
        elif self._refused_connection() is not None:
            self.outcome = "refused"
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
        if session.mode == "off":
            self.outcome = "live"
            return
        error = self._refused_connection() or _finish_once(session) or self._commit(session)
        if error is None:
            if self.outcome is None:
                self.outcome = "recorded" if session.mode == "record" else "replayed"
            self._warn_if_relaxed(session)
            return
        session.discard()
        self._drop_pending()
        self.outcome = _error_outcome(error, session.mode == "record")
        self.reported = True
        self._report_fork_failure(error)
        pytest.fail(self.failure_text(error), pytrace=False)

    def _warn_if_relaxed(self, session: Session) -> None:
        """A replay that passed only through a match rule says which rule relaxed which field."""
        relaxation = session.relaxed
        if self.outcome != "replayed" or relaxation is None:
            return
        self.relaxed = messages.relaxed(self.item.nodeid, relaxation.rules, relaxation.path, relaxation.index)
        self.item.warn(RelaxedMatchWarning(self.relaxed))

    def _refused_connection(self) -> OfflineRequestError | None:
        return self.guard.refusal if self.guard is not None else None

    def _commit(self, session: Session) -> BlackboxError | None:
        """Move a finished recording into place, unless it shows the same run as the cassette there."""
        pending = self.pending
        if pending is None:
            return None
        if session.mode != "record":
            self._drop_pending()
            return None
        target = self.fork_out or self.cassette
        if self.fork_out is None and target.is_file():
            self.change = first_change(target, load_trace(pending))
            if self.change is None:
                self._drop_pending()
                self.outcome = "unchanged"
                return None
        try:
            move_into_place(pending, target)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            return CassetteError(f"could not write {self.shown_path(target)}: {reason}")
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
        return messages.failure_block(
            error,
            self.shown_path(),
            recording=self._recording(),
            rerecord_command=rerecord_command(self.item, "all"),
        )

    def failure_report(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
        """A short report for a test that failed after the session or the socket guard met an error.

        The agent usually saw that error as an SDK exception (or swallowed it and failed later), and
        the traceback through the SDK says nothing useful: show the blackbox block, then only the
        user's own frames and the exception line.
        """
        session = self.session
        if session is None or self.reported:
            return None
        error = session.error or self._refused_connection()
        if error is None:
            return None
        return short_report(self.item, self.failure_text(error), excinfo)

    def not_written_note(self) -> str | None:
        """The note under a failed test whose recording was dropped."""
        if self.outcome != "not_written" or self.reported:
            return None
        return messages.not_written(self.shown_path())


def _session_options(decision: Decision, settings: Settings, pending: Path | None) -> SessionOptions:
    """The session a decision starts: a recording writes ``pending``; a ``new_episodes`` replay
    replays it (a copy of the cassette)."""
    cassette = settings.cassette
    mode: Literal["record", "replay"] = "record" if decision.action == "record" else "replay"
    return SessionOptions(
        mode=mode,
        cassette=(pending if decision.new_episodes else cassette) if mode == "replay" else None,
        out=pending if mode == "record" else None,
        trace_id=trace_id_for(cassette),
        match=settings.match,
        on_divergence="record" if decision.new_episodes else "fail",
        allowed_hosts=settings.allowed_hosts,
        **settings.engine_rules,
    )


def _unwritable(folder: Path) -> str | None:
    """Why ``folder`` takes no new files (``None``: it does), probed with a file created and removed."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".blackbox-probe-", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def _finish_once(session: Session) -> BlackboxError | None:
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
