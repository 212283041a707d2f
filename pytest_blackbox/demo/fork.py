"""``fork_run``: branch a recorded demo run at one step, change one fact, and run the demo loop on.

It shares only the lineage rules (``parentId``, ``forkedFromStepId``, a prefix whose hashes match
the parent's) with the session fork of a user's own agent, which lives with the session because only
the session sees the agent's calls. See docs/fork-demo-import.md#the-demo-fork.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..engine import to_json_value
from ..errors import BlackboxUnsupportedError, ForkError
from ..trace.canonical import step_hash
from ..trace.model import Trace, TraceStep
from ..trace.payloads import tool_calls_of
from ..trace.recorder import TraceRecorder
from .agent import (
    DEMO_MAX_STEPS,
    Clock,
    DemoModel,
    DemoTools,
    FixtureTools,
    ReactiveDemoModel,
    run_agent_loop,
    wall_clock,
)

__all__ = ["ForkResult", "fork_run", "next_call_index"]

_CALL_ID = re.compile(r"call-(\d+)")


@dataclass(frozen=True)
class ForkResult:
    """The child run, its final answer (``None`` if it failed) and how many steps it shares unchanged."""

    child_trace: Trace
    final_answer: str | None
    prefix_length: int


def fork_run(
    parent_trace: Trace,
    fork_index: int,
    child_id: str,
    prompt_mutation: str | None = None,
    tool_result_mutations: Mapping[int, Any] | None = None,
    *,
    model: DemoModel | None = None,
    tools: DemoTools | None = None,
    max_steps: int = DEMO_MAX_STEPS,
    clock: Clock = wall_clock,
) -> ForkResult:
    """Fork ``parent_trace`` at ``fork_index`` and continue it with the demo agent loop.

    Steps before the earliest change are copied with their parent hashes (under the child's ids); a
    changed ``tool_result`` and the steps after it up to ``fork_index`` are re-appended with their
    original timestamps, so the first divergence is the earliest mutation (or ``fork_index`` when
    nothing is mutated). ``prompt_mutation`` starts the continuation fresh from a new prompt;
    ``tool_result_mutations`` (step index → new ``result``) rebuilds the history with the new values.
    ``prefix_length`` counts the steps copied unchanged.
    """
    steps = list(parent_trace["steps"])
    mutations = dict(tool_result_mutations or {})
    _check_fork_point(steps, fork_index)
    if prompt_mutation is not None and mutations:
        raise ForkError(
            "fork_run: pass prompt_mutation or tool_result_mutations, not both; a prompt fork starts "
            "the conversation afresh, a tool-result fork keeps it"
        )
    earliest = _check_mutations(steps, fork_index, mutations)
    recorder = TraceRecorder(
        child_id, clock(), parent_id=parent_trace["id"], forked_from_step_id=steps[fork_index]["id"]
    )
    for step in steps[:earliest]:
        _copy_unchanged(recorder, step)
    for step in steps[earliest:fork_index]:
        payload = _mutated(step, mutations[step["index"]]) if step["index"] in mutations else step["payload"]
        recorder.append(step["type"], copy.deepcopy(payload), step["timestamp"])
    prefix = recorder.steps
    if mutations:
        messages = _rebuild_history(prefix, fork_index)
    else:
        messages = [{"role": "user", "content": _prompt(steps, prompt_mutation)}]
    final_answer = run_agent_loop(
        recorder,
        messages,
        model=model if model is not None else ReactiveDemoModel(),
        tools=tools if tools is not None else FixtureTools(),
        clock=clock,
        max_steps=max_steps,
        next_call_index=next_call_index(prefix),
    )
    return ForkResult(recorder.trace(), final_answer, earliest)


def _check_fork_point(steps: list[TraceStep], fork_index: int) -> None:
    if isinstance(fork_index, bool) or not isinstance(fork_index, int) or not 0 <= fork_index < len(steps):
        raise ForkError(f"fork_run: fork_index {fork_index} out of range — parent has {len(steps)} step(s)")
    if steps[fork_index]["type"] == "metadata":
        raise ForkError(
            f"fork_run: step {fork_index} is a metadata step, which ends a run and cannot be forked; "
            "fork at a model_input, model_output, tool_call or tool_result step"
        )


def _check_mutations(steps: list[TraceStep], fork_index: int, mutations: dict[int, Any]) -> int:
    """Validate every mutation and return where the child first differs from the parent."""
    for index in mutations:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < fork_index:
            raise ForkError(
                f"fork_run: a tool result mutation at step {index} must come before the fork point "
                f"(step {fork_index})"
            )
        if steps[index]["type"] != "tool_result" or not isinstance(steps[index]["payload"], dict):
            raise ForkError(
                f"fork_run: step {index} is a {steps[index]['type']} step; tool_result_mutations can "
                f"only replace tool results (this cassette has tool results at {_tool_result_indexes(steps)})"
            )
        try:
            mutations[index] = to_json_value(mutations[index], f"the tool result mutation for step {index}")
        except BlackboxUnsupportedError as exc:
            raise ForkError(f"fork_run: {exc}") from None
    earliest = min(mutations, default=fork_index)
    stale = [i for i in range(earliest, fork_index) if steps[i]["type"] == "model_input"]
    if stale:
        raise ForkError(
            f"fork_run: step {stale[0]} is a model_input between the mutated step {earliest} and the fork "
            f"point {fork_index}, and it would still show the old result; fork at step {stale[0]} or earlier"
        )
    return earliest


def _tool_result_indexes(steps: list[TraceStep]) -> str:
    found = [str(s["index"]) for s in steps if s["type"] == "tool_result"]
    return ", ".join(found) if found else "no step"


def _copy_unchanged(recorder: TraceRecorder, step: TraceStep) -> None:
    """Copy a parent step under the child's id; its hash must come out identical."""
    expected = step_hash(step["index"], step["type"], step["timestamp"], step["payload"], step["prevHash"])
    if step["hash"] != expected or step["prevHash"] != recorder.last_hash:
        raise ForkError(
            f"fork_run: the parent's step {step['index']} does not match its hash chain; run "
            "`blackbox verify` on the parent and fork a cassette that passes"
        )
    recorder.append(step["type"], copy.deepcopy(step["payload"]), step["timestamp"])


def _mutated(step: TraceStep, result: Any) -> dict[str, Any]:
    """The new ``tool_result`` payload: same call, new ``result`` (an original ``error`` is dropped)."""
    payload = step["payload"]
    return {"toolName": payload.get("toolName"), "result": result, "toolCallId": payload.get("toolCallId")}


def _prompt(steps: list[TraceStep], prompt_mutation: str | None) -> str:
    if prompt_mutation is not None:
        return prompt_mutation
    for step in steps:
        if step["type"] == "model_input" and isinstance(step["payload"], dict):
            for message in step["payload"].get("messages") or []:
                is_user = isinstance(message, dict) and message.get("role") == "user"
                if is_user and isinstance(message.get("content"), str):
                    return str(message["content"])
    raise ForkError("fork_run: the parent has no user prompt to start from; pass prompt_mutation")


def _rebuild_history(prefix: list[TraceStep], fork_index: int) -> list[dict[str, Any]]:
    """The conversation at the fork point: the last ``model_input`` plus each tool round after it.

    The mutation check guarantees that last ``model_input`` predates every mutation, so the rounds
    replayed on top of it carry the new values.
    """
    inputs = [s for s in prefix if s["type"] == "model_input" and isinstance(s["payload"], dict)]
    if not inputs:
        raise ForkError(
            f"fork_run: there is no model_input before step {fork_index} to rebuild the conversation from"
        )
    base = inputs[-1]
    messages: list[dict[str, Any]] = copy.deepcopy(list(base["payload"].get("messages") or []))
    later = prefix[base["index"] + 1 :]
    results = {
        s["payload"].get("toolCallId"): s["payload"]
        for s in later
        if s["type"] == "tool_result" and isinstance(s["payload"], dict)
    }
    for step in later:
        if step["type"] == "model_output":
            messages.extend(_round_messages(step["payload"], results))
    return messages


def _round_messages(output: Any, results: dict[Any, dict[str, Any]]) -> list[dict[str, Any]]:
    """One tool round as an assistant turn and a user turn; calls without a result are left out."""
    calls = [call for call in tool_calls_of(output) if call["toolCallId"] in results]
    if not calls:
        return []
    assistant: list[dict[str, Any]] = []
    text = output.get("text") if output.get("type") == "tool_calls" else None
    if isinstance(text, str) and text:
        assistant.append({"type": "text", "text": text})
    user: list[dict[str, Any]] = []
    for call in calls:
        assistant.append({"type": "tool_use", **copy.deepcopy(call)})
        result = results[call["toolCallId"]]
        part: dict[str, Any] = {
            "type": "tool_result",
            "toolCallId": call["toolCallId"],
            "toolName": call["toolName"],
        }
        if "result" in result:
            part["result"] = copy.deepcopy(result["result"])
        else:
            part["error"] = result.get("error")
        user.append(part)
    return [{"role": "assistant", "content": assistant}, {"role": "user", "content": user}]


def next_call_index(steps: list[TraceStep]) -> int:
    """One past the highest ``call-N`` in ``steps``, so a continuation never reuses an id."""
    highest = -1
    for step in steps:
        payload = step["payload"]
        ids: list[Any] = [call["toolCallId"] for call in tool_calls_of(payload)]
        if step["type"] in ("tool_call", "tool_result") and isinstance(payload, dict):
            ids.append(payload.get("toolCallId"))
        for call_id in ids:
            match = _CALL_ID.fullmatch(call_id) if isinstance(call_id, str) else None
            if match:
                highest = max(highest, int(match.group(1)))
    return highest + 1
