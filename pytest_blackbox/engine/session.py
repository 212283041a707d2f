"""The session: one run of an agent, recorded to a cassette or replayed from one.

Data flows one way. Recording: intercepted request → provider normalizes → recorder appends →
cassette saved at ``finish()``. Replaying: cassette loaded → cursor compares each normalized request
→ provider synthesizes the recorded response. Errors never cross the SDK boundary as exceptions
(the SDKs would retry or wrap them): the agent gets an HTTP 400 in the provider's error shape with a
``[blackbox]`` message, the first typed error is kept, and ``finish()`` raises it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

from .. import providers
from ..analysis.verify import verify_trace
from ..errors import (
    BlackboxError,
    BlackboxUnsupportedError,
    BlackboxUsageError,
    CassetteError,
    OfflineRequestError,
    ReplayDivergenceError,
    SecretLeakError,
)
from ..interception import Forward, Interceptor, ModelRequest, OtherRequest, Reply, UpstreamResponse
from ..trace.io import load_trace, parse_trace, save_trace
from ..trace.model import Trace, TraceStep
from ..trace.payloads import model_output_text, tool_calls_of
from ..trace.recorder import TraceRecorder
from ..trace.secrets import contains_secret, known_secrets, mask
from . import exithooks
from .concurrency import ConcurrentRecording, Turn, inside_tool, last_call, note_call, running_tool
from .fork import SessionFork, synthesized_reply
from .jsonvalue import to_json_value
from .options import _UNSET, SessionOptions, resolve_options
from .replay import RecordedPair, RecordedToolError, ReplayCursor
from .tools import OpenCalls, wrap_tool

__all__ = ["OFFLINE_PLACEHOLDER_KEY", "RunReport", "Session", "blackbox"]

F = TypeVar("F", bound=Callable[..., Any])

#: Set as the provider key in offline runs so SDK constructors start; nothing is sent with it.
OFFLINE_PLACEHOLDER_KEY = "blackbox-offline-placeholder"
PROVIDER_KEY_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY")
#: google-genai also reads GOOGLE_API_KEY (first); it gets no placeholder, as the SDK warns when both are set.
_SECRET_KEY_VARS = (*PROVIDER_KEY_VARS, "GOOGLE_API_KEY")
_SECRET_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")
OVERLAP_MESSAGE = (
    "overlapping model calls are recorded only in record mode, not in a fork or after a replay went live "
    '(on_divergence="record"); await each call before the next in these runs'
)
TOOL_AT_START_MESSAGE = (
    "a wrapped tool is still running while a model call starts; await every tool call before the next "
    "model call, so its steps can be written in order"
)
TOOL_AT_RETURN_MESSAGE = (
    "a wrapped tool was still running when a model call returned; await every tool call before the next "
    "model call, so its steps can be written in order"
)
INSIDE_TOOL_MESSAGE = (
    "a wrapped tool is still running while a model call starts: the call is made inside the tool, and a "
    "replay never runs wrapped tools; make model calls outside the functions you wrap"
)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _clean(error: BaseException) -> BaseException:
    """A kept error, ready to be raised (``raise _clean(e) from None``) from the caller's own frame.

    A kept error is raised again later (every refused request, ``finish()``); without this its
    traceback would grow each time and show where it was first detected instead of where the user
    is, and ``from None`` drops the SDK error it was raised while handling.
    """
    return error.with_traceback(None)


def write_report(path: Path, data: dict[str, Any]) -> None:
    """Write the launcher's JSON status report atomically (the launcher may read it at any moment)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


#: Checked cassettes by the SHA-256 of their bytes: replaying the same file again (parametrized tests,
#: a benchmark, a flaky-test rerun) skips the parse, schema and hash-chain checks. Bounded, and keyed
#: by content, so an edited file is always checked again.
_CHECKED: OrderedDict[str, Trace] = OrderedDict()
_CHECKED_MAX = 16


def load_cassette(path: Path) -> Trace:
    """``load_trace``, remembering what was already checked. The trace is shared: never mutate it."""
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return load_trace(path)  # it raises the CassetteReadError that names the problem
    key = hashlib.sha256(data).hexdigest()
    trace = _CHECKED.get(key)
    if trace is None:
        trace = parse_trace(text, path=os.fspath(path))
        _CHECKED[key] = trace
        if len(_CHECKED) > _CHECKED_MAX:
            _CHECKED.popitem(last=False)
    return trace


@dataclass(frozen=True)
class RunReport:
    """What ``finish()`` did: the launcher and the pytest plugin print it."""

    mode: str
    path: str | None
    steps: int
    status: str
    replayed_steps: int = 0
    finished: bool = True

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


@dataclass(frozen=True)
class _Answered:
    """A wrapped tool answered from the cassette: the tool itself does not run."""

    value: Any


@dataclass
class _PendingTool:
    """One wrapped-tool invocation of the current turn, buffered until the turn is written."""

    call_id: str
    name: str
    tool_input: Any
    started: int | float
    ended: int | float = 0
    outcome: dict[str, Any] = field(default_factory=dict)
    requested: bool = True
    #: The model turn whose round it belongs to, once the run records concurrent conversations.
    turn: Turn | None = None


@dataclass
class _Call:
    """A model call being recorded, until its answer arrives."""

    model_input: Any
    started: int
    #: Its place among concurrent conversations, once the run records them.
    turn: Turn | None = None
    #: The index of its ``model_input`` step, once written in a sequential recording.
    step: int | None = None


class Session:
    """One agent run: ``off`` passes everything through, ``record`` writes a cassette, ``replay`` reads it."""

    def __init__(
        self, options: SessionOptions, *, clock: Callable[[], int] = _now_ms, exit_net: bool = True
    ) -> None:
        self.options = options
        self.mode = options.mode
        self._clock = clock
        self._lock = threading.RLock()
        self._ids = providers.CallIds()
        self._secrets: set[str] = set()
        self._first_error: BlackboxError | None = None
        self._finished = False
        self._ended_by_exit = False
        self._tools_running = 0
        self._model_calls_running = 0
        self._open = OpenCalls()
        self._pending: list[_PendingTool] = []
        self._calls: list[_Call] = []
        #: Set once wrapped calls overlap: the run is then recorded conversation by conversation.
        self._conversations: ConcurrentRecording | None = None
        #: Stands for this session in context variables (which must not keep the session alive).
        self._token = object()
        self._recorder: TraceRecorder | None = None
        self._cursor: ReplayCursor | None = None
        self._interceptor: Interceptor | None = None
        self._fork: SessionFork | None = None
        self.report: RunReport | None = None
        self._out = options.out if options.mode in ("record", "fork") else options.cassette
        #: Where a ``new_episodes`` replay started recording (the first re-recorded step), if it did.
        self.went_live_at: int | None = None
        self._collect_env_secrets(os.environ)
        self._prepare()
        if exit_net and self.mode in ("record", "replay", "fork"):
            exithooks.watch(self)

    # -- set-up ----------------------------------------------------------------------------------

    def _prepare(self) -> None:
        if self.mode == "record":
            if self.options.out is None:
                raise BlackboxUsageError("record mode needs an output path (out / BLACKBOX_OUT)")
            self._recorder = TraceRecorder(self.options.resolved_trace_id, self._clock())
        elif self.mode == "replay":
            if self.options.cassette is None:
                raise BlackboxUsageError("replay mode needs a cassette (cassette / BLACKBOX_CASSETTE)")
            trace = load_cassette(self.options.cassette)
            self._cursor = ReplayCursor(trace, self.options.match, self._secrets)
        elif self.mode == "fork":
            self._fork = SessionFork.prepare(self.options, self._secrets)
            self._cursor = ReplayCursor(self._fork.parent, self.options.match, self._secrets)

    def _collect_env_secrets(self, env: Mapping[str, str]) -> None:
        for name in _SECRET_KEY_VARS:
            self._add_secret(env.get(name, ""))

    def _add_secret(self, value: str) -> None:
        value = value.strip()
        if len(value) >= 4 and value != OFFLINE_PLACEHOLDER_KEY:
            self._secrets.add(value)

    def _collect_header_secrets(self, headers: Iterable[tuple[str, str]]) -> None:
        for name, value in headers:
            if name.lower() in _SECRET_HEADERS:
                self._add_secret(value[7:] if value.lower().startswith("bearer ") else value)

    def _collect_query_secrets(self, url: str) -> None:
        """The Gemini API also takes its key as a ``?key=`` query parameter."""
        for value in parse_qs(urlsplit(url).query).get("key", []):
            self._add_secret(value)

    def start(self) -> Session:
        """Start intercepting model calls (a no-op in ``off`` mode)."""
        if self.mode != "off" and self._interceptor is None:
            self._interceptor = Interceptor(self._on_model, self._on_other)
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
                    self._abort(exc)
                elif exc is None:
                    self.finish()
                elif isinstance(exc, Exception):
                    self.finish(error=exc)
        finally:
            self.stop()

    # -- errors across the SDK boundary ----------------------------------------------------------

    def _mask(self, text: str) -> str:
        return mask(text, self._secrets)

    def _fail(self, error: BlackboxError) -> BlackboxError:
        """Keep the first typed error: it is the one ``finish()`` raises."""
        with self._lock:
            if self._first_error is None:
                self._first_error = error
            return self._first_error

    def _refuse_call(self, error: BlackboxError) -> BlackboxError:
        """The error a refused call gets: the run's kept error, or (after the run ended) its own."""
        return error if self._finished else self._fail(error)

    @property
    def error(self) -> BlackboxError | None:
        """The first error this session met (a divergence, a refused field, …), if any."""
        return self._first_error

    def _refusal(self, provider: providers.Provider | None, message: str) -> Reply:
        text = "[blackbox] " + self._mask(message)
        body = provider.error_body(text) if provider is not None else {"error": {"message": text}}
        return Reply(
            status=400,
            body=json.dumps(body, ensure_ascii=False).encode("utf-8"),
            headers=[("content-type", "application/json"), ("x-should-retry", "false")],
        )

    # -- model calls -----------------------------------------------------------------------------

    def _on_model(self, request: ModelRequest) -> Reply | Forward:
        provider: providers.Provider | None = None
        with self._lock:
            self._collect_header_secrets(request.headers)
            self._collect_query_secrets(request.url)
            try:
                provider = providers.provider_for_path(urlsplit(request.url).path)
                if provider is None:
                    raise BlackboxUnsupportedError(f"no provider answers {urlsplit(request.url).path}")
                self._check_open(request)
                body = _parse_json(request.body, "the request body")
                if self._fork is not None:
                    self._fork.before_model_call(provider, body)
                if self.mode in ("replay", "fork"):
                    try:
                        return self._replay_call(provider, body)
                    except ReplayDivergenceError as exc:
                        self._go_live_or_raise(exc)
                if self._fork is not None and self._fork.scripted:
                    return self._script_call(provider, body)
                return self._record_call(provider, body)
            except BlackboxError as exc:
                return self._refusal(provider, str(self._refuse_call(exc)))

    def _check_open(self, request: ModelRequest) -> None:
        if self._finished:
            raise BlackboxUsageError(
                "the session has finished (finish() was called); this request was not sent"
            )
        if self._first_error is not None:
            raise self._first_error
        if self._model_calls_running or self._tools_running:
            if inside_tool(self._token):
                raise BlackboxUnsupportedError(INSIDE_TOOL_MESSAGE)
            self._record_concurrently(OVERLAP_MESSAGE if self._model_calls_running else TOOL_AT_START_MESSAGE)

    def _record_concurrently(self, refusal: str) -> None:
        """Wrapped calls overlap: record conversation by conversation from now on (see ``concurrency``).

        Only a plain recording can: a fork and a replay gone live copy a prefix verbatim, so their
        steps must keep being written in order (``refusal`` says so).
        """
        if self._conversations is not None:
            return
        if self.options.mode != "record" or self._recorder is None:
            raise BlackboxUnsupportedError(refusal)
        conversations = ConcurrentRecording()
        adopted = conversations.adopt(self._recorder.steps, _PendingTool)
        latest = conversations.latest
        if latest is not conversations.pre:
            latest.calls = self._open
        for pending in self._pending:
            pending.turn = latest
        for call in self._calls:
            call.turn = conversations.begin(call.model_input, call.started, ())
        self._pending = [*adopted, *self._pending]
        self._conversations = conversations

    def _record_call(self, provider: providers.Provider, body: Any) -> Forward:
        started = self._clock()
        model_input = provider.normalize_request(body, self._ids)
        call = _Call(model_input, started)
        if self._conversations is not None:
            call.turn = self._conversations.begin(model_input, started, self._pending)
        self._model_calls_running += 1
        self._calls.append(call)
        note_call(self._token, call)

        def on_response(response: UpstreamResponse) -> None:
            with self._lock:
                self._model_calls_running -= 1
                try:
                    answer = _whole_answer(provider, response)
                    if answer is None:
                        self._drop_call(call)
                        return  # a failed call is not recorded; the agent sees the real error
                    output = provider.normalize_response(answer, self._ids)
                    if self._tools_running:
                        self._record_concurrently(TOOL_AT_RETURN_MESSAGE)
                except BlackboxError as exc:
                    self._drop_call(call)
                    self._fail(exc)
                    return
                self._answer_call(call, output)

        def on_failure(error: BaseException) -> None:
            with self._lock:
                self._model_calls_running -= 1  # no answer will come; the SDK sees (and may retry) the error
                self._drop_call(call)

        return Forward(on_response, on_failure)

    def _answer_call(self, call: _Call, output: Any) -> None:
        self._calls.remove(call)
        if call.turn is not None and self._conversations is not None:
            self._conversations.answer(call.turn, output, self._clock())
            return
        assert self._recorder is not None
        self._append_turn(call.model_input, call.started, output)
        call.step = len(self._recorder) - 2

    def _drop_call(self, call: _Call) -> None:
        if call in self._calls:
            self._calls.remove(call)
        if call.turn is not None and self._conversations is not None:
            self._conversations.drop(call.turn)

    def _hinted_turn(self) -> Turn | None:
        """The conversation turn of the model call this task or thread made last, if known."""
        call = last_call(self._token)
        if not isinstance(call, _Call) or self._conversations is None:
            return None
        if call.turn is None and call.step is not None:
            call.turn = self._conversations.by_input_step.get(call.step)
        return call.turn

    def _append_turn(self, model_input: Any, started: int, output: Any) -> None:
        assert self._recorder is not None
        self._flush_tools()
        self._recorder.append("model_input", model_input, started)
        self._recorder.append("model_output", output, self._clock())
        self._open = OpenCalls.of(tool_calls_of(output))

    def _replay_call(self, provider: providers.Provider, body: Any) -> Reply:
        cursor = self._cursor
        assert cursor is not None
        if self._fork is not None:  # a fork replays its prefix in the recorded order
            recorded = cursor.peek_model_input()
            cursor.compare_request(recorded, provider.normalize_request(body, self._ids))
            output = cursor.take_model_output(recorded)
        else:
            turn = cursor.claim_request(provider.normalize_request(body, self._ids))
            note_call(self._token, turn.number)
            assert turn.output is not None
            output = turn.output
        self._ids.register_identity(ref["toolCallId"] for ref in tool_calls_of(output["payload"]))
        return synthesized_reply(provider, body, output)

    def _script_call(self, provider: providers.Provider, body: Any) -> Reply:
        """Past a scripted fork's fork point: the next scripted reply, recorded like a live answer."""
        assert self._fork is not None and self._recorder is not None
        started = self._clock()
        model_input = provider.normalize_request(body, self._ids)
        output = self._fork.next_output(self._ids)
        self._append_turn(model_input, started, output)
        return synthesized_reply(provider, body, self._recorder.steps[-1])

    def _on_other(self, request: OtherRequest) -> Reply | Forward:
        if self.mode == "record" and not (self._fork is not None and self._fork.scripted):
            return Forward()
        url = urlsplit(request.url)
        shown = f"{url.scheme}://{url.hostname or ''}{f':{url.port}' if url.port else ''}{url.path}"
        error = OfflineRequestError(
            f"{self.options.mode} mode answers only model calls (messages.create / chat.completions.create); "
            f"a request to {request.method} {self._mask(shown)} would need the network"
        )
        self._refuse_call(error)  # kept, unless the run already ended
        raise error

    # -- tools -----------------------------------------------------------------------------------

    def tools(self, mapping: Mapping[str, F]) -> dict[str, F]:
        """Wrap several tools at once; the keys are the names the model uses."""
        return {name: self.tool(name, fn) for name, fn in mapping.items()}

    def tool(self, name: str, fn: F) -> F:
        """Wrap one tool under the name the model uses for it."""
        if not isinstance(name, str) or not name:
            raise BlackboxUsageError("a tool name must be a non-empty string")
        if self.mode == "off":
            return fn
        return wrap_tool(self, name, fn)

    def _tool_gate(self, name: str, tool_input: Any) -> Any:
        if self._finished:
            raise BlackboxUsageError(f"the session has finished (finish() was called); `{name}` was not run")
        if self._first_error is not None:
            raise self._first_error
        return to_json_value(tool_input, f"the arguments of tool {name}")

    def _begin_tool(self, name: str, tool_input: Any) -> _PendingTool | _Answered:
        """Answer from the cassette (replay) or register a real run (record); refusals come first."""
        __tracebackhide__ = True
        with self._lock:
            try:
                tool_input = self._tool_gate(name, tool_input)
                if self.mode == "replay":
                    try:
                        return _Answered(self._replay_tool(name, tool_input))
                    except ReplayDivergenceError as exc:
                        self._go_live_or_raise(exc)
                if self._fork is not None:
                    answered = self._fork_tool(name, tool_input)
                    if answered is not None:
                        return answered
                return self._start_tool(name, tool_input)
            except BlackboxError as exc:
                raise _clean(self._refuse_call(exc)) from None
            except RecordedToolError as exc:
                raise _clean(exc) from None

    def run_tool(self, name: str, tool_input: Any, call: Callable[[], Any]) -> Any:
        """Run (record) or answer (replay) one wrapped-tool invocation."""
        __tracebackhide__ = True
        begun = self._begin_tool(name, tool_input)
        if isinstance(begun, _Answered):
            return begun.value
        try:
            with running_tool(self._token):
                result = call()
        except Exception as exc:
            self._end_tool(begun, error=exc)
            raise
        except BaseException:
            self._abandon_tool(begun)
            raise
        return self._end_tool(begun, result=result)

    async def run_tool_async(self, name: str, tool_input: Any, call: Callable[[], Awaitable[Any]]) -> Any:
        """The async twin of :meth:`run_tool`."""
        __tracebackhide__ = True
        begun = self._begin_tool(name, tool_input)
        if isinstance(begun, _Answered):
            return begun.value
        try:
            with running_tool(self._token):
                result = await call()
        except Exception as exc:
            self._end_tool(begun, error=exc)
            raise
        except BaseException:
            self._abandon_tool(begun)
            raise
        return self._end_tool(begun, result=result)

    def _go_live_or_raise(self, divergence: ReplayDivergenceError) -> None:
        """In ``new_episodes`` replay, a divergence switches to recording; otherwise it stands.

        Only a replay that used the recorded model calls in order can go live: the steps before the
        divergence are then a prefix of the cassette, copied verbatim.
        """
        if self.options.on_divergence != "record" or (self._cursor is not None and not self._cursor.in_order):
            raise divergence
        self._go_live()

    def _go_live(self) -> None:
        """Continue as a recording: the matching prefix is copied verbatim (same ids and hashes)."""
        cursor = self._cursor
        assert cursor is not None
        cut, claimed, opener = cursor.live_cut()
        trace = cursor.trace
        recorder = TraceRecorder(
            trace["id"],
            trace["createdAt"],
            parent_id=trace.get("parentId"),
            forked_from_step_id=trace.get("forkedFromStepId"),
        )
        self._continue_recording(recorder, cut, opener, claimed)
        self.went_live_at = cut

    def _continue_recording(
        self, recorder: TraceRecorder, cut: int, opener: TraceStep | None, claimed: list[RecordedPair]
    ) -> None:
        """Switch from replaying to recording into ``recorder`` (a ``new_episodes`` replay, a fork).

        The cassette's first ``cut`` steps are copied verbatim; ``opener`` is the model output whose
        round is open, and ``claimed`` its calls already answered from the cassette that lie past the
        cut: they are written with their recorded values.
        """
        assert self._cursor is not None
        trace = self._cursor.trace
        for step in trace["steps"][:cut]:
            recorder.copy_step(step)
        self._ids.seed_past(_call_ids(trace["steps"][:cut]))
        self._open = OpenCalls.of(tool_calls_of(opener["payload"])) if opener is not None else OpenCalls()
        for pair in claimed:  # answered from the cassette before the divergence: written as recorded
            self._open.claim(pair.name, pair.call["payload"].get("toolInput"))
            self._pending.append(_answered_tool(pair))
        self._recorder = recorder
        self._cursor = None
        self.mode = "record"

    def _fork_tool(self, name: str, tool_input: Any) -> _Answered | None:
        """A fork answers from the cassette before its fork point, swaps in the new result at it, and
        after it still answers the calls of that round recorded before it (``None``: run for real)."""
        fork = self._fork
        assert fork is not None
        if self._cursor is None:
            served = fork.claim_served(name, tool_input, self._open)
            return None if served is None else _Answered(served.answer())
        pair = self._cursor.claim_tool(name, tool_input)
        if not fork.is_fork_point(pair):
            return _Answered(pair.answer())
        self._reach_fork(pair)
        return _Answered(fork.replacement_value())

    def _reach_fork(self, pair: RecordedPair) -> None:
        """The fork point: copy steps 0…N-1, write the new step N, and record from here on."""
        fork, cursor = self._fork, self._cursor
        assert fork is not None and cursor is not None
        opener = cursor.steps[cursor.round_start - 1] if cursor.round_start > 0 else None
        round_ = cursor.round
        self._continue_recording(fork.new_recorder(), fork.at, opener, fork.reach(round_, pair))
        for done in fork.before_point(round_, pair):
            self._open.claim(done.name, done.call["payload"].get("toolInput"))
        assert self._recorder is not None
        payload, timestamp = fork.replacement_step()
        self._recorder.append("tool_result", payload, timestamp)

    def _replay_tool(self, name: str, tool_input: Any) -> Any:
        assert self._cursor is not None
        hint = last_call(self._token)
        return self._cursor.claim_tool(name, tool_input, hint if isinstance(hint, int) else None).answer()

    def _start_tool(self, name: str, tool_input: Any) -> _PendingTool:
        turn: Turn | None = None
        if self._conversations is not None:
            ref, turn = self._conversations.claim(name, tool_input, self._hinted_turn())
        else:
            ref = self._open.claim(name, tool_input)
        call_id = ref["toolCallId"] if ref is not None else self._ids.fresh()
        pending = _PendingTool(call_id, name, tool_input, self._clock(), requested=ref is not None, turn=turn)
        self._pending.append(pending)
        self._tools_running += 1
        return pending

    def _abandon_tool(self, pending: _PendingTool) -> None:
        """A tool cancelled or interrupted has no result to record: it leaves no steps."""
        with self._lock:
            self._tools_running -= 1
            self._pending.remove(pending)

    def _end_tool(
        self, pending: _PendingTool, *, result: Any = None, error: BaseException | None = None
    ) -> Any:
        with self._lock:
            self._tools_running -= 1
            pending.ended = self._clock()
            if error is not None:
                pending.outcome = {"error": self._mask(str(error) or type(error).__name__)}
                return None
            try:
                value = to_json_value(result, f"the result of tool {pending.name}")
            except BlackboxError as exc:
                raise _clean(self._fail(exc)) from None
            pending.outcome = {"result": value}
            return value

    def _flush_recording(self) -> None:
        """Write what is still buffered: the last round, or every concurrent conversation."""
        conversations, recorder = self._conversations, self._recorder
        assert recorder is not None
        if conversations is None:
            self._flush_tools()
            return
        self._recorder = TraceRecorder(recorder.trace_id, recorder.created_at)
        for type_, payload, timestamp in conversations.steps(self._pending):
            self._recorder.append(type_, payload, timestamp)
        self._pending, self._conversations = [], None

    def _flush_tools(self) -> None:
        """Write the turn's tool steps: requested calls in model order, then unrequested ones."""
        assert self._recorder is not None
        order = {ref["toolCallId"]: i for i, ref in enumerate(c.ref for c in self._open.claims)}
        done = [p for p in self._pending if p.outcome]
        done.sort(key=lambda p: (not p.requested, order.get(p.call_id, len(order))))
        for p in done:
            self._recorder.append(
                "tool_call",
                {"toolCallId": p.call_id, "toolName": p.name, "toolInput": p.tool_input},
                p.started,
            )
            self._recorder.append(
                "tool_result", {"toolCallId": p.call_id, "toolName": p.name, **p.outcome}, p.ended
            )
        self._pending = [p for p in self._pending if not p.outcome]

    # -- finishing -------------------------------------------------------------------------------

    def _terminal_payload(self, result: Any, error: Any, steps: list[TraceStep]) -> dict[str, Any] | None:
        if error is not _UNSET and error is not None:
            message = error if isinstance(error, str) else (str(error) or type(error).__name__)
            return {
                "event": "run_failed",
                "status": "error",
                "reason": "agent_error",
                "message": self._mask(message),
            }
        if result is not _UNSET:
            return {
                "event": "run_completed",
                "status": "success",
                "result": result,
            }
        outputs = [s for s in steps if s["type"] == "model_output"]
        last = outputs[-1]["payload"] if outputs else None
        if isinstance(last, dict) and last.get("type") == "final_answer":
            return {"event": "run_completed", "status": "success", "result": model_output_text(last)}
        return None

    @property
    def finished(self) -> bool:
        """Whether the run has ended: ``finish()``, ``discard()`` or the process exit."""
        return self._finished

    def finish(self, result: Any = _UNSET, error: Any = _UNSET) -> RunReport:
        """End the run: write the cassette (record) or check it was fully and faithfully replayed."""
        __tracebackhide__ = True
        try:
            return self._finish_once(result, error)
        except BlackboxError as exc:
            raise _clean(exc) from None

    def _finish_once(self, result: Any, error: Any) -> RunReport:
        with self._lock:
            if result is not _UNSET and error is not _UNSET:
                raise BlackboxUsageError("finish() takes a result or an error, not both")
            if result is not _UNSET and not isinstance(result, str):
                raise BlackboxUsageError(
                    f"finish(result=…) takes the final answer as a string, not {type(result).__name__}; "
                    "pass json.dumps(value) to record a structured answer"
                )
            if self._ended_by_exit:
                raise BlackboxUsageError("the run already ended (the process exit wrote the cassette)")
            if self._finished:
                raise BlackboxUsageError("finish() was already called on this session")
            self._finished = True
            exithooks.forget(self)
            try:
                report = self._finish(result, error)
            except BaseException as exc:
                self._write_report(exc)
                raise
            self._write_report()
            return report

    def _finish(self, result: Any, error: Any) -> RunReport:
        running = self._tools_running + self._model_calls_running
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
            return self._finish_record(result, error)
        if self.mode == "replay":
            return self._finish_replay(result, error)
        return RunReport(mode="off", path=None, steps=0, status="incomplete")

    def _finish_record(self, result: Any, error: Any) -> RunReport:
        assert self._recorder is not None and self._out is not None
        self._flush_recording()
        terminal = self._terminal_payload(result, error, self._recorder.steps)
        if terminal is not None:
            self._recorder.append("metadata", terminal, self._clock())
        trace = self._recorder.trace()
        self._write(trace, self._out)
        self.report = RunReport(self._written_mode, str(self._out), len(trace["steps"]), _status(terminal))
        return self.report

    @property
    def _written_mode(self) -> str:
        """The mode a written cassette reports: a fork records from its fork point on."""
        return "fork" if self._fork is not None else "record"

    def _finish_replay(self, result: Any, error: Any) -> RunReport:
        cursor = self._cursor
        assert cursor is not None
        outcome = self._terminal_payload(result, error, cursor.steps[: cursor.pos])
        try:
            replayed = cursor.finish(outcome)
        except ReplayDivergenceError as exc:
            if self.options.on_divergence != "record" or not cursor.in_order:
                raise self._fail(exc) from None
            self._go_live()
            return self._finish_record(result, error)
        self.report = RunReport(
            "replay", str(self.options.cassette), len(cursor.steps), _status(outcome), replayed_steps=replayed
        )
        return self.report

    def end_by_exit(self, exit_code: int) -> None:
        """End an unfinished run as the process ends (see ``exithooks``).

        A recording is written with the terminal step that says how the process ended. A replay is
        checked as ``finish()`` would check it, so the launcher can still report a divergence (or a
        pass) for a program that never called ``finish()``.
        """
        with self._lock:
            if self._finished or self.mode not in ("record", "replay", "fork"):
                return
            self._finished = self._ended_by_exit = True
            exithooks.forget(self)
            self.stop()
            try:
                if self._first_error is not None:
                    raise self._first_error  # as finish() would: nothing unfaithful is written
                if self.mode == "fork":
                    assert self._fork is not None
                    self._fork.check_end()  # the fork point was never reached: this raises
                if self.mode == "replay":
                    self._check_replay_at_exit(exit_code)
                else:
                    self._write_at_exit(exit_code)
            except BlackboxError as exc:
                self._write_report(self._fail(exc))
                raise
            self._write_report()

    def _running(self) -> int:
        return self._tools_running + self._model_calls_running

    def _write_at_exit(self, exit_code: int) -> None:
        assert self._recorder is not None and self._out is not None
        self._flush_recording()
        terminal: dict[str, Any] | None
        if self._running():
            terminal = {
                "event": "run_failed",
                "status": "error",
                "reason": "calls_in_flight",
                "exitCode": exit_code,
                "inFlight": self._running(),
            }
        elif exit_code != 0:
            terminal = {
                "event": "run_failed",
                "status": "error",
                "reason": "process_exit",
                "exitCode": exit_code,
            }
        else:
            terminal = self._terminal_payload(_UNSET, _UNSET, self._recorder.steps)
        if terminal is not None:
            self._recorder.append("metadata", terminal, self._clock())
        trace = self._recorder.trace()
        self._write(trace, self._out)
        self.report = RunReport(self._written_mode, str(self._out), len(trace["steps"]), _status(terminal))

    def _check_replay_at_exit(self, exit_code: int) -> None:
        running = self._running()
        if exit_code != 0 or running:
            still = f" with {running} wrapped call(s) still running" if running else ""
            raise BlackboxUsageError(
                f"the program exited (exit code {exit_code}) before finish(){still}; the replay could not "
                "be checked"
            )
        self._finish_replay(_UNSET, _UNSET)

    def _abort(self, error: BlackboxError) -> None:
        """The agent let a Blackbox error escape the ``with`` block: nothing is written; report it."""
        with self._lock:
            self._finished = True
            exithooks.forget(self)
            self.stop()
            self._write_report(self._fail(error))

    def _write_report(self, error: BaseException | None = None) -> None:
        """The JSON status report the ``blackbox`` launcher reads (only when it asked for one)."""
        path = self.options.report_path
        if path is None:
            return
        data: dict[str, Any] = (
            self.report.to_json() if self.report is not None else {"ok": False, "mode": self.mode}
        )
        shown = error if error is not None else self._first_error
        if shown is not None:
            data.update(ok=False, error=self._mask(str(shown)), errorType=type(shown).__name__)
        write_report(path, data)

    def discard(self) -> None:
        """End the session without writing or checking anything (a failed test's recording)."""
        with self._lock:
            self._finished = True
            exithooks.forget(self)
            self.stop()

    def _write(self, trace: Trace, path: Path) -> None:
        """Write only a cassette that verifies and holds no known API key (both refusals name why)."""
        if _contains_secret(trace, self._secrets):
            raise self._fail(SecretLeakError("refusing to write the cassette: it contains your API key"))
        report = verify_trace(trace, api_keys=sorted(self._secrets))
        failure = report.first_failure
        if failure is not None:
            raise self._fail(
                CassetteError(
                    f"refusing to write the cassette: {failure.name} failed — {self._mask(failure.detail)}"
                )
            )
        save_trace(trace, path)


_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')


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


def _parse_json(raw: bytes, what: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BlackboxUnsupportedError(
            f"{what} is not JSON; only JSON model calls and event streams can be recorded"
        ) from None


def _whole_answer(provider: providers.Provider, response: UpstreamResponse) -> Any:
    """The response body to normalize, or ``None`` for a call that did not succeed as a whole.

    Failed calls are not recorded (the agent got the provider's error): an error status, and an
    event stream that reported an error, was cut short or was closed by the agent before its end.
    A streamed answer is added up into the body the provider would have sent without streaming.
    """
    if not 200 <= response.status < 300 or not response.complete:
        return None
    content_type = next((value for name, value in response.headers if name == "content-type"), "")
    if not content_type.strip().lower().startswith("text/event-stream"):
        return _parse_json(response.body, "the response body")
    try:
        return provider.collect_stream(response.body)
    except BlackboxUnsupportedError:
        return None


def _answered_tool(pair: RecordedPair) -> _PendingTool:
    """A tool call replayed before going live, buffered with its recorded steps' values."""
    result = pair.result["payload"] if pair.result is not None else {}
    return _PendingTool(
        pair.call_id,
        pair.name,
        pair.call["payload"].get("toolInput"),
        pair.call["timestamp"],
        ended=pair.result["timestamp"] if pair.result is not None else pair.call["timestamp"],
        outcome={key: result[key] for key in ("result", "error") if key in result},
    )


def _call_ids(steps: list[TraceStep]) -> list[str]:
    ids: list[str] = []
    for step in steps:
        if step["type"] == "model_output":
            ids.extend(ref["toolCallId"] for ref in tool_calls_of(step["payload"]))
        elif step["type"] in ("tool_call", "tool_result") and isinstance(step["payload"], dict):
            ids.append(str(step["payload"].get("toolCallId", "")))
    return ids


#: Sessions whose interception is on; finished ones stay here until stopped.
_STARTED: weakref.WeakSet[Session] = weakref.WeakSet()


def stop_finished_sessions() -> int:
    """Release the interception of every finished session (test harnesses call it between tests)."""
    finished = [session for session in list(_STARTED) if session.finished]
    for session in finished:
        session.stop()
    return len(finished)


def _status(terminal: Any) -> str:
    if isinstance(terminal, dict):
        return "success" if terminal.get("event") == "run_completed" else "error"
    return "incomplete"


#: Set by the ``blackbox`` launcher in the child's environment: the CLI owns the session's settings.
LAUNCHED_VAR = "BLACKBOX_LAUNCHED"
_CLI_OWNED = (
    "mode",
    "cassette",
    "out",
    "trace_id",
    "match",
    "fork_at",
    "fork_set",
    "continue_with",
    "script",
    "report_path",
)


class _Launched:
    """The one session of a process started by the launcher (held weakly: the user owns it)."""

    count = 0
    session: weakref.ref[Session] | None = None


def _check_launcher(options: Mapping[str, Any]) -> None:
    """Under the launcher, one session per process, configured by the CLI only."""
    if os.environ.get(LAUNCHED_VAR) != "1":
        return
    overridden = sorted(k for k in _CLI_OWNED if options.get(k) not in (None, _UNSET))
    if overridden:
        raise BlackboxUsageError(
            f"blackbox() options {', '.join(overridden)} override the CLI's settings; under `blackbox record/"
            "replay/fork` the command line decides them, so remove them from the code"
        )
    _Launched.count += 1
    if _Launched.count > 1:
        raise BlackboxUsageError(
            "a second blackbox() session was created in a process started by the blackbox CLI; the CLI runs "
            "one session per command and reports on it"
        )


def _report_refusal(error: BlackboxError) -> None:
    """Under the launcher, a refused session still reaches the launcher's report.

    The first session (if any) keeps the error, so its own report at finish or exit names it;
    without one, the report is written here.
    """
    first = _Launched.session() if _Launched.session is not None else None
    if first is not None:
        first._fail(error)
        return
    path = os.environ.get("BLACKBOX_REPORT")
    if os.environ.get(LAUNCHED_VAR) == "1" and path:
        write_report(Path(path), {"ok": False, "error": str(error), "errorType": type(error).__name__})


def blackbox(**options: Any) -> Session:
    """Create and start a session from options and ``BLACKBOX_*`` variables (``off`` unless a mode is set).

    Use it as a context manager, or call ``finish()`` at the end of the run.
    """
    clock = options.pop("clock", _now_ms)
    try:
        _check_launcher(options)
        session_options = resolve_options(**options)
    except BlackboxError as exc:
        _report_refusal(exc)
        raise _clean(exc) from None
    session = Session(session_options, clock=clock).start()
    if os.environ.get(LAUNCHED_VAR) == "1":
        _Launched.session = weakref.ref(session)
    return session
