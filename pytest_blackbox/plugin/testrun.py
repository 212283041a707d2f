"""One test's cassette run under pytest: which mode, which file, and how it ended.

A recording goes to a hidden pending file that only a passing test moves into place (an atomic
rename), so a failing test never writes or replaces a cassette; a recording that shows the same run
as the cassette leaves it untouched. Under ``blackbox fork … -- pytest`` the launcher's variables
pick the one test that runs as the fork. See docs/pytest.md.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal

import pytest

from ..engine import (
    CallOwner,
    ChildWatch,
    Session,
    SessionFork,
    SessionOptions,
    claim_calls,
    follow_children,
    fork_options_for,
    refuse_stray_call,
    release_calls,
    set_placeholder_keys,
    stray_owner,
    write_report,
)
from ..errors import (
    BlackboxError,
    CassetteError,
    OfflineRequestError,
    RelaxedMatchWarning,
)
from ..interception import Forward, ModelRequest, OtherRequest, Reply
from ..trace.io import load_trace, move_into_place
from ..trace.model import Trace
from ..vocabulary import Outcome
from . import messages
from .config import Settings, rerecord_command
from .decision import Decision, error_outcome
from .expect import RunAssertions
from .paths import pending_path, remove_stale_pending, trace_id_for
from .preflight import Refusal, preflight
from .report import short_report, shown_path
from .sockets import SocketGuard

#: Folders already cleaned of stale pending files in this pytest run.
_CLEANED_KEY = pytest.StashKey[set[Path]]()


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
        self.owner: CallOwner | None = None
        #: The test's children followed, and the base URLs pointed at their relay.
        self.children: ChildWatch | None = None

    def _on_model(self, request: ModelRequest) -> Reply | Forward:
        other = stray_owner(self.owner)
        if other is not None:
            return refuse_stray_call(request, other, self.owner)
        if self.children is None:
            return super()._on_model(request)
        return self.children.handle(super()._on_model, request)

    def _on_other(self, request: OtherRequest) -> Reply | Forward:
        """A request to a base URL a recording pointed at the children's relay goes to the real one."""
        if self.children is None:
            return super()._on_other(request)
        return self.children.handle(super()._on_other, request)


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
    owner: CallOwner | None = None
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
        self.owner = CallOwner(self.item.nodeid)
        self._owner_mark = claim_calls(self.owner)
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
        ready = preflight(self.item, self.settings, shared_with)
        if isinstance(ready, Refusal):
            self._refuse(ready.outcome, ready.message)
            return
        self.read_only = ready.read_only
        if ready.decision.action == "replay":
            self._set_placeholder_keys()
        try:
            session = self.session = self._new_session(self._options(ready.decision), ready.trace)
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
            session,
            self.owner,
            recording=recording,
            allowed_hosts=self.settings.allowed_hosts,
            guarded=self.guard is not None,
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
            release_calls(self._owner_mark)
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
            self.outcome = error_outcome(session.error, session.mode == "record")
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
        self.outcome = error_outcome(error, session.mode == "record")
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
            from .rerecord import first_change  # the diff's modules: only a re-recording needs them

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
        media=settings.media,
        drop_fields=settings.drop_fields,
        **settings.engine_rules,
    )


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
