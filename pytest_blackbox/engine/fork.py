"""The session fork: re-run the user's own agent on a cassette, swap in one tool result, and run on.

``blackbox fork <cassette> --at N --set JSON --out F (--live | --script R) -- <command>`` starts a
session in ``fork`` mode. Up to the fork point it is a replay (strict or ``sequence``). When the agent
invokes the tool whose recorded ``tool_result`` is step N, the session switches to recording by the
same mechanism a ``new_episodes`` replay uses: steps ``0…N-1`` are copied verbatim (ids, timestamps
and hashes), and step N is the replacement result, with the parent's step-N timestamp. From there,
wrapped tools run for real and model calls go to the live API or take the next reply of a script.

This module holds what a fork adds to a session: the checks (all made before anything runs, so the
CLI makes them too), the script, and the bookkeeping of the fork point's tool round. The session
calls it from a few hooks.

See docs/fork-demo-import.md#the-session-fork-what-if-a-tool-had-answered-differently.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import providers
from ..analysis.jsondiff import render_value
from ..errors import BlackboxUnsupportedError, BlackboxUsageError, ForkError, ReplayDivergenceError
from ..providers.common import final_answer, tool_calls_output
from ..trace.errors import CassetteError
from ..trace.io import load_trace, parse_json, read_text, same_file
from ..trace.model import ModelOutput, ToolCallRef, Trace, TraceStep
from ..trace.recorder import TraceRecorder
from ..vocabulary import Match
from .comparison import TOOL_INPUT_HINT
from .options import Continue, SessionOptions, resolve_options
from .recorded import RecordedPair
from .recording import Recording
from .tools import Answered, OpenCalls, same_json

__all__ = [
    "SCRIPT_SHAPE",
    "SessionFork",
    "check_fork_outputs",
    "fork_options_for",
    "parse_script",
    "read_fork_set",
]

#: What a script file holds; every script error repeats it (and never quotes the file).
SCRIPT_SHAPE = (
    'a JSON array of model outputs, e.g. [{"type":"final_answer","text":"Done."}] or '
    '[{"type":"tool_calls","calls":[{"toolName":"search","toolInput":{}}],"text":"Searching."}]'
)
SET_EXAMPLES = "e.g. --set '{\"available\": false}' or --set @result.json"
THINKING_MESSAGE = (
    "fork --live with extended thinking is not supported yet (cassettes leave thinking blocks out, and "
    "the API requires them on tool-use turns); continue the fork with a script instead"
)
_ENTRY_KEYS = {"final_answer": {"type", "text"}, "tool_calls": {"type", "text", "calls"}}
_CALL_KEYS = {"toolName", "toolInput"}


# -- the replacement and the script ------------------------------------------------------------


def _reason(error: CassetteError) -> str:
    """The position part of a JSON error (``Expecting value at line 1, column 4``); never content."""
    return str(error).split(": ", 1)[-1]


def read_fork_set(value: str) -> Any:
    """The ``--set`` value: JSON text, or ``@file`` holding it."""
    text = value
    if value.startswith("@"):
        text = read_text(value[1:], subject="--set file", error=BlackboxUsageError)
    try:
        return parse_json(text)
    except CassetteError as exc:
        where = f"the file {value[1:]}" if value.startswith("@") else "the value"
        raise BlackboxUsageError(
            f"--set must be JSON (the replacement tool result), {SET_EXAMPLES}; {where} is not: "
            + _reason(exc)
        ) from None


def _call_problem(call: Any, at: str) -> str | None:
    if not isinstance(call, dict):
        return f"{at} must be an object"
    if set(call) - _CALL_KEYS:
        return f"{at} may hold only toolName and toolInput"
    if not isinstance(call.get("toolName"), str) or not call["toolName"]:
        return f"{at}.toolName must be a non-empty string"
    return None


def _entry_problem(entry: Any, at: str) -> str | None:
    if not isinstance(entry, dict):
        return f"{at} must be an object"
    kind = entry.get("type")
    if kind not in _ENTRY_KEYS:
        return f'{at}.type must be "final_answer" or "tool_calls"'
    if set(entry) - _ENTRY_KEYS[kind]:
        return f"{at} may hold only {', '.join(sorted(_ENTRY_KEYS[kind]))}"
    if (kind == "final_answer" or "text" in entry) and not isinstance(entry.get("text"), str):
        return f"{at}.text must be a string"
    if kind == "final_answer":
        return None
    calls = entry.get("calls")
    if not isinstance(calls, list) or not calls:
        return f"{at}.calls must be a non-empty array"
    return next(
        (problem for i, call in enumerate(calls) if (problem := _call_problem(call, f"{at}.calls[{i}]"))),
        None,
    )


def parse_script(text: str, where: str) -> list[dict[str, Any]]:
    """The scripted model outputs of a script file's text, checked entry by entry."""
    try:
        value = parse_json(text)
    except CassetteError as exc:
        raise ForkError(
            f"the fork script {where} is not valid JSON ({_reason(exc)}); it must be {SCRIPT_SHAPE}"
        ) from None
    if not isinstance(value, list):
        raise ForkError(f"the fork script {where} must be {SCRIPT_SHAPE}; it is not an array")
    for index, entry in enumerate(value):
        problem = _entry_problem(entry, f"[{index}]")
        if problem is not None:
            raise ForkError(f"the fork script {where} must be {SCRIPT_SHAPE}; {problem}")
    return value


def _read_script(path: Path) -> list[dict[str, Any]]:
    return parse_script(read_text(str(path), subject="fork script", error=ForkError), str(path))


# -- the checks --------------------------------------------------------------------------------


def check_fork_outputs(options: SessionOptions) -> None:
    """The output checks: the fork writes neither over its parent nor over its script."""
    out, cassette = options.out, options.cassette
    if out is None:
        raise BlackboxUsageError("fork mode needs an output path (out / BLACKBOX_OUT; --out F)")
    if cassette is not None and same_file(out, cassette):
        raise ForkError(
            f"fork refuses to write its output over the cassette it forks: {out} is the same file as "
            f"{cassette}; choose another out path"
        )
    if options.continue_with == "script" and options.script is not None and same_file(out, options.script):
        raise ForkError(
            f"fork refuses to write its output over its script: {out} is the same file as "
            f"{options.script}; --out must differ from --script"
        )


def _tool_results(steps: list[TraceStep]) -> str:
    found = [str(step["index"]) for step in steps if step["type"] == "tool_result"]
    if not found:
        return (
            ". This cassette has no tool results: wrap your tools with blackbox.tools({...}) when recording"
        )
    return f" (this cassette has tool results at {', '.join(found)})"


def _check_fork_step(steps: list[TraceStep], at: int) -> None:
    if at >= len(steps):
        raise ForkError(
            f"step {at} is past the end of the cassette ({len(steps)} steps); fork at a tool_result step"
            + _tool_results(steps)
        )
    step = steps[at]
    if step["type"] != "tool_result":
        raise ForkError(
            f"step {at} is a {step['type']} step; fork at a tool_result step" + _tool_results(steps)
        )
    payload = step["payload"]
    if not isinstance(payload, dict) or ("result" not in payload and "error" not in payload):
        raise ForkError(f"step {at} has no recorded result to replace")


def _recorded_at(pair: RecordedPair) -> int:
    """Where a recorded call sits: its result's step, or its call's when it has no result."""
    return (pair.result or pair.call)["index"]


# -- the fork ----------------------------------------------------------------------------------


@dataclass
class SessionFork:
    """One session's fork: what to replace, how to go on, and the fork point's round once reached."""

    parent: Trace
    at: int
    replacement: Any
    continue_with: Continue
    script: list[dict[str, Any]]
    child_id: str
    match: Match
    secrets: set[str] = field(default_factory=set)
    #: Calls of the fork point's round recorded before N that the agent has not run yet: still
    #: answered from the cassette (their steps are in the copied prefix).
    served: list[RecordedPair] = field(default_factory=list)
    replies: int = 0
    reached: bool = False

    @classmethod
    def prepare(cls, options: SessionOptions, secrets: set[str] | None = None) -> SessionFork:
        """Make every check of a fork, in the original Blackbox's order, before anything runs."""
        if options.cassette is None:
            raise BlackboxUsageError("fork mode needs a cassette to fork (cassette / BLACKBOX_CASSETTE)")
        if options.fork_at is None:
            raise BlackboxUsageError("fork mode needs a fork step (fork_at / BLACKBOX_FORK_AT; --at N)")
        if not options.has_fork_set:
            raise BlackboxUsageError(
                "fork mode needs a replacement result (fork_set / BLACKBOX_FORK_SET; --set JSON)"
            )
        check_fork_outputs(options)
        if options.continue_with is None:
            raise BlackboxUsageError(
                'fork mode needs to know how to continue after the fork point: "live" (your real API client) '
                'or "script" (recorded replies from a file); pass --live or --script R'
            )
        if options.continue_with == "script" and options.script is None:
            raise BlackboxUsageError(
                "a fork that continues with a script needs the script file (script / BLACKBOX_SCRIPT; "
                "--script R)"
            )
        parent = load_trace(options.cassette)
        _check_fork_step(parent["steps"], options.fork_at)
        script = _read_script(options.script) if options.continue_with == "script" and options.script else []
        return cls(
            parent=parent,
            at=options.fork_at,
            replacement=options.fork_set,
            continue_with=options.continue_with,
            script=script,
            child_id=options.resolved_trace_id,
            match=options.match,
            secrets=secrets if secrets is not None else set(),
        )

    @property
    def scripted(self) -> bool:
        return self.continue_with == "script"

    @property
    def fork_step(self) -> TraceStep:
        return self.parent["steps"][self.at]

    # -- reaching the fork point ---------------------------------------------------------------

    def is_fork_point(self, pair: RecordedPair) -> bool:
        """Whether this claimed call is the one whose recorded result is step N."""
        return pair.result is not None and pair.result["index"] == self.at

    def reach(self, round_: list[RecordedPair], pair: RecordedPair) -> list[RecordedPair]:
        """Split the fork point's round; returns the calls already answered that were recorded after N.

        Those are written after step N, with their recorded values, as a ``new_episodes`` replay
        writes the calls it answered before going live. Calls recorded before N that the agent has not
        run yet stay answered from the cassette.
        """
        self.reached = True
        self.served = [p for p in round_ if not p.claimed and _recorded_at(p) < self.at]
        return [p for p in round_ if p.claimed and p is not pair and _recorded_at(p) > self.at]

    def before_point(self, round_: list[RecordedPair], pair: RecordedPair) -> list[RecordedPair]:
        """The round's calls whose steps the copied prefix holds, and the fork point's own call."""
        return [p for p in round_ if p is pair or _recorded_at(p) < self.at]

    def new_recorder(self) -> TraceRecorder:
        """The child's recorder: named after the out file, created when the parent was, linked to it."""
        return TraceRecorder(
            self.child_id,
            self.parent["createdAt"],
            parent_id=self.parent["id"],
            forked_from_step_id=self.fork_step["id"],
        )

    def replacement_step(self) -> tuple[dict[str, Any], int | float]:
        """Step N's payload (same call, the new result; a recorded error is dropped) and timestamp."""
        recorded = self.fork_step["payload"]
        payload = {
            "toolCallId": recorded.get("toolCallId"),
            "toolName": recorded.get("toolName"),
            "result": copy.deepcopy(self.replacement),
        }
        return payload, self.fork_step["timestamp"]

    def replacement_value(self) -> Any:
        """What the agent receives instead of the recorded result: a private copy."""
        return copy.deepcopy(self.replacement)

    # -- after the fork point ------------------------------------------------------------------

    def write_fork_point(self, recording: Recording, round_: list[RecordedPair], pair: RecordedPair) -> Any:
        """Step N in the child, right after the copied prefix; returns what the agent receives instead.

        The round's calls whose steps the prefix holds (and the fork point's own) are claimed, so a
        requested call is never claimed twice.
        """
        for done in self.before_point(round_, pair):
            recording.open_calls.claim(done.name, done.call["payload"].get("toolInput"))
        payload, timestamp = self.replacement_step()
        recording.append_step("tool_result", payload, timestamp)
        return self.replacement_value()

    def serve(self, name: str, tool_input: Any, open_calls: OpenCalls) -> Answered | None:
        """After N: a sibling recorded before N answers from the cassette (``None``: run for real)."""
        served = self.claim_served(name, tool_input, open_calls)
        return None if served is None else Answered(served.answer())

    def claim_served(self, name: str, tool_input: Any, open_calls: OpenCalls) -> RecordedPair | None:
        """The sibling recorded before N this invocation stands for, or ``None`` if it runs for real.

        The matching rule is the recording's: a call with equal arguments first (an open call recorded
        after N included), then the first one with that name; strict mode compares the arguments.
        """
        named = [p for p in self.served if not p.claimed and p.name == name]
        exact = next((p for p in named if same_json(p.call["payload"].get("toolInput"), tool_input)), None)
        if exact is None:
            for claim in open_calls.claims:
                ref = claim.ref
                if not claim.claimed and ref["toolName"] == name and same_json(ref["toolInput"], tool_input):
                    return None
        pair = exact or (named[0] if named else None)
        if pair is None:
            return None
        if exact is None and self.match == "strict":
            raise ReplayDivergenceError(
                pair.call["index"],
                f"tool {name} input",
                render_value(pair.call["payload"].get("toolInput"), self.secrets),
                render_value(tool_input, self.secrets),
                TOOL_INPUT_HINT,
            )
        pair.claimed = True
        return pair

    def before_model_call(self, provider: providers.Provider, body: Any) -> None:
        """Refusals a model call meets in a fork, before anything is answered or sent."""
        if self.continue_with == "live" and provider.NAME == "anthropic" and _thinking_on(body):
            raise BlackboxUnsupportedError(THINKING_MESSAGE)
        if self.reached:
            self._check_served()

    def _check_served(self) -> None:
        for pair in self.served:
            if not pair.claimed:
                raise ReplayDivergenceError(
                    pair.call["index"],
                    f"tool {pair.name}",
                    f"the agent runs {pair.name} ({pair.call_id}) before the fork point, as recorded",
                    "the agent moved on without running it",
                )

    def check_end(self) -> None:
        """At the end of the run: the fork point was reached and its round ran as recorded."""
        if not self.reached:
            raise ForkError(
                f"the run ended before reaching the fork point (step {self.at}); the agent never invoked "
                f"the tool whose result step {self.at} records"
            )
        self._check_served()

    def next_output(self, ids: providers.CallIds) -> ModelOutput:
        """The next scripted reply as a ``model_output`` payload; its calls get fresh ``call-N`` ids."""
        if self.replies >= len(self.script):
            raise ForkError(
                f"the fork script ran out after {len(self.script)} response(s); add more model outputs to it "
                "or continue with --live"
            )
        entry = self.script[self.replies]
        self.replies += 1
        text = entry.get("text", "")
        if entry["type"] == "final_answer":
            return final_answer(text, None)
        calls: list[ToolCallRef] = [
            {
                "toolCallId": ids.fresh(),
                "toolName": call["toolName"],
                "toolInput": copy.deepcopy(call.get("toolInput", {})),
            }
            for call in entry["calls"]
        ]
        return tool_calls_output(calls, text, None)


def _thinking_on(body: Any) -> bool:
    thinking = body.get("thinking") if isinstance(body, dict) else None
    return isinstance(thinking, dict) and thinking.get("type") != "disabled"


def fork_options_for(cassette: Path, env: Mapping[str, str]) -> SessionOptions | None:
    """The fork settings the launcher put in ``env``, if they fork this cassette; else ``None``.

    ``blackbox fork <cassette> … -- pytest …`` runs a whole pytest process; only the test whose
    cassette is the forked one runs as the fork, the others as usual.
    """
    if env.get("BLACKBOX_MODE") != "fork" or not env.get("BLACKBOX_CASSETTE"):
        return None
    if Path(env["BLACKBOX_CASSETTE"]).resolve() != cassette.resolve():
        return None
    return resolve_options(env=env)
