"""The replay cursor: walks a recorded run and says where the agent's run departs from it.

It knows nothing about HTTP or providers: the session hands it neutral requests and tool
invocations, and it answers with recorded steps or raises ``ReplayDivergenceError``. Both match
modes require every recorded step to be consumed and the outcome to match; ``sequence`` only skips
the comparison of request contents.

See docs/engine.md#replay-what-is-compared.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.jsondiff import ABSENT, Difference, first_difference, render_value
from ..analysis.verify import VerifyReport, verify_trace
from ..errors import RecordedToolError, ReplayDivergenceError
from ..trace.errors import CassetteError
from ..trace.io import load_trace, parse_trace
from ..trace.model import Trace, TraceStep
from ..trace.payloads import outcome_of
from .concurrency import AnswerIndex
from .divergence import common_prefix, diverge
from .options import Match
from .rules import MatchRules
from .tools import identity_text, same_json

__all__ = [
    "RecordedPair",
    "RecordedToolError",
    "RecordedTurn",
    "ReplayCursor",
    "describe_outcome",
    "load_cassette",
    "load_verified",
]

REQUEST_HINT = (
    "The agent sent a different request than the one recorded. If the difference comes from something "
    "nondeterministic (a timestamp, a random id), rerun with --match sequence."
)
TOOL_INPUT_HINT = "The agent called the tool with different arguments than it did when recording."
MATCHER_HINT = "Your matcher refused the request (the reason is on the actual line)."
OUTCOME_HINT = (
    "Every model call matched, but the agent ended the run differently: the result or error it passed to "
    "finish() is not the recorded one."
)


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


def load_verified(path: Path, api_keys: Sequence[str] = ()) -> tuple[VerifyReport, Trace | None]:
    """``blackbox verify`` of the cassette at ``path`` and, when every invariant passes, the trace it read.

    A replay that must verify its cassette first (the pytest plugin) gets both from one read: the
    schema, the hash chain, provider neutrality (``api_keys`` as in ``verify_trace``) and
    replayability are checked once, on the very trace the session then replays (hand it to
    ``Session(…, trace=…)``), so the file is neither parsed twice nor read again after its check.
    """
    report = verify_trace(path, api_keys=api_keys, keep_trace=True)
    return report, report.trace if report.ok else None


@dataclass
class RecordedPair:
    """A recorded ``tool_call`` step, its ``tool_result`` step, and whether the agent claimed it."""

    call: TraceStep
    result: TraceStep | None
    claimed: bool = False

    @property
    def name(self) -> str:
        return str(self.call["payload"].get("toolName", ""))

    @property
    def call_id(self) -> str:
        return str(self.call["payload"].get("toolCallId", ""))

    @property
    def tool_input(self) -> Any:
        return self.call["payload"].get("toolInput")

    def answer(self) -> Any:
        """A private copy of the recorded result, or the recorded error raised."""
        payload = self.result["payload"] if self.result is not None else {}
        if "error" in payload:
            raise RecordedToolError(str(payload["error"]))
        return copy.deepcopy(payload.get("result"))


def describe_outcome(payload: Any) -> str:
    """``success, result "A"`` / ``error (agent_error): "boom"`` / ``no outcome (…)``."""
    if not isinstance(payload, dict):
        return "no outcome (the run ended incomplete)"
    if outcome_of(payload).status == "success":
        return f"success, result {render_value(payload.get('result'))}"
    detail = payload.get("message", payload.get("exitCode", payload.get("toolName")))
    suffix = f": {render_value(detail)}" if detail is not None else ""
    return f"error ({payload.get('reason')}){suffix}"


@dataclass(eq=False)
class RecordedTurn:
    """One recorded model call: its ``model_input``, its ``model_output`` and its tool round."""

    number: int
    input: TraceStep
    output: TraceStep | None
    pairs: list[RecordedPair]
    #: The index after the round's last step.
    end: int
    #: The call this one continues in its conversation (``None``: it starts one).
    parent: RecordedTurn | None = None
    children: list[RecordedTurn] = field(default_factory=list)
    consumed: bool = False
    settled: bool = False


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
        self.trace = trace
        self.steps = trace["steps"]
        self.match = match
        self.secrets = secrets
        #: The match rules, if any is set: without them a request is compared exactly as recorded.
        self.rules = rules if rules is not None and rules.active else None
        self._views: dict[RecordedTurn, Any] = {}
        #: Each compared recorded call's ``identity_text``, so a request is encoded once, not twice.
        self._identities: dict[RecordedTurn, str | None] = {}
        #: Whether every model call so far was the first unused one: only then can a replay go live.
        self.in_order = True
        self.last: RecordedTurn | None = None
        self.turns: list[RecordedTurn] = []
        self.stray: list[int] = []
        self._by_input: dict[int, RecordedTurn] = {}
        self._next = 0
        self._furthest: RecordedTurn | None = None
        self._open: dict[RecordedTurn, None] = {}
        self._index: AnswerIndex[RecordedTurn] | None = None
        self._by_text: dict[str, list[RecordedTurn]] | None = None
        self._texts: dict[RecordedTurn, str] = {}
        self.pre, self.pre_end = self._round_at(0)
        self.pre_settled = False
        self._read_turns()

    # -- reading the cassette --------------------------------------------------------------------

    def _end(self) -> int:
        return len(self.steps) - (1 if self.terminal() is not None else 0)

    def _round_at(self, index: int) -> tuple[list[RecordedPair], int]:
        """The tool steps from ``index`` on, paired, and the index after them."""
        pairs: list[RecordedPair] = []
        end = self._end()
        while index < end and self.steps[index]["type"] in ("tool_call", "tool_result"):
            step = self.steps[index]
            if step["type"] == "tool_call":
                pairs.append(RecordedPair(step, None))
            elif pairs and pairs[-1].result is None:
                pairs[-1].result = step
            index += 1
        return pairs, index

    def _read_turns(self) -> None:
        index, end = self.pre_end, self._end()
        while index < end:
            step = self.steps[index]
            if step["type"] != "model_input":
                self.stray.append(index)
                index += 1
                continue
            following = self.steps[index + 1] if index + 1 < end else None
            output = following if following is not None and following["type"] == "model_output" else None
            pairs, after = self._round_at(index + 2) if output is not None else ([], index + 1)
            turn = RecordedTurn(len(self.turns), step, output, pairs, after)
            self.turns.append(turn)
            self._by_input[index] = turn
            index = after

    def _link(self) -> AnswerIndex[RecordedTurn]:
        """Which recorded call each one continues (computed once, when first needed)."""
        if self._index is not None:
            return self._index
        index: AnswerIndex[RecordedTurn] = AnswerIndex()
        for turn in self.turns:
            if turn.output is not None:
                index.add(turn, turn.input["payload"], turn.output["payload"])
        for turn in self.turns:
            found = [t for t in index.continued(turn.input["payload"]) if t is not turn]
            if found:
                turn.parent = min(found, key=lambda t: (bool(t.children), t.number))
                turn.parent.children.append(turn)
        self._index = index
        return index

    # -- rendering -------------------------------------------------------------------------------

    def _diverge(self, index: int, path: str, expected: str, actual: str, hint: str | None = None) -> None:
        """A divergence described in words (values go through :meth:`_diverge_at`)."""
        raise ReplayDivergenceError(index, path, expected, actual, hint)

    def _diverge_at(self, index: int, diff: Difference, hint: str, rules: str | None = None) -> None:
        diverge(index, diff.path, diff.expected, diff.actual, self.secrets, hint, rules)

    # -- comparing -------------------------------------------------------------------------------

    def view(self, actual: Any) -> Any:
        """A request as compared: with the match rules applied, if any is set."""
        return actual if self.rules is None else self.rules.view(actual)

    def _view(self, turn: RecordedTurn) -> Any:
        """A recorded request as compared (computed once per recorded call)."""
        if self.rules is None:
            return turn.input["payload"]
        view = self._views.get(turn)
        if view is None:
            view = self._views[turn] = self.rules.view(turn.input["payload"])
        return view

    def _tool_view(self, name: str, tool_input: Any) -> Any:
        """A wrapped tool's input as compared."""
        return tool_input if self.rules is None else self.rules.tool_view(name, tool_input)

    def _request_differs(self, turn: RecordedTurn, actual: Any, view: Any) -> None:
        """Diverge at the first difference between a request and a recorded call (if they differ)."""
        diff = first_difference(self._view(turn), view, self.secrets)
        if diff is not None:
            applied = self.rules.applied(turn.input["payload"], actual) if self.rules is not None else None
            self._diverge_at(turn.input["index"], diff, REQUEST_HINT, applied)

    def _judge(self, turn: RecordedTurn, actual: Any) -> None:
        """The user's matcher, if set, has the last word on a request that answers a recorded call."""
        if self.rules is None:
            return
        reason = self.rules.judge(turn.input["payload"], actual)
        if reason is not None:
            index = turn.input["index"]
            self._diverge(index, "matcher", "a request the matcher accepts", reason, MATCHER_HINT)

    # -- rounds ----------------------------------------------------------------------------------

    @property
    def round(self) -> list[RecordedPair]:
        """The open round of the last model call used (before the first call: the tools before it)."""
        if self.last is None:
            return [] if self.pre_settled else self.pre
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
            return self.pre_end if self.pre_settled else 0
        return turn.end if turn.settled else turn.input["index"] + 2

    def _settle_pairs(self, pairs: list[RecordedPair]) -> None:
        for pair in pairs:
            if not pair.claimed:
                self._diverge(
                    pair.call["index"],
                    f"tool {pair.name}",
                    f"the agent runs {pair.name} ({pair.call_id})",
                    "the agent moved on without running it",
                )

    def _settle_pre(self) -> None:
        if not self.pre_settled:
            self._settle_pairs(self.pre)
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
        self._link()
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

    def _no_further(self, index: int) -> None:
        self._diverge(
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
        assert turn is not None
        return turn.input

    def compare_request(self, turn: RecordedTurn, actual: Any) -> None:
        """Strict mode: the request must equal the recorded one (the first difference is named); the
        matcher, if set, must accept it in both modes."""
        view = self.view(actual)
        if self.match == "strict" and not self._identical(turn, view):
            self._request_differs(turn, actual, view)
        self._judge(turn, actual)

    def _identical(self, turn: RecordedTurn, view: Any) -> bool:
        """``identical_json`` of a recorded call (as compared) and a request."""
        if turn not in self._identities:
            self._identities[turn] = identity_text(self._view(turn))
        recorded = self._identities[turn]
        return recorded is not None and recorded == identity_text(view)

    def answer(self, actual: Any, *, in_order: bool) -> RecordedTurn:
        """The recorded call that answers this request; its round opens.

        ``in_order`` (a fork, which replays its prefix as recorded): the next recorded call, compared
        in strict mode. Otherwise whichever call :meth:`claim_request` finds.
        """
        if not in_order:
            return self.claim_request(actual)
        turn = self._by_input[self.peek_model_input()["index"]]
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
        checked first). ``sequence``: the unused recorded call that continues the conversation whose
        recorded answer the request carries, or for a request that continues none, the closest unused
        call that starts a conversation (or continues a used one).
        """
        following = self._first_unused()
        view = self.view(actual)
        if self.match == "strict":
            if following is not None and self._identical(following, view):
                turn: RecordedTurn | None = following
            else:
                turn = self._equal_unused(view) or self._closest_or_diverge(actual, view)
        else:
            turn = self._continuation(actual, view)
        assert turn is not None
        self._settle_before(turn)
        self._judge(turn, actual)
        return self._use(turn)

    def _text(self, turn: RecordedTurn) -> str:
        text = self._texts.get(turn)
        if text is None:
            text = self._texts[turn] = _sorted_text(self._view(turn))
        return text

    def _equal_unused(self, view: Any) -> RecordedTurn | None:
        if self._by_text is None:
            self._by_text = {}
            for turn in self.turns:
                self._by_text.setdefault(self._text(turn), []).append(turn)
        wanted = _sorted_text(view)
        return next((t for t in self._by_text.get(wanted, ()) if not t.consumed), None)

    def _candidates(self, actual: Any) -> list[RecordedTurn]:
        """The unused calls this request can stand for: the next ones of its conversation, if it has one."""
        index = self._link()
        exact = self.match == "strict"
        used = [t for t in index.continued(actual, exact=exact) if t.consumed]
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

    def _closest(self, candidates: list[RecordedTurn], view: Any) -> RecordedTurn:
        """The candidate whose request starts with the longest run of the same canonical JSON."""
        if len(candidates) == 1:
            return candidates[0]
        text = _sorted_text(view)
        return max(candidates, key=lambda t: (common_prefix(self._text(t), text), -t.number))

    def _continuation(self, actual: Any, view: Any) -> RecordedTurn:
        return self._closest(self._candidates(actual), view)

    def _closest_or_diverge(self, actual: Any, view: Any) -> RecordedTurn:
        """A request equal to no unused call diverges from the closest one (unless canonically equal)."""
        turn = self._continuation(actual, view)
        self._settle_before(turn)
        self._request_differs(turn, actual, view)
        return turn

    # -- tools -----------------------------------------------------------------------------------

    def claim_tool(self, name: str, tool_input: Any, prefer: int | None = None) -> RecordedPair:
        """The recorded call this invocation stands for, by the same rule as recording.

        Open rounds are searched with the round of ``prefer`` (the model call the invoking task or
        thread made last) first: equal arguments anywhere, then the name alone.
        """
        rounds = [] if self.pre_settled else [self.pre]
        rounds += [t.pairs for t in sorted(self._open, key=lambda t: (t.number != prefer, t.number))]
        unclaimed = [p for pairs in rounds for p in pairs if not p.claimed]
        named = [p for p in unclaimed if p.name == name]
        view = self._tool_view(name, tool_input)
        exact = next((p for p in named if same_json(self._tool_view(name, p.tool_input), view)), None)
        pair = exact or (named[0] if named else None)
        if pair is None:
            preferred = self.turns[prefer] if prefer is not None and 0 <= prefer < len(self.turns) else None
            listed = ", ".join(p.name for p in unclaimed) or "none"
            self._diverge(
                preferred.input["index"] + 2 if preferred is not None and preferred.consumed else self.pos,
                f"tool {name}",
                f"no call to {name} here (open recorded calls: {listed})",
                f"the agent runs {name}",
            )
        assert pair is not None
        if exact is None and self.match == "strict":
            recorded = pair.call["payload"].get("toolInput", ABSENT)
            applied = self.rules.applied(recorded, tool_input, name) if self.rules is not None else None
            diff = Difference(f"tool {name} input", self._tool_view(name, recorded), view)
            self._diverge_at(pair.call["index"], diff, TOOL_INPUT_HINT, applied)
        pair.claimed = True
        return pair

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

    def terminal(self) -> TraceStep | None:
        last = self.steps[-1] if self.steps else None
        return last if last is not None and last["type"] == "metadata" else None

    def finish(self, outcome: Any) -> int:
        """Check that every round ran, every call was used, and the outcome; returns the steps replayed."""
        self.settle()
        unused = [t for t in self.turns if not t.consumed]
        first = min([t.input["index"] for t in unused] + self.stray, default=None)
        if first is not None:
            payload = self.steps[first]["payload"]
            expected = (
                f"{len(unused)} more model call(s)"
                if unused
                else f"the agent runs {payload.get('toolName') if isinstance(payload, dict) else None}"
            )
            self._diverge(first, "end of run", expected, "the agent finished")
        terminal = self.terminal()
        recorded = terminal["payload"] if terminal is not None else None
        if not same_json(recorded, outcome):
            index = terminal["index"] if terminal is not None else len(self.steps)
            self._diverge(
                index, "outcome", describe_outcome(recorded), describe_outcome(outcome), OUTCOME_HINT
            )
        return len(self.steps)


_sorted_text = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode
