"""The session: one run of an agent, recorded to a cassette or replayed from one.

Data flows one way. Recording: intercepted request → provider normalizes → recorder appends →
cassette saved at ``finish()``. Replaying: cassette loaded → cursor compares each normalized request
→ provider synthesizes the recorded response. Errors never cross the SDK boundary as exceptions
(the SDKs would retry or wrap them): the agent gets an HTTP 400 in the provider's error shape with a
``[blackbox]`` message, the first typed error is kept, and ``finish()`` raises it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlsplit

from . import exitnet, providers
from .errors import (
    BlackboxError,
    BlackboxUnsupportedError,
    BlackboxUsageError,
    CassetteError,
    OfflineRequestError,
    ReplayDivergenceError,
    SecretLeakError,
)
from .interception import Forward, Interceptor, ModelRequest, OtherRequest, Reply, UpstreamResponse
from .jsonvalue import to_json_value
from .options import _UNSET, SessionOptions, resolve_options
from .replay import ReplayCursor
from .tools import OpenCalls, wrap_tool
from .trace.io import load_trace, save_trace
from .trace.model import Trace, TraceStep
from .trace.payloads import model_output_text, tool_calls_of
from .trace.recorder import TraceRecorder
from .trace.secrets import contains_secret, mask
from .trace.verify import verify_trace

__all__ = ["OFFLINE_PLACEHOLDER_KEY", "RunReport", "Session", "blackbox"]

F = TypeVar("F", bound=Callable[..., Any])

#: Set as the provider key in offline runs so SDK constructors start; nothing is sent with it.
OFFLINE_PLACEHOLDER_KEY = "blackbox-offline-placeholder"
PROVIDER_KEY_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
_SECRET_HEADERS = ("authorization", "x-api-key", "api-key")


def _now_ms() -> int:
    return int(time.time() * 1000)


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


@dataclass
class _PendingTool:
    """One wrapped-tool invocation of the current turn, buffered until the turn is written."""

    call_id: str
    name: str
    tool_input: Any
    started: int
    ended: int = 0
    outcome: dict[str, Any] = field(default_factory=dict)
    requested: bool = True


class Session:
    """One agent run: ``off`` passes everything through, ``record`` writes a cassette, ``replay`` reads one."""

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
        self._recorder: TraceRecorder | None = None
        self._cursor: ReplayCursor | None = None
        self._interceptor: Interceptor | None = None
        self.report: RunReport | None = None
        self._out = options.out if options.mode == "record" else options.cassette
        #: Where a ``new_episodes`` replay started recording (the first re-recorded step), if it did.
        self.went_live_at: int | None = None
        self._collect_env_secrets(os.environ)
        self._prepare()
        if exit_net and self.mode == "record":
            exitnet.watch(self)

    # -- set-up ----------------------------------------------------------------------------------

    def _prepare(self) -> None:
        if self.mode == "record":
            if self.options.out is None:
                raise BlackboxUsageError("record mode needs an output path (out / BLACKBOX_OUT)")
            self._recorder = TraceRecorder(self.options.resolved_trace_id, self._clock())
        elif self.mode == "replay":
            if self.options.cassette is None:
                raise BlackboxUsageError("replay mode needs a cassette (cassette / BLACKBOX_CASSETTE)")
            trace = load_trace(self.options.cassette)
            self._cursor = ReplayCursor(trace, self.options.match, self._secrets)
        elif self.mode == "fork":
            raise BlackboxUsageError(
                "fork mode is started by `blackbox fork <cassette> --at N … -- <command>`"
            )

    def _collect_env_secrets(self, env: Mapping[str, str]) -> None:
        for name in PROVIDER_KEY_VARS:
            self._add_secret(env.get(name, ""))

    def _add_secret(self, value: str) -> None:
        value = value.strip()
        if len(value) >= 4 and value != OFFLINE_PLACEHOLDER_KEY:
            self._secrets.add(value)

    def _collect_header_secrets(self, headers: Iterable[tuple[str, str]]) -> None:
        for name, value in headers:
            if name.lower() in _SECRET_HEADERS:
                self._add_secret(value[7:] if value.lower().startswith("bearer ") else value)

    def start(self) -> Session:
        """Start intercepting model calls (a no-op in ``off`` mode)."""
        if self.mode != "off" and self._interceptor is None:
            self._interceptor = Interceptor(self._on_model, self._on_other)
            self._interceptor.start()
        return self

    def stop(self) -> None:
        """Stop intercepting; safe to call twice."""
        if self._interceptor is not None:
            self._interceptor.stop()
            self._interceptor = None

    def __enter__(self) -> Session:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if not self._finished and self.mode != "off":
                if exc is None:
                    self.finish()
                elif isinstance(exc, Exception) and not isinstance(exc, BlackboxError):
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
            try:
                provider = providers.provider_for_path(urlsplit(request.url).path)
                if provider is None:
                    raise BlackboxUnsupportedError(f"no provider answers {urlsplit(request.url).path}")
                self._check_open(request)
                body = self._parse_body(request.body)
                if self.mode == "replay":
                    try:
                        return self._replay_call(provider, body)
                    except ReplayDivergenceError as exc:
                        self._go_live_or_raise(exc)
                return self._record_call(provider, body)
            except BlackboxError as exc:
                return self._refusal(provider, str(self._fail(exc)))

    def _check_open(self, request: ModelRequest) -> None:
        if self._finished:
            raise BlackboxUsageError(
                "the session has finished (finish() was called); this request was not sent"
            )
        if self._first_error is not None:
            raise self._first_error
        if self._tools_running:
            raise BlackboxUnsupportedError(
                "a wrapped tool is still running while a model call starts; await every tool call before "
                "the next model call, so its steps can be written in order"
            )

    @staticmethod
    def _parse_body(raw: bytes) -> Any:
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise BlackboxUnsupportedError(
                "the request body is not JSON; only JSON model calls can be recorded"
            ) from None

    def _record_call(self, provider: providers.Provider, body: Any) -> Forward:
        started = self._clock()
        model_input = provider.normalize_request(body, self._ids)
        self._model_calls_running += 1

        def on_response(response: UpstreamResponse) -> None:
            with self._lock:
                self._model_calls_running -= 1
                if not 200 <= response.status < 300:
                    return  # failed calls are not recorded; the agent sees the real error
                try:
                    output = provider.normalize_response(self._parse_body(response.body), self._ids)
                    if self._tools_running:
                        raise BlackboxUnsupportedError(
                            "a wrapped tool was still running when a model call returned; await every tool "
                            "call before the next model call, so its steps can be written in order"
                        )
                except BlackboxError as exc:
                    self._fail(exc)
                    return
                self._append_turn(model_input, started, output)

        return Forward(on_response)

    def _append_turn(self, model_input: Any, started: int, output: Any) -> None:
        assert self._recorder is not None
        self._flush_tools()
        self._recorder.append("model_input", model_input, started)
        self._recorder.append("model_output", output, self._clock())
        self._open = OpenCalls.of(tool_calls_of(output))

    def _replay_call(self, provider: providers.Provider, body: Any) -> Reply:
        cursor = self._cursor
        assert cursor is not None
        recorded = cursor.peek_model_input()
        cursor.compare_request(recorded, provider.normalize_request(body, self._ids))
        output = cursor.take_model_output(recorded)
        self._ids.register_identity(ref["toolCallId"] for ref in tool_calls_of(output["payload"]))
        model = body.get("model") if isinstance(body, dict) else None
        synthesized = provider.synthesize_response(
            output["payload"],
            output_index=output["index"],
            model=model if isinstance(model, str) else None,
            timestamp=output["timestamp"],
        )
        return Reply(status=200, body=json.dumps(synthesized, ensure_ascii=False).encode("utf-8"))

    def _on_other(self, request: OtherRequest) -> Reply | Forward:
        if self.mode == "record":
            return Forward()
        url = urlsplit(request.url)
        shown = f"{url.scheme}://{url.hostname or ''}{f':{url.port}' if url.port else ''}{url.path}"
        error = OfflineRequestError(
            f"{self.mode} mode answers only model calls (messages.create / chat.completions.create); "
            f"a request to {request.method} {self._mask(shown)} would need the network"
        )
        self._fail(error)
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

    def run_tool(self, name: str, tool_input: Any, call: Callable[[], Any]) -> Any:
        """Run (record) or answer (replay) one wrapped-tool invocation."""
        __tracebackhide__ = True
        with self._lock:
            try:
                tool_input = self._tool_gate(name, tool_input)
                if self.mode == "replay":
                    try:
                        return self._replay_tool(name, tool_input)
                    except ReplayDivergenceError as exc:
                        self._go_live_or_raise(exc)
                pending = self._start_tool(name, tool_input)
            except BlackboxError as exc:
                raise self._fail(exc) from None
        try:
            result = call()
        except Exception as exc:
            self._end_tool(pending, error=exc)
            raise
        except BaseException:
            self._abandon_tool()
            raise
        return self._end_tool(pending, result=result)

    async def run_tool_async(self, name: str, tool_input: Any, call: Callable[[], Awaitable[Any]]) -> Any:
        """The async twin of :meth:`run_tool`."""
        __tracebackhide__ = True
        with self._lock:
            try:
                tool_input = self._tool_gate(name, tool_input)
                if self.mode == "replay":
                    try:
                        return self._replay_tool(name, tool_input)
                    except ReplayDivergenceError as exc:
                        self._go_live_or_raise(exc)
                pending = self._start_tool(name, tool_input)
            except BlackboxError as exc:
                raise self._fail(exc) from None
        try:
            result = await call()
        except Exception as exc:
            self._end_tool(pending, error=exc)
            raise
        except BaseException:
            self._abandon_tool()
            raise
        return self._end_tool(pending, result=result)

    def _go_live_or_raise(self, divergence: ReplayDivergenceError) -> None:
        """In ``new_episodes`` replay, a divergence switches to recording; otherwise it stands."""
        if self.options.on_divergence != "record":
            raise divergence
        self._go_live()

    def _go_live(self) -> None:
        """Continue as a recording: the matching prefix is copied verbatim (same ids and hashes)."""
        cursor = self._cursor
        assert cursor is not None
        cut, claimed, opener = cursor.live_cut()
        trace = cursor.trace
        recorder = TraceRecorder(trace["id"], trace["createdAt"])
        for step in trace["steps"][:cut]:
            recorder.copy_step(step)
        self._ids.seed_past(_call_ids(trace["steps"][:cut]))
        self._open = OpenCalls.of(tool_calls_of(opener["payload"])) if opener is not None else OpenCalls()
        for pair in claimed:
            tool_input = pair.call["payload"].get("toolInput")
            self._open.claim(pair.name, tool_input)
            result = pair.result["payload"] if pair.result is not None else {}
            self._pending.append(
                _PendingTool(
                    pair.call_id,
                    pair.name,
                    tool_input,
                    pair.call["timestamp"],
                    ended=pair.result["timestamp"] if pair.result is not None else pair.call["timestamp"],
                    outcome={k: result[k] for k in ("result", "error") if k in result},
                )
            )
        self._recorder = recorder
        self._cursor = None
        self.mode = "record"
        self.went_live_at = cut

    def _replay_tool(self, name: str, tool_input: Any) -> Any:
        assert self._cursor is not None
        return self._cursor.claim_tool(name, tool_input).answer()

    def _start_tool(self, name: str, tool_input: Any) -> _PendingTool:
        ref = self._open.claim(name, tool_input)
        call_id = ref["toolCallId"] if ref is not None else self._ids.fresh()
        pending = _PendingTool(call_id, name, tool_input, self._clock(), requested=ref is not None)
        self._pending.append(pending)
        self._tools_running += 1
        return pending

    def _abandon_tool(self) -> None:
        with self._lock:
            self._tools_running -= 1

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
                raise self._fail(exc) from None
            pending.outcome = {"result": value}
            return value

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
                "result": to_json_value(result, "finish(result=…)"),
            }
        outputs = [s for s in steps if s["type"] == "model_output"]
        last = outputs[-1]["payload"] if outputs else None
        if isinstance(last, dict) and last.get("type") == "final_answer":
            return {"event": "run_completed", "status": "success", "result": model_output_text(last)}
        return None

    def finish(self, result: Any = _UNSET, error: Any = _UNSET) -> RunReport:
        """End the run: write the cassette (record) or check it was fully and faithfully replayed."""
        __tracebackhide__ = True
        with self._lock:
            if result is not _UNSET and error is not _UNSET:
                raise BlackboxUsageError("finish() takes a result or an error, not both")
            if self._ended_by_exit:
                raise BlackboxUsageError("the run already ended (the process exit wrote the cassette)")
            if self._finished:
                raise BlackboxUsageError("finish() was already called on this session")
            self._finished = True
            exitnet.forget(self)
            try:
                report = self._finish(result, error)
            except BaseException as exc:
                self._write_report(exc)
                raise
            finally:
                self.stop()
            self._write_report()
            return report

    def _finish(self, result: Any, error: Any) -> RunReport:
        running = self._tools_running + self._model_calls_running
        if running:
            raise BlackboxUsageError(
                f"finish() was called while {running} wrapped call(s) were still running; await every model "
                "call and tool call before finish(). Nothing was written, and later calls on this session are refused."
            )
        if self._first_error is not None:
            raise self._first_error
        if self.mode == "record":
            return self._finish_record(result, error)
        if self.mode == "replay":
            return self._finish_replay(result, error)
        return RunReport(mode="off", path=None, steps=0, status="incomplete")

    def _finish_record(self, result: Any, error: Any) -> RunReport:
        assert self._recorder is not None and self._out is not None
        self._flush_tools()
        terminal = self._terminal_payload(result, error, self._recorder.steps)
        if terminal is not None:
            self._recorder.append("metadata", terminal, self._clock())
        trace = self._recorder.trace()
        self._write(trace, self._out)
        self.report = RunReport("record", str(self._out), len(trace["steps"]), _status(terminal))
        return self.report

    def _finish_replay(self, result: Any, error: Any) -> RunReport:
        cursor = self._cursor
        assert cursor is not None
        outcome = self._terminal_payload(result, error, cursor.steps[: cursor.pos])
        try:
            replayed = cursor.finish(outcome)
        except ReplayDivergenceError as exc:
            if self.options.on_divergence != "record":
                raise self._fail(exc) from None
            self._go_live()
            return self._finish_record(result, error)
        self.report = RunReport(
            "replay", str(self.options.cassette), len(cursor.steps), _status(outcome), replayed_steps=replayed
        )
        return self.report

    def end_by_exit(self, exit_code: int) -> None:
        """Write an unfinished recording as the process ends (see ``exitnet``)."""
        with self._lock:
            if self._finished or self._recorder is None or self._out is None:
                return
            self._finished = self._ended_by_exit = True
            self.stop()
            self._flush_tools()
            running = self._tools_running + self._model_calls_running
            if running:
                terminal: dict[str, Any] | None = {
                    "event": "run_failed",
                    "status": "error",
                    "reason": "calls_in_flight",
                    "exitCode": exit_code,
                    "inFlight": running,
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
            self.report = RunReport("record", str(self._out), len(trace["steps"]), _status(terminal))
            self._write_report()

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
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)

    def discard(self) -> None:
        """End the session without writing or checking anything (a failed test's recording)."""
        with self._lock:
            self._finished = True
            exitnet.forget(self)
            self.stop()

    def _write(self, trace: Trace, path: Path) -> None:
        if contains_secret(trace, self._secrets):
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


def _call_ids(steps: list[TraceStep]) -> list[str]:
    ids: list[str] = []
    for step in steps:
        if step["type"] == "model_output":
            ids.extend(ref["toolCallId"] for ref in tool_calls_of(step["payload"]))
        elif step["type"] in ("tool_call", "tool_result") and isinstance(step["payload"], dict):
            ids.append(str(step["payload"].get("toolCallId", "")))
    return ids


def _status(terminal: Any) -> str:
    if isinstance(terminal, dict):
        return "success" if terminal.get("event") == "run_completed" else "error"
    return "incomplete"


#: Set by the ``blackbox`` launcher in the child's environment: the CLI owns the session's settings.
LAUNCHED_VAR = "BLACKBOX_LAUNCHED"
_launched_sessions = 0
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


def _check_launcher(options: Mapping[str, Any]) -> None:
    """Under the launcher, one session per process, configured by the CLI only."""
    global _launched_sessions
    if os.environ.get(LAUNCHED_VAR) != "1":
        return
    overridden = sorted(k for k in _CLI_OWNED if options.get(k) not in (None, _UNSET))
    if overridden:
        raise BlackboxUsageError(
            f"blackbox() options {', '.join(overridden)} override the CLI's settings; under `blackbox record/"
            "replay/fork` the command line decides them, so remove them from the code"
        )
    _launched_sessions += 1
    if _launched_sessions > 1:
        raise BlackboxUsageError(
            "a second blackbox() session was created in a process started by the blackbox CLI; the CLI runs "
            "one session per command and reports on it"
        )


def blackbox(**options: Any) -> Session:
    """Create and start a session from options and ``BLACKBOX_*`` variables (``off`` unless a mode is set).

    Use it as a context manager, or call ``finish()`` at the end of the run.
    """
    clock = options.pop("clock", _now_ms)
    _check_launcher(options)
    return Session(resolve_options(**options), clock=clock).start()
