"""Concurrent conversations: recording agents that run several model conversations at once.

A sequential run is written in the order things happen. When two wrapped calls of a session overlap
(``asyncio.gather`` over model calls, threads), the order they happen in depends on scheduling, so
from then on the session records *per conversation* and writes the cassette at the end in an order
that depends only on what was said:

- a **conversation** is a chain of model calls in which each request carries the previous call's
  answer (its tool calls by id, or its text) after that call's own messages;
- each model call keeps its tool round: the wrapped-tool invocations that claimed its calls (an
  invocation claims an open call of any conversation by name and canonical arguments, preferring the
  conversation whose model call the same task or thread made last);
- at the end the conversations are written one after another, each in causal order, sorted by the
  canonical JSON of their calls with ``call-N`` ids numbered locally; then ``call-N`` ids are
  renumbered in the written order, in every place they occur.

The agent never sees a ``call-N`` id while recording (the provider's own ids reach it), so renumbering
at the end is safe. A replay hands out the renumbered ids, and the requests carry them back.

See docs/engine.md#concurrent-conversations.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from ..errors import BlackboxUnsupportedError
from ..trace.model import StepType, ToolCallRef
from ..trace.payloads import model_output_text, tool_calls_of
from .tools import OpenCalls, same_json

__all__ = [
    "AnswerIndex",
    "ConcurrentRecording",
    "PendingTool",
    "Turn",
    "inside_tool",
    "last_call",
    "note_call",
    "running_tool",
    "tool_steps",
]

T = TypeVar("T")

# -- which task or thread did what ----------------------------------------------------------------

#: ``(session token, call)``: the model call the current task or thread made last. asyncio tasks and
#: threads each see their own value, so a tool invocation can be tied to its conversation.
_LAST_CALL: ContextVar[tuple[object, Any] | None] = ContextVar("blackbox_last_call", default=None)
#: Session tokens whose wrapped tool is running in the current task or thread.
_IN_TOOL: ContextVar[tuple[object, ...]] = ContextVar("blackbox_in_tool", default=())


def note_call(owner: object, call: Any) -> None:
    """Remember ``call`` as the model call this task or thread made last, for session ``owner``."""
    _LAST_CALL.set((owner, call))


def last_call(owner: object) -> Any:
    """The call :func:`note_call` remembered here for ``owner``, or ``None``."""
    noted = _LAST_CALL.get()
    return noted[1] if noted is not None and noted[0] is owner else None


@contextlib.contextmanager
def running_tool(owner: object) -> Iterator[None]:
    """Mark the current task or thread as running a wrapped tool of session ``owner``."""
    token = _IN_TOOL.set((*_IN_TOOL.get(), owner))
    try:
        yield
    finally:
        _IN_TOOL.reset(token)


def inside_tool(owner: object) -> bool:
    """Whether a wrapped tool of ``owner`` is running in the current task or thread."""
    return owner in _IN_TOOL.get()


# -- which call a request continues ----------------------------------------------------------------


def _messages_of(model_input: Any) -> list[Any]:
    messages = model_input.get("messages") if isinstance(model_input, dict) else None
    return messages if isinstance(messages, list) else []


def _history_answer(message: Any) -> tuple[frozenset[str], str] | None:
    """``(tool call ids, text)`` of an assistant message in a request's history; ``None`` otherwise."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    content = message.get("content")
    if isinstance(content, str):
        return frozenset(), content
    if not isinstance(content, list):
        return frozenset(), ""
    parts = [part for part in content if isinstance(part, dict)]
    ids = frozenset(
        part["toolCallId"]
        for part in parts
        if part.get("type") == "tool_use" and isinstance(part.get("toolCallId"), str)
    )
    text = "".join(p["text"] for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str))
    return ids, text


class AnswerIndex(Generic[T]):
    """Model calls by the answer they gave, to tell which call a request continues.

    A request continues a call when its history holds that call's answer: the same tool call ids
    (unique in a run, so they are enough wherever they appear), or, for an answer without tool calls,
    the same text right after the call's own messages, which the request must start with.
    """

    def __init__(self) -> None:
        self._by_ids: dict[frozenset[str], list[tuple[T, list[Any]]]] = {}
        self._by_text: dict[tuple[int, str], list[tuple[T, list[Any]]]] = {}

    def add(self, item: T, model_input: Any, output: Any) -> None:
        messages = _messages_of(model_input)
        ids = frozenset(ref["toolCallId"] for ref in tool_calls_of(output))
        if ids:
            self._by_ids.setdefault(ids, []).append((item, messages))
        else:
            key = (len(messages), model_output_text(output) or "")
            self._by_text.setdefault(key, []).append((item, messages))

    def continued(self, model_input: Any, *, exact: bool = True) -> list[T]:
        """The calls whose answer is the latest one ``model_input``'s history carries (none: a new start).

        ``exact=False`` skips checking that the request starts with the call's own messages (the
        ``sequence`` replay, where the agent's own words may differ between runs).
        """
        messages = _messages_of(model_input)
        for position in range(len(messages) - 1, -1, -1):
            answer = _history_answer(messages[position])
            if answer is None:
                continue
            ids, text = answer
            if ids:
                found = [item for item, _ in self._by_ids.get(ids, ())]
            else:
                entries = self._by_text.get((position, text), ())
                found = [item for item, before in entries if not exact or before == messages[:position]]
            if found:
                return found
        return []


# -- recording ------------------------------------------------------------------------------------


class PendingTool(Protocol):
    """A wrapped-tool invocation as the session buffers it."""

    call_id: str
    name: str
    tool_input: Any
    started: int | float
    ended: int | float
    outcome: dict[str, Any]
    requested: bool
    turn: Any


@dataclass(eq=False)
class Turn:
    """One model call of a concurrent recording, with its answer and its place in a conversation."""

    number: int
    model_input: Any
    started: int | float
    parent: Turn | None = None
    output: Any = None
    ended: int | float = 0
    answered: bool = False
    calls: OpenCalls = field(default_factory=OpenCalls)
    children: list[Turn] = field(default_factory=list)


StepSpec = tuple[StepType, Any, "int | float"]
P = TypeVar("P", bound=PendingTool)


class ConcurrentRecording:
    """The model calls and tool rounds of a run whose conversations overlap, written at the end."""

    def __init__(self) -> None:
        #: Tools that ran before the first model call (a round without a model call).
        self.pre = Turn(-1, None, 0, answered=True)
        self.turns: list[Turn] = []
        #: Turns adopted from the sequential recording, by the index of their ``model_input`` step.
        self.by_input_step: dict[int, Turn] = {}
        self._index: AnswerIndex[Turn] = AnswerIndex()
        #: Answered turns whose conversation has not made its next model call: their calls can be claimed.
        self._open: dict[Turn, None] = {self.pre: None}
        self._count = 0

    # -- adopting what was recorded before the overlap ---------------------------------------------

    def adopt(self, steps: Sequence[Any], make_tool: Callable[..., P]) -> list[P]:
        """Take over the steps recorded in order so far; returns their tool invocations, completed.

        The last turn's round stays open; the session hands over its open calls and unwritten tools.
        """
        tools: list[P] = []
        current = self.pre
        for step in steps:
            kind, payload, timestamp = step["type"], step["payload"], step["timestamp"]
            if kind == "model_input":
                current = self.begin(payload, timestamp, ())
                self.by_input_step[step["index"]] = current
            elif kind == "model_output":
                self.answer(current, payload, timestamp)
            elif kind == "tool_call":
                claims = current.calls.claims
                ref = next((c for c in claims if c.ref["toolCallId"] == payload["toolCallId"]), None)
                if ref is not None:
                    ref.claimed = True
                tool = make_tool(
                    payload["toolCallId"], payload["toolName"], payload.get("toolInput"), timestamp
                )
                tool.requested, tool.turn = ref is not None, current
                tools.append(tool)
            elif kind == "tool_result" and tools:
                tools[-1].ended = timestamp
                tools[-1].outcome = {key: payload[key] for key in ("result", "error") if key in payload}
        return tools

    @property
    def latest(self) -> Turn:
        """The turn whose round a sequential recording would write next (the pre-round if none)."""
        return self.turns[-1] if self.turns else self.pre

    # -- model calls -------------------------------------------------------------------------------

    def begin(self, model_input: Any, started: int | float, tools: Iterable[PendingTool]) -> Turn:
        """A model call starts: find the conversation it continues, which closes that round."""
        parent = self._parent_of(model_input)
        if parent is not None:
            running = sorted({t.name for t in tools if t.turn is parent and not t.outcome})
            if running:
                raise BlackboxUnsupportedError(
                    f"a wrapped tool ({', '.join(running)}) is still running while its conversation's next "
                    "model call starts; await every tool call of a model turn before that conversation's "
                    "next model call"
                )
        self._count += 1
        turn = Turn(self._count, model_input, started, parent)
        if parent is not None:
            parent.children.append(turn)
            self._open.pop(parent, None)
        self._open.pop(self.pre, None)
        self.turns.append(turn)
        return turn

    def _parent_of(self, model_input: Any) -> Turn | None:
        found = [t for t in self._index.continued(model_input) if t.answered]
        if not found:
            return None
        return min(found, key=lambda t: (bool(t.children), t.number))

    def answer(self, turn: Turn, output: Any, ended: int | float) -> None:
        """The call's whole answer arrived: its tool calls can now be claimed."""
        turn.output, turn.ended, turn.answered = output, ended, True
        turn.calls = OpenCalls.of(tool_calls_of(output))
        self._index.add(turn, turn.model_input, output)
        self._open[turn] = None

    def drop(self, turn: Turn) -> None:
        """A failed call is not recorded; its conversation's previous round opens again."""
        if turn in self.turns:
            self.turns.remove(turn)
        parent = turn.parent
        if parent is not None and turn in parent.children:
            parent.children.remove(turn)
            if not parent.children:
                self._open[parent] = None

    # -- tools -------------------------------------------------------------------------------------

    def claim(self, name: str, tool_input: Any, hint: Turn | None) -> tuple[ToolCallRef | None, Turn | None]:
        """The open call an invocation stands for, and the turn whose round it joins.

        Equal arguments win over the name alone, and the hinted turn (the caller's own conversation)
        over the others. An invocation no model call asked for joins the hinted turn's round if it is
        open, else it is written after every conversation.
        """
        order = list(self._open)
        if hint is not None and hint in self._open:
            order.remove(hint)
            order.insert(0, hint)
        for exact in (True, False):
            for turn in order:
                for claim in turn.calls.claims:
                    ref = claim.ref
                    if claim.claimed or ref["toolName"] != name:
                        continue
                    if exact and not same_json(ref["toolInput"], tool_input):
                        continue
                    claim.claimed = True
                    return ref, turn
        return None, hint if hint is not None and hint in self._open else None

    # -- writing -----------------------------------------------------------------------------------

    def steps(self, tools: Sequence[PendingTool]) -> list[StepSpec]:
        """Every step to write, in the canonical order, with ``call-N`` ids renumbered."""
        rounds: dict[Turn | None, list[PendingTool]] = {}
        for tool in tools:
            if tool.outcome:
                rounds.setdefault(tool.turn, []).append(tool)
        answered = [t for t in self.turns if t.answered]
        for turn in (self.pre, *answered):
            rounds[turn] = _round_order(turn, rounds.get(turn, []))
        trailing = sorted(rounds.get(None, []), key=_tool_key)
        written: list[StepSpec] = tool_steps(rounds[self.pre])
        for conversation in _conversations(answered, rounds):
            for turn in conversation:
                written.append(("model_input", turn.model_input, turn.started))
                written.append(("model_output", turn.output, turn.ended))
                written.extend(tool_steps(rounds[turn]))
        written.extend(tool_steps(trailing))
        return renumber(written)


def _round_order(turn: Turn, tools: list[PendingTool]) -> list[PendingTool]:
    """Requested calls in the model's order, then the unrequested ones in a canonical order."""
    order = {claim.ref["toolCallId"]: i for i, claim in enumerate(turn.calls.claims)}
    requested = sorted((t for t in tools if t.requested), key=lambda t: order.get(t.call_id, len(order)))
    return requested + sorted((t for t in tools if not t.requested), key=_tool_key)


def _tool_key(tool: PendingTool) -> str:
    return _dumps([tool.name, tool.tool_input, tool.outcome])


def tool_steps(tools: Iterable[PendingTool]) -> list[StepSpec]:
    """The ``tool_call`` and ``tool_result`` steps of finished invocations, each call then its result."""
    steps: list[StepSpec] = []
    for tool in tools:
        call = {"toolCallId": tool.call_id, "toolName": tool.name, "toolInput": tool.tool_input}
        steps.append(("tool_call", call, tool.started))
        result = {"toolCallId": tool.call_id, "toolName": tool.name, **tool.outcome}
        steps.append(("tool_result", result, tool.ended))
    return steps


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _conversations(answered: list[Turn], rounds: dict[Turn | None, list[PendingTool]]) -> list[list[Turn]]:
    """Chains of turns, each continuing its predecessor, sorted by their content.

    Where several calls continue one turn (the agent branched its history), the branch whose chain
    sorts first continues the conversation and the others start conversations of their own; so the
    split does not depend on which branch happened first either.
    """
    keys = {turn: _turn_key(turn, rounds[turn]) for turn in answered}
    children = {turn: [c for c in turn.children if c.answered] for turn in answered}
    follow: dict[Turn, Turn] = {}

    def chain(start: Turn) -> list[Turn]:
        turns = [start]
        while turns[-1] in follow:
            turns.append(follow[turns[-1]])
        return turns

    for turn in reversed(answered):  # a continuation always starts after the turn it continues
        options = children[turn]
        if len(options) == 1:
            follow[turn] = options[0]
        elif options:
            follow[turn] = min(options, key=lambda c: [keys[t] for t in chain(c)])
    continuing = set(follow.values())
    chains = [chain(t) for t in answered if t not in continuing]
    return sorted(chains, key=lambda turns: [keys[t] for t in turns])


def _turn_key(turn: Turn, tools: list[PendingTool]) -> str:
    """The turn's content as canonical JSON, its ``call-N`` ids numbered from 0 in order of appearance."""
    specs: list[StepSpec] = [("model_input", turn.model_input, 0), ("model_output", turn.output, 0)]
    return _dumps([[kind, payload] for kind, payload, _ in renumber([*specs, *tool_steps(tools)])])


# -- renumbering ----------------------------------------------------------------------------------


def renumber(steps: list[StepSpec]) -> list[StepSpec]:
    """Copies of the steps with ``call-N`` ids numbered from 0 in order of first appearance.

    Ids are only where the format puts them: message parts, model output calls and tool steps; a
    tool's own data that happens to hold a ``toolCallId`` key is left alone.
    """
    mapping: dict[str, str] = {}

    def rename(old: Any) -> Any:
        if not isinstance(old, str):
            return old
        if old not in mapping:
            mapping[old] = f"call-{len(mapping)}"
        return mapping[old]

    return [(kind, _renamed(kind, payload, rename), timestamp) for kind, payload, timestamp in steps]


def _renamed(kind: str, payload: Any, rename: Callable[[Any], Any]) -> Any:
    payload = copy.deepcopy(payload)
    if not isinstance(payload, dict):
        return payload
    if kind == "model_input":
        for message in _messages_of(payload):
            content = message.get("content") if isinstance(message, dict) else None
            for part in content if isinstance(content, list) else ():
                if isinstance(part, dict) and part.get("type") in ("tool_use", "tool_result"):
                    _rename_id(part, rename)
    elif kind == "model_output":
        if payload.get("type") == "tool_call":
            _rename_id(payload, rename)
        calls = payload.get("calls") if payload.get("type") == "tool_calls" else None
        for call in calls if isinstance(calls, list) else ():
            _rename_id(call, rename)
    else:
        _rename_id(payload, rename)
    return payload


def _rename_id(item: Any, rename: Callable[[Any], Any]) -> None:
    if isinstance(item, dict) and "toolCallId" in item:
        item["toolCallId"] = rename(item["toolCallId"])
