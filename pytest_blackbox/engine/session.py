"""The session: one run of an agent, recorded to a cassette or replayed from one (docs/engine.md).

It owns the run's lifecycle, its lock and its first error, and hands each intercepted call to
``dispatch``, which answers it by mode: from the recording buffer (``recording``), the replay cursor
(``replay``) or the fork (``fork``); what ends a run and how is ``ending``'s, called with what each
rule needs. Errors never cross the SDK boundary as
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
from typing import Any, NamedTuple, TypeVar

from .. import providers
from ..errors import BlackboxError, BlackboxUsageError, RecordedToolError
from ..interception import Forward, Interceptor, ModelRequest, OtherRequest, Reply
from ..trace.model import Terminal, Trace, TraceStep
from ..trace.secrets import mask
from ..vocabulary import UNSET
from . import exithooks, launched
from .comparison import Relaxation
from .concurrency import running_tool
from .dispatch import Dispatch
from .ending import (
    RunReport,
    check_finish_arguments,
    exit_terminal,
    refuse_exit,
    refuse_finish,
    report_to_launcher,
    terminal_payload,
)
from .google_auth import answer_placeholder_refresh
from .jsonvalue import to_json_value
from .keys import KnownKeys
from .observed import AgentRun, ToolLog, error_text
from .options import SessionOptions, resolve_options
from .recording import ToolInvocation
from .rules import Redactor
from .tools import Answered, ToolPort, wrap_tool
from .wire import WireCall, refusal

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
        self._lock = threading.RLock()
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
        self._interceptor: Interceptor | None = None
        self.report: RunReport | None = None
        #: The wrapped tools' calls as the agent saw them (``run``).
        self.tool_log = ToolLog()
        self._dispatch = Dispatch(
            options,
            trace,
            secrets=self._secrets,
            redactor=self._redactor,
            clock=clock,
            lock=self._lock,
            owner=self._token,
            fail=self._fail,
        )
        if exit_net and self.mode in ("record", "replay", "fork"):
            exithooks.watch(self, type(self)._end_by_exit)

    @property
    def mode(self) -> str:
        """``off``, ``record``, ``replay`` or ``fork``; ``record`` once a replay went live or a fork
        passed its fork point."""
        return self._dispatch.mode

    @property
    def went_live_at(self) -> int | None:
        """Where a ``new_episodes`` replay started recording (the first re-recorded step), if it did."""
        return self._dispatch.went_live_at

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> Session:
        """Start intercepting model calls (a no-op in ``off`` mode).

        Placeholder Google credentials refresh offline from now on (``google_auth``).
        """
        if self.mode != "off" and self._interceptor is None:
            answer_placeholder_refresh()
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
    def relaxed(self) -> Relaxation | None:
        """The first request or tool input this replay matched only because a match rule (or the
        ``sequence`` mode) relaxed the comparison, if any."""
        cursor = self._dispatch.cursor
        return cursor.compare.relaxed if cursor is not None else None

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
                return self._dispatch.answer_model(request)
            except BlackboxError as exc:
                text = "[blackbox] " + self._mask(str(self._refuse_call(exc)))
                return refusal(WireCall.provider_of(request), text)

    def _refuse_if_ended(self, consequence: str) -> None:
        """Nothing runs after ``finish()``, nor after the run's first error."""
        if self._finished:
            raise BlackboxUsageError(f"the session has finished (finish() was called); {consequence}")
        if self._first_error is not None:
            raise self._first_error

    def _on_other(self, request: OtherRequest) -> Reply | Forward:
        """Not a model call (``Dispatch.answer_other``); a refusal is kept unless the run already ended."""
        try:
            return self._dispatch.answer_other(request, self._mask)
        except BlackboxError as exc:
            self._refuse_call(exc)
            raise

    # -- tools -----------------------------------------------------------------------------------

    def tools(self, mapping: Mapping[str, F]) -> dict[str, F]:
        """Wrap several tools at once; the keys are the names the model uses."""
        return {name: self.tool(name, fn) for name, fn in mapping.items()}

    def tool(self, name: str, fn: F) -> F:
        """Wrap one tool under the name the model uses for it."""
        if not isinstance(name, str) or not name:
            raise BlackboxUsageError("a tool name must be a non-empty string")
        if self.mode == "off":
            return self.tool_log.observe(name, fn)
        return wrap_tool(self._tool_port, name, fn)

    @property
    def run(self) -> AgentRun:
        """The run so far: model calls, tool calls and (once finished) the status; see ``observed``."""
        with self._lock:
            status = self.report.status if self.report is not None else None
            return AgentRun(tuple(self._dispatch.model_calls()), self.tool_log.calls(), status)

    def _begin_tool(self, name: str, tool_input: Any) -> Answered | _RunningTool:
        """Answer from the cassette (replay) or register a real run (record); refusals come first.

        The call is noted in ``tool_log`` with its input as converted here (a refused call is not)."""
        __tracebackhide__ = True
        with self._lock:
            try:
                self._refuse_if_ended(f"`{name}` was not run")
                tool_input = to_json_value(tool_input, f"the arguments of tool {name}")
                begun = self._dispatch.begin_tool(name, tool_input)
            except BlackboxError as exc:
                raise _clean(self._refuse_call(exc)) from None
            except RecordedToolError as exc:
                self.tool_log.add(name, tool_input, error=error_text(exc))
                raise _clean(exc) from None
            if isinstance(begun, Answered):
                self.tool_log.add(name, tool_input, begun.value)
                return begun
            return _RunningTool(begun, self.tool_log.start(), name, tool_input)

    def _end_tool(self, running: _RunningTool, result: Any, error: BaseException | None) -> Any:
        with self._lock:
            recording = self._dispatch.recording
            assert recording is not None
            message = None if error is None else self._mask(error_text(error))
            try:
                value = recording.end_tool(running.invocation, result, message)
            except BlackboxError as exc:
                raise _clean(self._fail(exc)) from None
            failure = None if error is None else error_text(error)
            self.tool_log.end(running.slot, running.name, running.tool_input, value, failure)
            return value

    def _abandon_tool(self, running: _RunningTool) -> None:
        """A tool cancelled or interrupted: it leaves no steps, and no call in ``tool_log``."""
        with self._lock:
            recording = self._dispatch.recording
            assert recording is not None
            recording.abandon_tool(running.invocation)

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
        refuse_finish(self._dispatch.running, self._first_error, self._dispatch.fork)
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
        running = self._dispatch.running
        refuse_exit(self.mode, exit_code, running, self._first_error, self._dispatch.fork)
        return self._close(partial(exit_terminal, exit_code, running, mask=self._mask))

    def _close(
        self,
        terminal_of: Callable[[list[TraceStep]], Terminal | None],
        result: Any = UNSET,
        error: Any = UNSET,
    ) -> RunReport:
        """Check the replay or write the recording (``Dispatch.close``); the report is kept for ``run``."""
        self.report = self._dispatch.close(terminal_of, self._mask, result, error)
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


class _RunningTool(NamedTuple):
    """A wrapped tool running for real (recorded): the recording's invocation, its place in the
    session's ``tool_log``, and its name and input as noted there (before any redaction)."""

    invocation: ToolInvocation
    slot: int
    name: str
    tool_input: Any


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
