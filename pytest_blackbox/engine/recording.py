"""The recording buffer: model calls waiting for their answer and tool invocations waiting for their
round, written to the trace in the format's order. See docs/engine.md#concurrent-conversations.

A sequential run is written as it happens (each turn's tool steps when the next model call starts);
once wrapped calls overlap, the buffer hands over to ``concurrency`` and writes every conversation at
the end. The session owns the lock and the first error; the buffer is only ever used under that lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..analysis.jsondiff import first_difference
from ..errors import BlackboxError, BlackboxUnsupportedError
from ..interception import Forward, UpstreamResponse
from ..providers import CallIds
from ..providers.sse import StreamCutShort
from ..trace.model import ModelInput, ModelOutput, StepType, Terminal, Trace, TraceStep
from ..trace.payloads import tool_calls_of
from ..trace.recorder import TraceRecorder
from ..vocabulary import Media
from .concurrency import ConcurrentRecording, Turn, last_call, note_call, tool_steps
from .fields import FieldPolicy
from .jsonvalue import to_json_value
from .recorded import RecordedPair
from .tools import OpenCalls, identical_json
from .wire import WireCall

__all__ = ["INSIDE_TOOL_MESSAGE", "OVERLAP_MESSAGE", "ModelCall", "Recording", "ToolInvocation"]

OVERLAP_MESSAGE = (
    "overlapping model calls are recorded only in record mode, not in a fork or after a replay went live "
    '(on_divergence="record"); await each call before the next in these runs'
)
INSIDE_TOOL_MESSAGE = (
    "a wrapped tool is still running while a model call starts: the call is made inside the tool, and a "
    "replay never runs wrapped tools; make model calls outside the functions you wrap"
)
TOOL_AT_START_MESSAGE = (
    "a wrapped tool is still running while a model call starts; await every tool call before the next "
    "model call, so its steps can be written in order"
)
CLOSED_EARLY_MESSAGE = (
    "the agent stopped reading the streamed answer of model call {number} before it ended: a cassette "
    "holds only whole answers, so a replay could not give the agent the same part of one. Read every "
    "stream to its end (the SDKs' get_final_message(), get_final_completion() and get_final_response() "
    "do), or do not stream that call. Nothing is written for this run."
)
FALLBACK_MESSAGE = (
    "model call {number} failed ({reason}) and the agent's next request differs from it at {path}: a "
    "replay answers a call's first attempt with its recorded answer, so a run that changes its request "
    "after a failure (a fallback to another model, a shorter prompt) cannot be replayed. This request "
    "was not sent; record again when the provider answers the first request."
)
UNANSWERED_MESSAGE = (
    "model call {number} failed ({reason}) and was never retried: a cassette holds only answered calls, "
    "so a replay could not fail it the same way. Nothing was written; record again when the provider "
    "answers."
)
TOOL_AT_RETURN_MESSAGE = (
    "a wrapped tool was still running when a model call returned; await every tool call before the next "
    "model call, so its steps can be written in order"
)


@dataclass
class ToolInvocation:
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

    @classmethod
    def answered(cls, pair: RecordedPair) -> ToolInvocation:
        """A tool call replayed before going live, with its recorded steps' values."""
        result = pair.result["payload"] if pair.result is not None else {}
        return cls(
            pair.call_id,
            pair.name,
            pair.call["payload"].get("toolInput"),
            pair.call["timestamp"],
            ended=pair.result["timestamp"] if pair.result is not None else pair.call["timestamp"],
            outcome={key: result[key] for key in ("result", "error") if key in result},
        )


@dataclass
class ModelCall:
    """A model call being recorded, until its answer arrives."""

    model_input: ModelInput
    started: int
    #: Which model call of the run it is (1, 2, …), for messages.
    number: int = 0
    #: Its place among concurrent conversations, once the run records them.
    turn: Turn | None = None
    #: The index of its ``model_input`` step, once written in a sequential recording.
    step: int | None = None


class Recording:
    """What a recording session has written and what it still holds back.

    ``owner`` stands for the session in context variables; ``fail`` keeps an error as the run's
    first; ``concurrent`` says whether overlapping calls may switch to per-conversation recording
    (only a plain recording: a fork and a replay gone live copy a prefix verbatim); ``redact`` is
    applied to every payload as it is written (before it is hashed); ``media`` says whether media parts
    keep their bytes (``inline``) or only their digest; ``fields`` refuses the response fields no
    protocol table knows, or drops those the run accepts losing.
    """

    def __init__(
        self,
        recorder: TraceRecorder,
        ids: CallIds,
        *,
        clock: Callable[[], int],
        lock: threading.RLock,
        owner: object,
        fail: Callable[[BlackboxError], BlackboxError],
        concurrent: bool,
        redact: Callable[[Any], Any] | None = None,
        media: Media = "digest",
        fields: FieldPolicy | None = None,
    ) -> None:
        self.recorder = recorder
        self.media: Media = media
        self.fields = fields or FieldPolicy()
        self._redact = redact
        self._ids = ids
        self._clock = clock
        self._lock = lock
        self._owner = owner
        self._fail = fail
        self._concurrent = concurrent
        self.tools_running = 0
        self.calls_running = 0
        self._open = OpenCalls()
        self._pending: list[ToolInvocation] = []
        self._calls: list[ModelCall] = []
        self._numbered = 0
        #: Failed calls no later request has retried yet, with why they failed.
        self._failed: list[tuple[ModelCall, str]] = []
        #: Set once wrapped calls overlap: the run is then recorded conversation by conversation.
        self._conversations: ConcurrentRecording | None = None

    @property
    def running(self) -> int:
        """Wrapped calls (model calls and tools) still running."""
        return self.tools_running + self.calls_running

    @property
    def open_calls(self) -> OpenCalls:
        """The calls the last model output requested (in a sequential recording)."""
        return self._open

    def continue_from(
        self, trace: Trace, cut: int, opener: TraceStep | None, claimed: list[RecordedPair]
    ) -> None:
        """Start from a replayed prefix (a ``new_episodes`` replay gone live, a fork at its fork point).

        The cassette's first ``cut`` steps are copied verbatim; ``opener`` is the model output whose
        round is open, and ``claimed`` its calls already answered from the cassette that lie past the
        cut: they are written with their recorded values.
        """
        for step in trace["steps"][:cut]:
            self.recorder.copy_step(step)
        self._ids.seed_past(_call_ids(trace["steps"][:cut]))
        self._open = OpenCalls.of(tool_calls_of(opener["payload"])) if opener is not None else OpenCalls()
        for pair in claimed:
            self.buffer_answered(pair)

    # -- model calls -----------------------------------------------------------------------------

    def overlap(self, inside_tool: bool) -> None:
        """A model call starts while wrapped calls run: refuse it, or record concurrently from now on."""
        if inside_tool:
            raise BlackboxUnsupportedError(INSIDE_TOOL_MESSAGE)
        self._record_concurrently(OVERLAP_MESSAGE if self.calls_running else TOOL_AT_START_MESSAGE)

    def _record_concurrently(self, refusal: str) -> None:
        """Wrapped calls overlap: record conversation by conversation from now on (see ``concurrency``)."""
        if self._conversations is not None:
            return
        if not self._concurrent:
            raise BlackboxUnsupportedError(refusal)
        self._ids.states.go_concurrent()
        conversations = ConcurrentRecording()
        adopted = conversations.adopt(self.recorder.steps, ToolInvocation)
        latest = conversations.latest
        if latest is not conversations.pre:
            latest.calls = self._open
        for pending in self._pending:
            pending.turn = latest
        for call in self._calls:
            call.turn = conversations.begin(call.model_input, call.started, ())
        self._pending = [*adopted, *self._pending]
        self._conversations = conversations

    def record_call(self, wire: WireCall) -> Forward:
        """Send the call upstream; its answer is recorded when it arrives whole (a failure is not)."""
        started = self._clock()
        self._ids.states.live = True  # from now on every request reaches the provider
        model_input = wire.normalize(self._ids, self.fields, self.media)
        self._check_retry(model_input)
        self._numbered += 1
        call = ModelCall(model_input, started, self._numbered)
        if self._conversations is not None:
            call.turn = self._conversations.begin(model_input, started, self._pending)
        self.calls_running += 1
        self._calls.append(call)
        note_call(self._owner, call)

        def on_response(response: UpstreamResponse) -> None:
            with self._lock:
                self.calls_running -= 1
                try:
                    answer = wire.whole_answer(response)
                    if answer is None:
                        status = response.status
                        self._drop_call(call, f"HTTP {status}" if status >= 300 else "an error in its stream")
                        return  # a failed call is not recorded; the agent sees the real error
                    self.fields.check(wire.unknown_fields(response, answer))
                    output = wire.provider.normalize_response(answer, self._ids)
                    if self.tools_running:
                        self._record_concurrently(TOOL_AT_RETURN_MESSAGE)
                except StreamCutShort:
                    self._drop_call(call)
                    self._fail(BlackboxUnsupportedError(CLOSED_EARLY_MESSAGE.format(number=call.number)))
                    return
                except BlackboxError as exc:
                    self._drop_call(call)
                    self._fail(exc)
                    return
                try:
                    self._answer_call(call, output)
                except BlackboxError as exc:  # a redact function that raised: the run fails with it
                    self._fail(exc)

        def on_failure(error: BaseException) -> None:
            with self._lock:
                self.calls_running -= 1  # no answer will come; the SDK sees (and may retry) the error
                self._drop_call(call, type(error).__name__)

        return Forward(on_response, on_failure)

    def _answer_call(self, call: ModelCall, output: ModelOutput) -> None:
        self._calls.remove(call)
        if call.turn is not None and self._conversations is not None:
            self._conversations.answer(call.turn, output, self._clock())
            return
        self.append_turn(call.model_input, call.started, output)
        call.step = len(self.recorder) - 2
        self._ids.states.place(len(self.recorder) - 1)

    def _drop_call(self, call: ModelCall, failure: str | None = None) -> None:
        """Forget a call that got no answer to record; a failure waits for a request that retries it."""
        if call in self._calls:
            self._calls.remove(call)
        if call.turn is not None and self._conversations is not None:
            self._conversations.drop(call.turn)
        if failure is not None:
            self._failed.append((call, failure))

    def _check_retry(self, model_input: ModelInput) -> None:
        """After a failed call, the next request must retry it (the SDK's retry, or the agent's).

        A replay answers the first attempt and never sees the failure, so only the same request
        again keeps the run replayable. A different one is refused before it is sent while the run
        is sequential; with other calls in flight it may be another conversation's, so the failure
        waits (:meth:`unreplayable` reports it at the end if nothing retried it).
        """
        if not self._failed:
            return
        retried = next((f for f in self._failed if identical_json(f[0].model_input, model_input)), None)
        if retried is not None:
            self._failed.remove(retried)
        elif self._conversations is None and not self.calls_running:
            failed, reason = self._failed[-1]
            diff = first_difference(failed.model_input, model_input)
            path = diff.path if diff is not None else "(root)"
            raise BlackboxUnsupportedError(
                FALLBACK_MESSAGE.format(number=failed.number, reason=reason, path=path)
            )

    def unreplayable(self) -> BlackboxError | None:
        """Why the recording cannot be written: a failed call no later request retried."""
        if not self._failed:
            return None
        failed, reason = self._failed[0]
        return BlackboxUnsupportedError(UNANSWERED_MESSAGE.format(number=failed.number, reason=reason))

    def append_turn(self, model_input: ModelInput, started: int, output: ModelOutput) -> None:
        """Write a model call and its answer (after the previous turn's tool steps)."""
        self._flush_tools()
        self.append_step("model_input", model_input, started)
        self.append_step("model_output", output, self._clock())
        self._open = OpenCalls.of(tool_calls_of(output))

    # -- tools -----------------------------------------------------------------------------------

    def _hinted_turn(self) -> Turn | None:
        """The conversation turn of the model call this task or thread made last, if known."""
        call = last_call(self._owner)
        if not isinstance(call, ModelCall) or self._conversations is None:
            return None
        if call.turn is None and call.step is not None:
            call.turn = self._conversations.by_input_step.get(call.step)
        return call.turn

    def start_tool(self, name: str, tool_input: Any) -> ToolInvocation:
        """A wrapped tool starts running: it claims a requested call, or gets a fresh ``call-N``."""
        turn: Turn | None = None
        if self._conversations is not None:
            ref, turn = self._conversations.claim(name, tool_input, self._hinted_turn())
        else:
            ref = self._open.claim(name, tool_input)
        call_id = ref["toolCallId"] if ref is not None else self._ids.fresh()
        pending = ToolInvocation(
            call_id, name, tool_input, self._clock(), requested=ref is not None, turn=turn
        )
        self._pending.append(pending)
        self.tools_running += 1
        return pending

    def buffer_answered(self, pair: RecordedPair) -> None:
        """A call of the open round answered from the cassette: written with its recorded values."""
        self._open.claim(pair.name, pair.call["payload"].get("toolInput"))
        self._pending.append(ToolInvocation.answered(pair))

    def abandon_tool(self, pending: ToolInvocation) -> None:
        """A tool cancelled or interrupted has no result to record: it leaves no steps."""
        self.tools_running -= 1
        self._pending.remove(pending)

    def end_tool(self, pending: ToolInvocation, result: Any, error: str | None) -> Any:
        """The tool returned ``result``, or raised an exception with the (masked) message ``error``."""
        self.tools_running -= 1
        pending.ended = self._clock()
        if error is not None:
            pending.outcome = {"error": error}
            return None
        value = to_json_value(result, f"the result of tool {pending.name}")
        pending.outcome = {"result": value}
        return value

    # -- writing ---------------------------------------------------------------------------------

    def append_step(self, type_: StepType, payload: Any, timestamp: int | float) -> None:
        """Write one step, redacted (every step of a recording is written through here)."""
        self.recorder.append(type_, payload if self._redact is None else self._redact(payload), timestamp)

    def close(
        self, terminal_of: Callable[[list[TraceStep]], Terminal | None]
    ) -> tuple[Trace, Terminal | None]:
        """Write what is buffered, then the terminal step ``terminal_of(steps)`` if any; the trace."""
        self.flush()
        terminal = terminal_of(self.recorder.steps)
        if terminal is not None:
            self.append_step("metadata", terminal, self._clock())
        return self.recorder.trace(), terminal

    def flush(self) -> None:
        """Write what is still buffered: the last round, or every concurrent conversation."""
        conversations, recorder = self._conversations, self.recorder
        if conversations is None:
            self._flush_tools()
            return
        self.recorder = TraceRecorder(recorder.trace_id, recorder.created_at)
        for type_, payload, timestamp in conversations.steps(self._pending):
            self.append_step(type_, payload, timestamp)
        self._pending, self._conversations = [], None

    def _flush_tools(self) -> None:
        """Write the turn's tool steps: requested calls in model order, then unrequested ones."""
        order = {ref["toolCallId"]: i for i, ref in enumerate(c.ref for c in self._open.claims)}
        done = [p for p in self._pending if p.outcome]
        done.sort(key=lambda p: (not p.requested, order.get(p.call_id, len(order))))
        for type_, payload, timestamp in tool_steps(done):
            self.append_step(type_, payload, timestamp)
        self._pending = [p for p in self._pending if not p.outcome]


def _call_ids(steps: list[TraceStep]) -> list[str]:
    ids: list[str] = []
    for step in steps:
        if step["type"] == "model_output":
            ids.extend(ref["toolCallId"] for ref in tool_calls_of(step["payload"]))
        elif step["type"] in ("tool_call", "tool_result") and isinstance(step["payload"], dict):
            ids.append(str(step["payload"].get("toolCallId", "")))
    return ids
