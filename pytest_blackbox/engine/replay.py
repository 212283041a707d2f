"""The replay cursor: walks a recorded run and says where the agent's run departs from it.

It knows nothing about HTTP or providers: the session hands it neutral requests and tool
invocations, and it answers with recorded steps or raises ``ReplayDivergenceError``. The recorded
run is read once (``recorded``), and what a match mode requires is asked of one comparison policy
(``comparison``). Both match modes require every recorded step to be consumed and the outcome to
match; ``sequence`` only skips the comparison of request contents.

See docs/engine.md#replay-what-is-compared.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn

from ..analysis.jsondiff import render_value
from ..errors import ReplayDivergenceError
from ..trace.errors import CassetteError
from ..trace.model import Trace, TraceStep
from ..trace.payloads import outcome_of
from ..vocabulary import Match
from .comparison import comparison_for
from .recorded import RecordedPair, RecordedRun, RecordedTurn
from .rules import MatchRules
from .tools import same_json

__all__ = ["ReplayCursor", "describe_outcome"]

OUTCOME_HINT = (
    "Every model call matched, but the agent ended the run differently: the result or error it passed to "
    "finish() is not the recorded one."
)


def describe_outcome(payload: Any) -> str:
    """``success, result "A"`` / ``error (agent_error): "boom"`` / ``no outcome (…)``."""
    if not isinstance(payload, dict):
        return "no outcome (the run ended incomplete)"
    if outcome_of(payload).status == "success":
        return f"success, result {render_value(payload.get('result'))}"
    detail = payload.get("message", payload.get("exitCode", payload.get("toolName")))
    suffix = f": {render_value(detail)}" if detail is not None else ""
    return f"error ({payload.get('reason')}){suffix}"


def _diverge(index: int, path: str, expected: str, actual: str, hint: str | None = None) -> NoReturn:
    """A divergence described in words (values go through ``divergence.diverge``)."""
    raise ReplayDivergenceError(index, path, expected, actual, hint)


class ReplayCursor:
    """What the agent has used of a recorded run: its model calls, and the open tool rounds.

    A sequential run uses the recorded calls in order. A run with concurrent conversations uses them
    in whatever order its requests come: each request is answered by a recorded call it equals
    (``strict``) or by the recorded call that continues the conversation it belongs to
    (``sequence``), and a tool invocation claims a call of any open round.
    """

    def __init__(
        self, trace: Trace, match: Match, secrets: Iterable[str] = (), rules: MatchRules | None = None
    ) -> None:
        self.run = RecordedRun(trace)
        self.trace = trace
        self.steps = self.run.steps
        self.turns = self.run.turns
        self.compare = comparison_for(match, self.run, secrets, rules)
        #: Whether every model call so far was the first unused one: only then can a replay go live.
        self.in_order = True
        self.last: RecordedTurn | None = None
        self.pre_settled = False
        self._next = 0
        self._furthest: RecordedTurn | None = None
        self._open: dict[RecordedTurn, None] = {}

    # -- rounds ----------------------------------------------------------------------------------

    @property
    def round(self) -> list[RecordedPair]:
        """The open round of the last model call used (before the first call: the tools before it)."""
        if self.last is None:
            return [] if self.pre_settled else self.run.pre
        return [] if self.last.settled else self.last.pairs

    @property
    def round_start(self) -> int:
        """Where that round's steps start."""
        return self.last.input["index"] + 2 if self.last is not None else 0

    @property
    def opener(self) -> TraceStep | None:
        """The model output that opened that round (``None`` for the tools before the first call)."""
        return self.steps[self.round_start - 1] if self.round_start > 0 else None

    @property
    def pos(self) -> int:
        """The index after the furthest recorded step used (its round included once settled)."""
        turn = self._furthest
        if turn is None:
            return self.run.pre_end if self.pre_settled else 0
        return turn.end if turn.settled else turn.input["index"] + 2

    def _settle_pairs(self, pairs: list[RecordedPair]) -> None:
        for pair in pairs:
            if not pair.claimed:
                _diverge(
                    pair.call["index"],
                    f"tool {pair.name}",
                    f"the agent runs {pair.name} ({pair.call_id})",
                    "the agent moved on without running it",
                )

    def _settle_pre(self) -> None:
        if not self.pre_settled:
            self._settle_pairs(self.run.pre)
            self.pre_settled = True

    def _settle_turn(self, turn: RecordedTurn) -> None:
        if turn.consumed and not turn.settled:
            self._settle_pairs(turn.pairs)
            turn.settled = True
            self._open.pop(turn, None)

    def settle(self) -> None:
        """Every open round must have run completely, in both match modes."""
        self._settle_pre()
        for turn in sorted(self._open, key=lambda t: t.number):
            self._settle_turn(turn)

    def _settle_before(self, turn: RecordedTurn) -> None:
        """Before a conversation's next model call, its previous round must have run completely."""
        self._settle_pre()
        self.run.link()
        if turn.parent is not None:
            self._settle_turn(turn.parent)

    @property
    def model_calls(self) -> int:
        return len(self.turns)

    # -- model calls -----------------------------------------------------------------------------

    def _first_unused(self) -> RecordedTurn | None:
        while self._next < len(self.turns) and self.turns[self._next].consumed:
            self._next += 1
        return self.turns[self._next] if self._next < len(self.turns) else None

    def _no_further(self, index: int) -> NoReturn:
        _diverge(
            index,
            "model call",
            f"no further model call (the cassette records {self.model_calls})",
            "the agent made another model call",
        )

    def peek_model_input(self) -> TraceStep:
        """The next recorded ``model_input`` in order (after settling every open round)."""
        self.settle()
        turn = self._first_unused()
        if turn is None:
            self._no_further(self.pos)
        return turn.input

    def compare_request(self, turn: RecordedTurn, actual: Any) -> None:
        """Strict mode: the request must equal the recorded one (the first difference is named); the
        matcher, if set, must accept it in both modes."""
        view = self.compare.view(actual)
        self.compare.check_request(turn, actual, view)
        self.compare.judge(turn, actual)
        self.compare.note_request(turn, actual, view)

    def answer(self, actual: Any, *, in_order: bool) -> RecordedTurn:
        """The recorded call that answers this request; its round opens.

        ``in_order`` (a fork, which replays its prefix as recorded): the next recorded call, compared
        in strict mode. Otherwise whichever call :meth:`claim_request` finds.
        """
        if not in_order:
            return self.claim_request(actual)
        turn = self.run.by_input[self.peek_model_input()["index"]]
        self.compare_request(turn, actual)
        return self._use(turn)

    def _use(self, turn: RecordedTurn) -> RecordedTurn:
        if turn.output is None:
            index = turn.input["index"] + 1
            raise CassetteError(
                f"cassette step {index} should be the model output for step {turn.input['index']}",
                step_index=index,
            )
        if turn is not self._first_unused():
            self.in_order = False
        turn.consumed = True
        self.last = turn
        if self._furthest is None or turn.number > self._furthest.number:
            self._furthest = turn
        self._open[turn] = None
        return turn

    def claim_request(self, actual: Any) -> RecordedTurn:
        """The recorded call that answers this request; its conversation's previous round settles first.

        ``strict``: the first unused recorded call equal to the request (a sequential run's next one,
        checked first), else the closest call it could continue, which it diverges from.
        ``sequence``: the unused recorded call that continues the conversation whose recorded answer
        the request carries, or for a request that continues none, the closest unused call that starts
        a conversation (or continues a used one).
        """
        view = self.compare.view(actual)
        turn = self.compare.equal_unused(self._first_unused(), view)
        if turn is None:
            turn = self.compare.closest(self._candidates(actual), view)
            self._settle_before(turn)
            self.compare.check_request(turn, actual, view)
        self._settle_before(turn)
        self.compare.judge(turn, actual)
        self.compare.note_request(turn, actual, view)
        return self._use(turn)

    def _candidates(self, actual: Any) -> list[RecordedTurn]:
        """The unused calls this request can stand for: the next ones of its conversation, if it has one."""
        used = [t for t in self.run.continued(actual, exact=self.compare.exact) if t.consumed]
        if used:
            parent = min(used, key=lambda t: (all(c.consumed for c in t.children), t.number))
            following = [c for c in parent.children if not c.consumed]
            if not following:
                self._settle_turn(parent)
                self._no_further(parent.end)
            return following
        ready = [t for t in self.turns if not t.consumed and (t.parent is None or t.parent.consumed)]
        if not ready:
            if self.in_order:
                self.settle()
            self._no_further(self.pos)
        return ready

    # -- tools -----------------------------------------------------------------------------------

    def claim_tool(self, name: str, tool_input: Any, prefer: int | None = None) -> RecordedPair:
        """The recorded call this invocation stands for, by the same rule as recording.

        Open rounds are searched with the round of ``prefer`` (the model call the invoking task or
        thread made last) first: equal arguments anywhere, then the name alone.
        """
        rounds = [] if self.pre_settled else [self.run.pre]
        rounds += [t.pairs for t in sorted(self._open, key=lambda t: (t.number != prefer, t.number))]
        named = [p for pairs in rounds for p in pairs if not p.claimed and p.name == name]
        view = self.compare.tool_view(name, tool_input)
        exact = next((p for p in named if self.compare.same_tool_input(name, p.tool_input, view)), None)
        pair = exact or (named[0] if named else None)
        if pair is None:
            self._no_tool(name, rounds, prefer)
        if exact is None:
            self.compare.check_tool(pair, name, tool_input, view)
        self.compare.note_tool(pair, name, tool_input, view)
        pair.claimed = True
        return pair

    def _no_tool(self, name: str, rounds: list[list[RecordedPair]], prefer: int | None) -> NoReturn:
        """No open recorded call has this tool's name: the divergence names the open ones."""
        preferred = self.turns[prefer] if prefer is not None and 0 <= prefer < len(self.turns) else None
        listed = ", ".join(p.name for pairs in rounds for p in pairs if not p.claimed) or "none"
        _diverge(
            preferred.input["index"] + 2 if preferred is not None and preferred.consumed else self.pos,
            f"tool {name}",
            f"no call to {name} here (open recorded calls: {listed})",
            f"the agent runs {name}",
        )

    # -- going live (new episodes) ----------------------------------------------------------------

    def live_cut(self) -> tuple[int, list[RecordedPair], TraceStep | None]:
        """Where a recording that continues this replay must start (only for an in-order replay).

        Returns the number of steps to copy verbatim, the tool calls of the open round that the
        agent already ran (answered from the cassette), and the model output that opened the round.
        """
        round_ = self.round
        if not round_:
            return self.pos, [], None
        return self.round_start, [pair for pair in round_ if pair.claimed], self.opener

    # -- the end ---------------------------------------------------------------------------------

    def finish(self, outcome: Any) -> int:
        """Check that every round ran, every call was used, and the outcome; returns the steps replayed."""
        self.compare.check_unedited()
        self.settle()
        unused = [t for t in self.turns if not t.consumed]
        first = min([t.input["index"] for t in unused] + self.run.stray, default=None)
        if first is not None:
            payload = self.steps[first]["payload"]
            expected = (
                f"{len(unused)} more model call(s)"
                if unused
                else f"the agent runs {payload.get('toolName') if isinstance(payload, dict) else None}"
            )
            _diverge(first, "end of run", expected, "the agent finished")
        terminal = self.run.terminal
        recorded = terminal["payload"] if terminal is not None else None
        if not same_json(recorded, outcome):
            index = terminal["index"] if terminal is not None else len(self.steps)
            _diverge(index, "outcome", describe_outcome(recorded), describe_outcome(outcome), OUTCOME_HINT)
        return len(self.steps)
