"""The replay cursor: walks a recorded run and says where the agent's run departs from it.

It knows nothing about HTTP or providers: the session hands it neutral requests and tool
invocations, and it answers with recorded steps or raises ``ReplayDivergenceError``. Both match
modes require every recorded step to be consumed and the outcome to match; ``sequence`` only skips
the comparison of request contents.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .errors import RecordedToolError, ReplayDivergenceError
from .options import Match
from .tools import identical_json, same_json
from .trace.errors import CassetteError
from .trace.jsondiff import ABSENT, first_difference, render_value
from .trace.model import Trace, TraceStep

__all__ = ["RecordedPair", "RecordedToolError", "ReplayCursor", "describe_outcome"]

REQUEST_HINT = (
    "The agent sent a different request than the one recorded. If the difference comes from something "
    "nondeterministic (a timestamp, a random id), rerun with --match sequence."
)
TOOL_INPUT_HINT = "The agent called the tool with different arguments than it did when recording."
OUTCOME_HINT = (
    "Every model call matched, but the agent ended the run differently: the result or error it passed to "
    "finish() is not the recorded one."
)


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
    if payload.get("event") == "run_completed":
        return f"success, result {render_value(payload.get('result'))}"
    detail = payload.get("message", payload.get("exitCode", payload.get("toolName")))
    suffix = f": {render_value(detail)}" if detail is not None else ""
    return f"error ({payload.get('reason')}){suffix}"


class ReplayCursor:
    """Position in the recorded steps plus the current model turn's recorded tool round."""

    def __init__(self, trace: Trace, match: Match, secrets: Iterable[str] = ()) -> None:
        self.trace = trace
        self.steps = trace["steps"]
        self.match = match
        self.secrets = secrets
        self.pos = 0
        self.round_start = 0
        self.round: list[RecordedPair] = []
        self._collect_round()

    # -- rendering -------------------------------------------------------------------------------

    def _render(self, value: Any) -> str:
        return render_value(value, self.secrets)

    def _diverge(self, index: int, path: str, expected: str, actual: str, hint: str | None = None) -> None:
        raise ReplayDivergenceError(index, path, expected, actual, hint)

    # -- rounds ----------------------------------------------------------------------------------

    def _collect_round(self) -> None:
        """Take the tool steps that follow the current position as this turn's round."""
        self.round = []
        self.round_start = self.pos
        index = self.pos
        while index < len(self.steps) and self.steps[index]["type"] in ("tool_call", "tool_result"):
            step = self.steps[index]
            if step["type"] == "tool_call":
                self.round.append(RecordedPair(step, None))
            elif self.round and self.round[-1].result is None:
                self.round[-1].result = step
            index += 1

    def _round_end(self) -> int:
        index = self.pos
        while index < len(self.steps) and self.steps[index]["type"] in ("tool_call", "tool_result"):
            index += 1
        return index

    def settle(self) -> None:
        """Every recorded tool of the turn must have run, in both match modes."""
        for pair in self.round:
            if not pair.claimed:
                self._diverge(
                    pair.call["index"],
                    f"tool {pair.name}",
                    f"the agent runs {pair.name} ({pair.call_id})",
                    "the agent moved on without running it",
                )
        self.pos = self._round_end()
        self.round = []

    @property
    def model_calls(self) -> int:
        return sum(1 for step in self.steps if step["type"] == "model_input")

    # -- model calls -----------------------------------------------------------------------------

    def peek_model_input(self) -> TraceStep:
        """The recorded ``model_input`` the next request must match (after settling the round)."""
        self.settle()
        step = self.steps[self.pos] if self.pos < len(self.steps) else None
        if step is None or step["type"] != "model_input":
            self._diverge(
                self.pos,
                "model call",
                f"no further model call (the cassette records {self.model_calls})",
                "the agent made another model call",
            )
        assert step is not None
        return step

    def compare_request(self, recorded: TraceStep, actual: Any) -> None:
        """Strict mode: the normalized request must equal the recorded one (the first difference is named)."""
        if self.match != "strict" or identical_json(recorded["payload"], actual):
            return
        diff = first_difference(recorded["payload"], actual)
        if diff is not None:
            self._diverge(
                recorded["index"],
                diff.path,
                self._render(diff.expected),
                self._render(diff.actual),
                REQUEST_HINT,
            )

    def take_model_output(self, recorded_input: TraceStep) -> TraceStep:
        """Consume the matched ``model_input`` and its ``model_output``; open the next round."""
        index = recorded_input["index"] + 1
        step = self.steps[index] if index < len(self.steps) else None
        if step is None or step["type"] != "model_output":
            raise CassetteError(
                f"cassette step {index} should be the model output for step {recorded_input['index']}",
                step_index=index,
            )
        self.pos = index + 1
        self._collect_round()
        return step

    # -- tools -----------------------------------------------------------------------------------

    def claim_tool(self, name: str, tool_input: Any) -> RecordedPair:
        """The recorded call this invocation stands for, by the same rule as recording."""
        named = [pair for pair in self.round if not pair.claimed and pair.name == name]
        exact = next((p for p in named if same_json(p.call["payload"].get("toolInput"), tool_input)), None)
        pair = exact or (named[0] if named else None)
        if pair is None:
            recorded = [p.name for p in self.round if not p.claimed]
            self._diverge(
                self.pos,
                f"tool {name}",
                f"no call to {name} here (open recorded calls: {', '.join(recorded) or 'none'})",
                f"the agent runs {name}",
            )
        assert pair is not None
        if exact is None and self.match == "strict":
            self._diverge(
                pair.call["index"],
                f"tool {name} input",
                self._render(pair.call["payload"].get("toolInput", ABSENT)),
                self._render(tool_input),
                TOOL_INPUT_HINT,
            )
        pair.claimed = True
        return pair

    # -- going live (new episodes) ----------------------------------------------------------------

    def live_cut(self) -> tuple[int, list[RecordedPair], TraceStep | None]:
        """Where a recording that continues this replay must start.

        Returns the number of steps to copy verbatim, the tool calls of the open round that the
        agent already ran (answered from the cassette), and the model output that opened the round.
        """
        if not self.round:
            return self.pos, [], None
        opener = self.steps[self.round_start - 1] if self.round_start > 0 else None
        claimed = [pair for pair in self.round if pair.claimed]
        return self.round_start, claimed, opener

    # -- the end ---------------------------------------------------------------------------------

    def terminal(self) -> TraceStep | None:
        last = self.steps[-1] if self.steps else None
        return last if last is not None and last["type"] == "metadata" else None

    def finish(self, outcome: Any) -> int:
        """Check consumption and outcome; returns the number of replayed steps."""
        self.settle()
        terminal = self.terminal()
        end = len(self.steps) - (1 if terminal is not None else 0)
        if self.pos < end:
            remaining = [s for s in self.steps[self.pos : end] if s["type"] == "model_input"]
            expected = (
                f"{len(remaining)} more model call(s)"
                if remaining
                else f"the agent runs {self.steps[self.pos]['payload'].get('toolName')}"
            )
            self._diverge(self.pos, "end of run", expected, "the agent finished")
        recorded = terminal["payload"] if terminal is not None else None
        if not same_json(recorded, outcome):
            index = terminal["index"] if terminal is not None else len(self.steps)
            self._diverge(
                index, "outcome", describe_outcome(recorded), describe_outcome(outcome), OUTCOME_HINT
            )
        return len(self.steps)
