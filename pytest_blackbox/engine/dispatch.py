"""Where a run's calls are answered from, by mode (docs/engine.md): the recording (``record``), the
replay cursor (``replay``) or the fork (``fork``), and the switch from replaying to recording when a
``new_episodes`` replay diverges or a fork passes its fork point.

The session owns the lifecycle, the lock and the run's kept error, and calls in here under its lock;
this holds only the per-mode state, so the rules of each mode read in one place.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .. import providers
from ..errors import BlackboxError, BlackboxUsageError, ReplayDivergenceError
from ..interception import Forward, ModelRequest, OtherRequest, Reply
from ..trace.model import Terminal, Trace, TraceStep
from ..trace.recorder import TraceRecorder
from ..vocabulary import UNSET
from .bodies import BodyParser
from .cassettes import load_cassette
from .concurrency import inside_tool, last_call, note_call
from .ending import RunReport, cassette_out, check_replay, write_cassette
from .fields import FieldPolicy
from .fork import SessionFork
from .keys import KnownKeys
from .observed import ModelCall, model_calls_of
from .options import SessionOptions
from .recorded import RecordedPair
from .recording import Recording, ToolInvocation
from .replay import ReplayCursor
from .rules import Redactor
from .tools import Answered
from .wire import (
    WireCall,
    offline_error,
    reaches_allowed_host,
    refuse_placeholder,
    side_call_error,
    unseen_call_error,
    warn_unreplayable,
)

__all__ = ["Dispatch"]


class Dispatch:
    """A run's per-mode state; ``mode`` becomes ``record`` once a replay goes live or a fork passes its
    fork point (``went_live_at`` is where a ``new_episodes`` replay did)."""

    def __init__(
        self,
        options: SessionOptions,
        checked: Trace | None,
        *,
        secrets: KnownKeys,
        redactor: Redactor | None,
        clock: Callable[[], int],
        lock: threading.RLock,
        owner: object,
        fail: Callable[[BlackboxError], BlackboxError],
    ) -> None:
        """``checked``: a replay's cassette, already read and checked; without it, a replay reads and
        checks ``options.cassette``. ``owner`` stands for the session in context variables, ``fail``
        keeps the run's first error."""
        self.options = options
        self.mode = options.mode
        self._ids = providers.CallIds()
        self._bodies = BodyParser()
        self._secrets = secrets
        self._redactor = redactor
        self._clock = clock
        self._lock = lock
        self._owner = owner
        self._fail = fail
        #: The unknown request and response fields this run refuses or accepts losing.
        self._fields = FieldPolicy(options.drop_fields)
        self.recording: Recording | None = None
        self.cursor: ReplayCursor | None = None
        self.fork: SessionFork | None = None
        self.went_live_at: int | None = None
        if self.mode == "record":
            if options.out is None:
                raise BlackboxUsageError("record mode needs an output path (out / BLACKBOX_OUT)")
            self.recording = self._new_recording(TraceRecorder(options.resolved_trace_id, clock()))
        elif self.mode == "replay":
            if options.cassette is None:
                raise BlackboxUsageError("replay mode needs a cassette (cassette / BLACKBOX_CASSETTE)")
            trace = checked if checked is not None else load_cassette(options.cassette)
            self.cursor = self._new_cursor(trace)
        elif self.mode == "fork":
            self.fork = SessionFork.prepare(options, secrets)
            self.cursor = self._new_cursor(self.fork.parent)

    def _new_cursor(self, trace: Trace) -> ReplayCursor:
        return ReplayCursor(trace, self.options.match, self._secrets, self.options.match_rules)

    def _new_recording(self, recorder: TraceRecorder) -> Recording:
        return Recording(
            recorder,
            self._ids,
            clock=self._clock,
            lock=self._lock,
            owner=self._owner,
            fail=self._fail,
            concurrent=self.options.mode == "record",
            redact=self.redacted if self._redactor is not None else None,
            media=self.options.media,
            fields=self._fields,
        )

    def redacted(self, value: Any) -> Any:
        """A value as a cassette holds it (what a replay compares a live value with)."""
        return value if self._redactor is None else self._redactor.value(value)

    @property
    def running(self) -> int:
        """How many wrapped calls are still running."""
        return self.recording.running if self.recording is not None else 0

    def model_calls(self) -> list[ModelCall]:
        """The model calls so far: recorded, or the recorded ones a replay used."""
        if self.recording is not None:
            return model_calls_of(self.recording.recorder.steps)
        if self.cursor is not None:
            used = [t for t in self.cursor.turns if t.consumed and t.output is not None]
            return [ModelCall(t.input["payload"], t.output["payload"]) for t in used if t.output]
        return []

    # -- model calls -----------------------------------------------------------------------------

    def answer_model(self, request: ModelRequest) -> Reply | Forward:
        """A model call's answer: from the cassette, the fork's script, or the provider (recorded)."""
        if self.recording is not None and self.recording.running:
            self.recording.overlap(inside_tool(self._owner))
        call = WireCall.of(request, self._bodies)
        if self.fork is not None:
            self.fork.before_model_call(call.provider, call.body)
        if self.mode in ("replay", "fork"):
            try:
                return self._replay_call(call)
            except ReplayDivergenceError as exc:
                self._go_live_or_raise(exc)
        assert self.recording is not None
        if self.fork is not None and self.fork.scripted:
            return self._script_call(call, self.recording)
        refuse_placeholder(request, call.provider.NAME, self._secrets)
        return self.recording.record_call(call)

    def _replay_call(self, call: WireCall) -> Reply:
        assert self.cursor is not None
        model_input = self.redacted(call.normalize(self._ids, self._fields, recording=False))
        turn = self.cursor.answer(model_input, in_order=self.fork is not None)  # a fork: as recorded
        note_call(self._owner, turn.number)
        assert turn.output is not None
        self._ids.register_identity(*turn.handed_out)
        return call.reply(model_input, turn.output)

    def _script_call(self, call: WireCall, recording: Recording) -> Reply:
        """Past a scripted fork's fork point: the next scripted reply, recorded like a live answer."""
        assert self.fork is not None
        started = self._clock()
        model_input = call.normalize(self._ids, recording.fields, recording.media)
        recording.append_turn(model_input, started, self.fork.next_output(self._ids))
        return call.reply(model_input, recording.recorder.steps[-1])

    def answer_other(self, request: OtherRequest, mask: Callable[[str], str]) -> Forward:
        """Not a model call: sent to loopback or an allowed host; otherwise recorded runs warn (a replay
        could not send it) and offline runs refuse it (raised, for the session to keep). An SDK side
        call, or a call to a model API no protocol records, is refused outside wrapped tools."""
        mode = self.options.mode
        refused = side_call_error(mode, request, mask) or unseen_call_error(mode, request, mask)
        if refused is not None and not (self.mode == "record" and inside_tool(self._owner)):
            raise refused
        if reaches_allowed_host(request, self.options.allowed_hosts):
            return Forward()
        if self.mode == "record" and not (self.fork is not None and self.fork.scripted):
            if not inside_tool(self._owner):  # a wrapped tool's requests never happen in a replay
                warn_unreplayable(request, mask)
            return Forward()
        raise offline_error(self.options.mode, request, mask)

    def _go_live_or_raise(self, divergence: ReplayDivergenceError) -> None:
        """In a ``new_episodes`` replay, a divergence switches to recording; otherwise it stands.

        Only a replay that used the recorded model calls in order can go live: the steps before the
        divergence are then a prefix of the cassette, copied verbatim (same ids and hashes).
        """
        cursor = self.cursor
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
        assert self.cursor is not None
        recording = self.recording = self._new_recording(recorder)
        recording.continue_from(self.cursor.trace, cut, opener, claimed)
        self.cursor = None
        self.mode = "record"
        return recording

    # -- tools -----------------------------------------------------------------------------------

    def begin_tool(self, name: str, tool_input: Any) -> Answered | ToolInvocation:
        """A wrapped tool's call: answered from the cassette (replay, a fork before its fork point) or
        registered as a real run (record)."""
        if self.cursor is not None:
            tool_input = self.redacted(tool_input)  # compared as the cassette holds it
        if self.mode == "replay":
            assert self.cursor is not None
            hint = last_call(self._owner)
            try:
                pair = self.cursor.claim_tool(name, tool_input, hint if isinstance(hint, int) else None)
                return Answered(pair.answer())
            except ReplayDivergenceError as exc:
                self._go_live_or_raise(exc)
        answered = self._fork_tool(name, tool_input) if self.fork is not None else None
        if answered is not None:
            return answered
        assert self.recording is not None
        return self.recording.start_tool(name, tool_input)

    def _fork_tool(self, name: str, tool_input: Any) -> Answered | None:
        """A fork answers from the cassette before its fork point, swaps in the new result at it, and
        after it still answers the calls of that round recorded before it (``None``: run for real)."""
        fork, cursor = self.fork, self.cursor
        assert fork is not None
        if cursor is None:
            assert self.recording is not None
            return fork.serve(name, tool_input, self.recording.open_calls)
        pair = cursor.claim_tool(name, tool_input)
        if not fork.is_fork_point(pair):
            return Answered(pair.answer())
        round_, opener = cursor.round, cursor.opener  # copy steps 0…N-1, write step N, record on
        recording = self._continue_recording(fork.new_recorder(), fork.at, opener, fork.reach(round_, pair))
        return Answered(fork.write_fork_point(recording, round_, pair))

    # -- ending ----------------------------------------------------------------------------------

    def close(
        self,
        terminal_of: Callable[[list[TraceStep]], Terminal | None],
        mask: Callable[[str], str],
        result: Any = UNSET,
        error: Any = UNSET,
    ) -> RunReport:
        """Check the replay (one gone live at its end is written), or write the recording ending with
        the terminal step ``terminal_of(steps)``."""
        if self.mode == "replay":
            assert self.cursor is not None
            try:
                return check_replay(self.cursor, self.options.cassette, result, error, mask, self.redacted)
            except ReplayDivergenceError as exc:
                try:
                    self._go_live_or_raise(exc)
                except ReplayDivergenceError:
                    raise self._fail(exc) from None
        assert self.recording is not None
        return write_cassette(
            self.recording,
            cassette_out(self.options),
            terminal_of,
            mode="fork" if self.fork is not None else "record",  # a fork records from its fork point on
            secrets=self._secrets,
            mask=mask,
            keep=self._fail,
        )
