"""The session: one run of an agent, recorded to a cassette or replayed from one (docs/engine.md).

It owns the run's lifecycle and dispatches each intercepted call by mode: to the recording buffer
(``recording``), the replay cursor (``replay``) or the fork (``fork``); what ends a run and how is
``ending``'s, called with what each rule needs. Errors never cross the SDK boundary as
exceptions (the SDKs would retry or wrap them): the agent gets an HTTP 400 in the provider's error
shape with a ``[blackbox]`` message, the first typed error is kept, and ``finish()`` raises it.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from functools import partial
from types import TracebackType
from typing import Any, TypeVar

from .. import providers
from ..errors import BlackboxError, BlackboxUsageError, RecordedToolError, ReplayDivergenceError
from ..interception import Forward, Interceptor, ModelRequest, OtherRequest, Reply
from ..trace.model import Terminal, Trace, TraceStep
from ..trace.payloads import tool_calls_of
from ..trace.recorder import TraceRecorder
from ..trace.secrets import mask
from ..vocabulary import UNSET
from . import exithooks, launched
from .bodies import BodyParser
from .cassettes import load_cassette
from .concurrency import inside_tool, last_call, note_call, running_tool
from .ending import (
    RunReport,
    cassette_out,
    check_finish_arguments,
    check_replay,
    exit_terminal,
    refuse_exit,
    refuse_finish,
    report_to_launcher,
    terminal_payload,
    write_cassette,
)
from .fork import SessionFork
from .jsonvalue import to_json_value
from .keys import KnownKeys
from .observed import AgentRun, ModelCall, ToolLog, model_calls_of
from .options import SessionOptions, resolve_options
from .recorded import RecordedPair
from .recording import Recording, ToolInvocation
from .replay import ReplayCursor
from .rules import Redactor
from .tools import Answered, ToolPort, wrap_tool
from .wire import (
    WireCall,
    offline_error,
    reaches_allowed_host,
    refusal,
    refuse_placeholder,
    side_call_error,
    unseen_call_error,
    warn_unreplayable,
)

__all__ = ["RunReport", "Session", "blackbox", "stop_finished_sessions"]

F = TypeVar("F", bound=Callable[..., Any])


def _now_ms() -> int:
    return int(time.time() * 1000)


def _clean(error: BaseException) -> BaseException:
    """A kept error, ready to be raised (``raise _clean(e) from None``) from the caller's own frame.

    A kept error is raised again later (every refused request, ``finish()``); without this its
    traceback would grow each time and show where it was first detected instead of where the user
    is, and ``from None`` drops the SDK error it was raised while handling.
    """
    return error.with_traceback(None)


class Session:
    """One agent run: ``off`` passes everything through, ``record`` writes a cassette, ``replay`` reads it."""

    def __init__(
        self,
        options: SessionOptions,
        *,
        clock: Callable[[], int] = _now_ms,
        exit_net: bool = True,
        trace: Trace | None = None,
    ) -> None:
        """``trace``: a replay's cassette, already read and checked (``cassettes.load_verified``); without
        it, a replay reads and checks ``options.cassette`` itself."""
        self.options = options
        self.mode = options.mode
        self._clock = clock
        self._lock = threading.RLock()
        self._ids = providers.CallIds()
        self._bodies = BodyParser()
        self._secrets = KnownKeys.from_environment(os.environ, options.secrets)
        self._redactor = Redactor(options.redact) if options.redact else None
        self._first_error: BlackboxError | None = None
        self._finished = False
        self._ended_by_exit = False
        #: Stands for this session in context variables (which must not keep the session alive).
        self._token = object()
        self._tool_port = ToolPort(
            partial(running_tool, self._token), self._begin_tool, self._end_tool, self._abandon_tool
        )
        self._recording: Recording | None = None
        self._cursor: ReplayCursor | None = None
        self._interceptor: Interceptor | None = None
        self._fork: SessionFork | None = None
        self.report: RunReport | None = None
        #: The wrapped tools' calls as the agent saw them (``run``).
        self.tool_log = ToolLog()
        #: Where a ``new_episodes`` replay started recording (the first re-recorded step), if it did.
        self.went_live_at: int | None = None
        self._prepare(trace)
        if exit_net and self.mode in ("record", "replay", "fork"):
            exithooks.watch(self, self._end_by_exit)

    def _prepare(self, checked: Trace | None) -> None:
        if self.mode == "record":
            if self.options.out is None:
                raise BlackboxUsageError("record mode needs an output path (out / BLACKBOX_OUT)")
            recorder = TraceRecorder(self.options.resolved_trace_id, self._clock())
            self._recording = self._new_recording(recorder)
        elif self.mode == "replay":
            if self.options.cassette is None:
                raise BlackboxUsageError("replay mode needs a cassette (cassette / BLACKBOX_CASSETTE)")
            trace = checked if checked is not None else load_cassette(self.options.cassette)
            self._cursor = self._new_cursor(trace)
        elif self.mode == "fork":
            self._fork = SessionFork.prepare(self.options, self._secrets)
            self._cursor = self._new_cursor(self._fork.parent)

    def _new_cursor(self, trace: Trace) -> ReplayCursor:
        return ReplayCursor(trace, self.options.match, self._secrets, self.options.match_rules)

    def _new_recording(self, recorder: TraceRecorder) -> Recording:
        concurrent = self.options.mode == "record"
        return Recording(
            recorder,
            self._ids,
            clock=self._clock,
            lock=self._lock,
            owner=self._token,
            fail=self._fail,
            concurrent=concurrent,
            redact=self._redacted if self._redactor is not None else None,
        )

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> Session:
        """Start intercepting model calls (a no-op in ``off`` mode)."""
        if self.mode != "off" and self._interceptor is None:
            self._interceptor = Interceptor(self._on_model, self._on_other, routes=providers.ROUTES)
            self._interceptor.start()
            _STARTED.add(self)
        return self

    def stop(self) -> None:
        """Stop intercepting; safe to call twice.

        ``finish()`` does not stop: a finished session keeps answering model calls with "the session
        has finished; this request was not sent", so a late call can never reach the network. It is
        released here, when a ``with`` block ends, or by the pytest plugin at teardown.
        """
        if self._interceptor is not None:
            self._interceptor.stop()
            self._interceptor = None
            _STARTED.discard(self)

    def __enter__(self) -> Session:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        __tracebackhide__ = True
        try:
            if not self._finished and self.mode != "off":
                if isinstance(exc, BlackboxError):
                    self._end(self._fail(exc))  # nothing is written; the launcher's report names it
                elif exc is None:
                    self.finish()
                elif isinstance(exc, Exception):
                    self.finish(error=exc)
        finally:
            self.stop()

    @property
    def error(self) -> BlackboxError | None:
        """The first error this session met (a divergence, a refused field, …), if any."""
        return self._first_error

    @property
    def finished(self) -> bool:
        """Whether the run has ended: ``finish()``, ``discard()`` or the process exit."""
        return self._finished

    def discard(self) -> None:
        """End the session without writing or checking anything (a failed test's recording)."""
        self._end()

    def _end(self, report_error: BlackboxError | None = None) -> None:
        with self._lock:
            self._finished = True
            exithooks.forget(self)
            self.stop()
            if report_error is not None:
                self._write_report(report_error)

    def _mask(self, text: str) -> str:
        """Text for a message or a cassette: redacted, then every known key masked."""
        return mask(text if self._redactor is None else self._redactor.text(text), self._secrets)

    def _redacted(self, value: Any) -> Any:
        """A value as a cassette holds it (what a replay compares a live value with)."""
        return value if self._redactor is None else self._redactor.value(value)

    def _fail(self, error: BlackboxError) -> BlackboxError:
        """Keep the first typed error: it is the one ``finish()`` raises."""
        with self._lock:
            if self._first_error is None:
                self._first_error = error
            return self._first_error

    def _refuse_call(self, error: BlackboxError) -> BlackboxError:
        """The error a refused call gets: the run's kept error, or (after the run ended) its own."""
        return error if self._finished else self._fail(error)

    # -- model calls -----------------------------------------------------------------------------

    def _on_model(self, request: ModelRequest) -> Reply | Forward:
        with self._lock:
            self._secrets.note_request(request.headers, request.url)
            try:
                self._refuse_if_ended("this request was not sent")
                if self._recording is not None and self._recording.running:
                    self._recording.overlap(inside_tool(self._token))
                call = WireCall.of(request, self._bodies)
                if self._fork is not None:
                    self._fork.before_model_call(call.provider, call.body)
                if self.mode in ("replay", "fork"):
                    try:
                        return self._replay_call(call)
                    except ReplayDivergenceError as exc:
                        self._go_live_or_raise(exc)
                assert self._recording is not None
                if self._fork is not None and self._fork.scripted:
                    return self._script_call(call, self._recording)
                refuse_placeholder(request, call.provider.NAME, self._secrets)
                return self._recording.record_call(call)
            except BlackboxError as exc:
                text = "[blackbox] " + self._mask(str(self._refuse_call(exc)))
                return refusal(WireCall.provider_of(request), text)

    def _refuse_if_ended(self, consequence: str) -> None:
        """Nothing runs after ``finish()``, nor after the run's first error."""
        if self._finished:
            raise BlackboxUsageError(f"the session has finished (finish() was called); {consequence}")
        if self._first_error is not None:
            raise self._first_error

    def _replay_call(self, call: WireCall) -> Reply:
        assert self._cursor is not None
        model_input = self._redacted(call.normalize(self._ids))
        turn = self._cursor.answer(model_input, in_order=self._fork is not None)  # a fork: as recorded
        note_call(self._token, turn.number)
        assert turn.output is not None
        self._ids.register_identity(ref["toolCallId"] for ref in tool_calls_of(turn.output["payload"]))
        return call.reply(model_input, turn.output)

    def _script_call(self, call: WireCall, recording: Recording) -> Reply:
        """Past a scripted fork's fork point: the next scripted reply, recorded like a live answer."""
        assert self._fork is not None
        started = self._clock()
        model_input = call.normalize(self._ids)
        recording.append_turn(model_input, started, self._fork.next_output(self._ids))
        return call.reply(model_input, recording.recorder.steps[-1])

    def _on_other(self, request: OtherRequest) -> Reply | Forward:
        """Not a model call: sent to loopback or an allowed host; otherwise recorded runs warn (a replay
        could not send it) and offline runs refuse it. An SDK side call, or a call to a model API no
        protocol records, is refused outside wrapped tools."""
        mode = self.options.mode
        refused = side_call_error(mode, request, self._mask) or unseen_call_error(mode, request, self._mask)
        if refused is not None and not (self.mode == "record" and inside_tool(self._token)):
            self._refuse_call(refused)  # kept, unless the run already ended
            raise refused
        if reaches_allowed_host(request, self.options.allowed_hosts):
            return Forward()
        if self.mode == "record" and not (self._fork is not None and self._fork.scripted):
            if not inside_tool(self._token):  # a wrapped tool's requests never happen in a replay
                warn_unreplayable(request, self._mask)
            return Forward()
        error = offline_error(self.options.mode, request, self._mask)
        self._refuse_call(error)  # kept, unless the run already ended
        raise error

    def _go_live_or_raise(self, divergence: ReplayDivergenceError) -> None:
        """In a ``new_episodes`` replay, a divergence switches to recording; otherwise it stands.

        Only a replay that used the recorded model calls in order can go live: the steps before the
        divergence are then a prefix of the cassette, copied verbatim (same ids and hashes).
        """
        cursor = self._cursor
        assert cursor is not None
        if self.options.on_divergence != "record" or not cursor.in_order:
            raise divergence
        cut, claimed, opener = cursor.live_cut()
        self._continue_recording(TraceRecorder.resuming(cursor.trace), cut, opener, claimed)
        self.went_live_at = cut

    def _continue_recording(
        self, recorder: TraceRecorder, cut: int, opener: TraceStep | None, claimed: list[RecordedPair]
    ) -> Recording:
        """Switch from replaying to recording (a ``new_episodes`` replay, a fork): see ``continue_from``."""
        assert self._cursor is not None
        recording = self._recording = self._new_recording(recorder)
        recording.continue_from(self._cursor.trace, cut, opener, claimed)
        self._cursor = None
        self.mode = "record"
        return recording

    # -- tools -----------------------------------------------------------------------------------

    def tools(self, mapping: Mapping[str, F]) -> dict[str, F]:
        """Wrap several tools at once; the keys are the names the model uses."""
        return {name: self.tool(name, fn) for name, fn in mapping.items()}

    def tool(self, name: str, fn: F) -> F:
        """Wrap one tool under the name the model uses for it."""
        if not isinstance(name, str) or not name:
            raise BlackboxUsageError("a tool name must be a non-empty string")
        wrapped = fn if self.mode == "off" else wrap_tool(self._tool_port, name, fn)
        return self.tool_log.observe(name, fn, wrapped)

    @property
    def run(self) -> AgentRun:
        """The run so far: model calls, tool calls and (once finished) the status; see ``observed``."""
        with self._lock:
            if self._recording is not None:
                model_calls = model_calls_of(self._recording.recorder.steps)
            elif self._cursor is not None:
                used = [t for t in self._cursor.turns if t.consumed and t.output is not None]
                model_calls = [ModelCall(t.input["payload"], t.output["payload"]) for t in used if t.output]
            else:
                model_calls = []
            status = self.report.status if self.report is not None else None
            return AgentRun(tuple(model_calls), self.tool_log.calls(), status)

    def _begin_tool(self, name: str, tool_input: Any) -> Answered | ToolInvocation:
        """Answer from the cassette (replay) or register a real run (record); refusals come first."""
        __tracebackhide__ = True
        with self._lock:
            try:
                self._refuse_if_ended(f"`{name}` was not run")
                tool_input = to_json_value(tool_input, f"the arguments of tool {name}")
                if self._cursor is not None:
                    tool_input = self._redacted(tool_input)  # compared as the cassette holds it
                if self.mode == "replay":
                    assert self._cursor is not None
                    hint = last_call(self._token)
                    try:
                        pair = self._cursor.claim_tool(
                            name, tool_input, hint if isinstance(hint, int) else None
                        )
                        return Answered(pair.answer())
                    except ReplayDivergenceError as exc:
                        self._go_live_or_raise(exc)
                answered = self._fork_tool(name, tool_input) if self._fork is not None else None
                if answered is not None:
                    return answered
                assert self._recording is not None
                return self._recording.start_tool(name, tool_input)
            except BlackboxError as exc:
                raise _clean(self._refuse_call(exc)) from None
            except RecordedToolError as exc:
                raise _clean(exc) from None

    def _fork_tool(self, name: str, tool_input: Any) -> Answered | None:
        """A fork answers from the cassette before its fork point, swaps in the new result at it, and
        after it still answers the calls of that round recorded before it (``None``: run for real)."""
        fork, cursor = self._fork, self._cursor
        assert fork is not None
        if cursor is None:
            assert self._recording is not None
            return fork.serve(name, tool_input, self._recording.open_calls)
        pair = cursor.claim_tool(name, tool_input)
        if not fork.is_fork_point(pair):
            return Answered(pair.answer())
        round_, opener = cursor.round, cursor.opener  # copy steps 0…N-1, write step N, record on
        recording = self._continue_recording(fork.new_recorder(), fork.at, opener, fork.reach(round_, pair))
        return Answered(fork.write_fork_point(recording, round_, pair))

    def _end_tool(self, pending: ToolInvocation, result: Any, error: BaseException | None) -> Any:
        with self._lock:
            assert self._recording is not None
            message = None if error is None else self._mask(str(error) or type(error).__name__)
            try:
                return self._recording.end_tool(pending, result, message)
            except BlackboxError as exc:
                raise _clean(self._fail(exc)) from None

    def _abandon_tool(self, pending: ToolInvocation) -> None:
        with self._lock:
            assert self._recording is not None
            self._recording.abandon_tool(pending)

    # -- ending ----------------------------------------------------------------------------------

    def finish(self, result: Any = UNSET, error: Any = UNSET) -> RunReport:
        """End the run: write the cassette (record) or check it was fully and faithfully replayed."""
        __tracebackhide__ = True
        try:
            with self._lock:
                check_finish_arguments(result, error)
                if self._ended_by_exit:
                    raise BlackboxUsageError("the run already ended (the process exit wrote the cassette)")
                if self._finished:
                    raise BlackboxUsageError("finish() was already called on this session")
                self._finished = True
                exithooks.forget(self)
                return self._reported(lambda: self._finish(result, error), keep_error=False)
        except BlackboxError as exc:
            raise _clean(exc) from None

    def _finish(self, result: Any, error: Any) -> RunReport:
        refuse_finish(self._running(), self._first_error, self._fork)
        if self.mode == "off":
            return RunReport(mode="off", path=None, steps=0, status="incomplete")
        return self._close(partial(terminal_payload, result, error, mask=self._mask), result, error)

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
        running = self._running()
        refuse_exit(self.mode, exit_code, running, self._first_error, self._fork)
        return self._close(partial(exit_terminal, exit_code, running, mask=self._mask))

    def _running(self) -> int:
        return self._recording.running if self._recording is not None else 0

    def _close(
        self,
        terminal_of: Callable[[list[TraceStep]], Terminal | None],
        result: Any = UNSET,
        error: Any = UNSET,
    ) -> RunReport:
        """Check the replay (one gone live at its end is written), or write the recording ending with
        the terminal step ``terminal_of(steps)``."""
        if self.mode == "replay":
            assert self._cursor is not None
            try:
                self.report = check_replay(
                    self._cursor, self.options.cassette, result, error, self._mask, self._redacted
                )
                return self.report
            except ReplayDivergenceError as exc:
                try:
                    self._go_live_or_raise(exc)
                except ReplayDivergenceError:
                    raise self._fail(exc) from None
        assert self._recording is not None
        self.report = write_cassette(
            self._recording,
            cassette_out(self.options),
            terminal_of,
            mode="fork" if self._fork is not None else "record",  # a fork records from its fork point on
            secrets=self._secrets,
            mask=self._mask,
            keep=self._fail,
        )
        return self.report

    def _reported(self, end: Callable[[], RunReport], *, keep_error: bool) -> RunReport:
        """Run ``end`` and tell the launcher how it went (when it asked for a report)."""
        try:
            report = end()
        except BaseException as exc:
            self._write_report(self._fail(exc) if keep_error and isinstance(exc, BlackboxError) else exc)
            raise
        self._write_report(self._first_error)
        return report

    def _write_report(self, error: BaseException | None) -> None:
        report_to_launcher(self.options.report_path, self.report, self.mode, error, self._mask)


#: Sessions whose interception is on; finished ones stay here until stopped.
_STARTED: weakref.WeakSet[Session] = weakref.WeakSet()


def stop_finished_sessions() -> int:
    """Release the interception of every finished session (test harnesses call it between tests)."""
    finished = [session for session in list(_STARTED) if session.finished]
    for session in finished:
        session.stop()
    return len(finished)


def blackbox(**options: Any) -> Session:
    """Create and start a session from options and ``BLACKBOX_*`` variables (``off`` unless a mode is set).

    Use it as a context manager, or call ``finish()`` at the end of the run.
    """
    clock = options.pop("clock", _now_ms)
    try:
        launched.check_options(options)
        session_options = resolve_options(**options)
    except BlackboxError as exc:
        first = launched.first_session()  # under the launcher, its report names the refusal
        if isinstance(first, Session):
            first._fail(exc)
        else:
            launched.report_refusal(exc)
        raise _clean(exc) from None
    session = Session(session_options, clock=clock).start()
    launched.remember(session)
    return session
