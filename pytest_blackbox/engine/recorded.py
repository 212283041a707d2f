"""A recorded run as a replay walks it: its model calls (turns), their tool rounds (pairs), and which
call each one continues in its conversation. Built once per replayed cassette; the replay cursor
(``replay``) marks what the agent has used of it.

See docs/engine.md#replay-what-is-compared.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

from ..errors import RecordedToolError
from ..trace.errors import CassetteError
from ..trace.media import without_bytes
from ..trace.model import Trace, TraceStep
from ..trace.payloads import ToolRounds, choice_calls_of
from .concurrency import AnswerIndex

__all__ = ["RecordedPair", "RecordedRun", "RecordedTurn", "note_media_free"]


@dataclass(slots=True)
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
        return _private_copy(payload.get("result"))


def _private_copy(value: Any) -> Any:
    """A copy of a value read from a cassette, whose objects and arrays the agent may change.

    A cassette holds plain JSON with safe integers only (its loader refuses anything else), so only
    its objects and arrays are copied, and only they are walked into.
    """
    kind = type(value)
    if kind is dict:
        return {
            key: _private_copy(item) if type(item) in _CONTAINERS else item for key, item in value.items()
        }
    if kind is list:
        return [_private_copy(item) if type(item) in _CONTAINERS else item for item in value]
    return value


_CONTAINERS: Final = (dict, list)


@dataclass(eq=False, slots=True)
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
    #: The recorded requests of every run read from the same steps, by ``model_input`` index.
    _requests: dict[int, Any] = field(default_factory=dict, repr=False)
    #: What ``handed_out`` gives, for every run read from the same steps, by ``model_input`` index.
    _handed: dict[int, HandedOut] = field(default_factory=dict, repr=False)

    @property
    def request(self) -> Any:
        """The recorded request as a replay compares it: the ``model_input`` payload, its media
        parts without their bytes (an inline cassette is compared by digest like any other).
        Computed once per cassette: the runs that replay it share the same object."""
        index = self.input["index"]
        request = self._requests.get(index)
        if request is None:
            payload = self.input["payload"]
            media = self._requests.get(_HOLDS_MEDIA, True)
            request = self._requests[index] = without_bytes(payload) if media else payload
        return request

    @property
    def handed_out(self) -> HandedOut:
        """The call ids a replay of this call hands the agent (its output's and every other choice's),
        and each one's tool name. Computed once per cassette: the runs that replay it share them."""
        index = self.input["index"]
        handed = self._handed.get(index)
        if handed is None:
            refs = choice_calls_of(self.output["payload"]) if self.output is not None else []
            ids = [ref["toolCallId"] for ref in refs]
            handed = self._handed[index] = (ids, {ref["toolCallId"]: ref["toolName"] for ref in refs})
        return handed


#: Call ids a replayed output hands out, and their tool names by id.
HandedOut = tuple[list[str], dict[str, str]]


class RecordedRun:
    """The steps of a cassette read as a replay uses them (their layout is read once per cassette).

    ``pre`` are the tool calls before the first model call; each turn holds its model call and the
    tool round that follows it; ``stray`` are the indexes of steps that belong to no turn (a replay
    that ends without using them diverges there). The links between turns (:meth:`link`) are only
    computed when a replay needs them (a run with concurrent conversations).
    """

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.steps = trace["steps"]
        shape = _shape(self.steps)
        refused = shape.problem
        if refused is not None:
            raise CassetteError(
                f"step {refused[0]}: {refused[1]}; this cassette's tool rounds disagree with its model "
                "output, so it cannot be replayed (record it again)",
                step_index=refused[0],
            )
        layout = shape.layout
        #: The terminal ``metadata`` step (the recorded outcome), if the run has one.
        self.terminal = layout.terminal
        self.end = layout.end
        self.pre, self.pre_end = _pairs(layout.pre), layout.pre_end
        self.stray: list[int] = list(layout.stray)
        self.turns: list[RecordedTurn] = []
        #: Each turn by the index of its ``model_input`` step.
        self.by_input: dict[int, RecordedTurn] = {}
        for index, output, round_, after in layout.turns:
            step = self.steps[index]
            turn = RecordedTurn(
                len(self.turns),
                step,
                output,
                _pairs(round_),
                after,
                _requests=shape.requests,
                _handed=shape.handed,
            )
            self.turns.append(turn)
            self.by_input[index] = turn
        self._linked = False

    def link(self) -> None:
        """Link each recorded call to the one it continues (when first needed; see :class:`_Shape`)."""
        if self._linked:
            return
        for turn, parent in zip(self.turns, _shape(self.steps).links(self.turns).parents, strict=True):
            if parent is not None:
                turn.parent = self.turns[parent]
                turn.parent.children.append(turn)
        self._linked = True

    def continued(self, model_input: Any, *, exact: bool = True) -> list[RecordedTurn]:
        """The recorded calls whose answer is the latest one ``model_input``'s history carries
        (``AnswerIndex.continued``)."""
        self.link()
        index = _shape(self.steps).links(self.turns).index
        return [self.turns[number] for number in index.continued(model_input, exact=exact)]


#: A round's tool calls as its steps give them: each ``tool_call`` step and its ``tool_result`` step
#: (``None``: it has none).
_Round = list[tuple[TraceStep, "TraceStep | None"]]


def _pairs(round_: _Round) -> list[RecordedPair]:
    return [RecordedPair(call, result) for call, result in round_]


@dataclass(frozen=True)
class _Layout:
    """Where a cassette's steps put its turns and rounds, the same for every replay of it."""

    #: The terminal ``metadata`` step, if the run has one, and the index of the step after the others.
    terminal: TraceStep | None
    end: int
    #: The tool calls before the first model call, and the index after them.
    pre: _Round
    pre_end: int
    #: Each model call: its ``model_input`` index, its ``model_output`` step (``None``: missing), its
    #: round, and the index after the round.
    turns: list[tuple[int, TraceStep | None, _Round, int]]
    #: The indexes of steps that belong to no turn.
    stray: list[int]

    @classmethod
    def of(cls, steps: list[TraceStep]) -> _Layout:
        last = steps[-1] if steps else None
        terminal = last if last is not None and last["type"] == "metadata" else None
        end = len(steps) - (1 if terminal is not None else 0)
        pre, index = _round_at(steps, 0, end)
        layout = cls(terminal, end, pre, index, [], [])
        while index < end:
            step = steps[index]
            if step["type"] != "model_input":
                layout.stray.append(index)
                index += 1
                continue
            following = steps[index + 1] if index + 1 < end else None
            output = following if following is not None and following["type"] == "model_output" else None
            round_, after = _round_at(steps, index + 2, end) if output is not None else ([], index + 1)
            layout.turns.append((index, output, round_, after))
            index = after
        return layout


def _round_at(steps: list[TraceStep], index: int, end: int) -> tuple[_Round, int]:
    """The tool steps from ``index`` on, paired, and the index after them."""
    round_: _Round = []
    while index < end and steps[index]["type"] in ("tool_call", "tool_result"):
        step = steps[index]
        if step["type"] == "tool_call":
            round_.append((step, None))
        elif round_ and round_[-1][1] is None:
            round_[-1] = (round_[-1][0], step)
        index += 1
    return round_, index


@dataclass
class _Links:
    """Which recorded call each one continues (by number), and the calls by the answer they gave."""

    index: AnswerIndex[int]
    parents: list[int | None]


class _Shape:
    """What the structure of a cassette's steps says, the same for every replay of it: whether its
    tool rounds agree with its model output, and (computed when first needed) its calls' links.

    Kept per steps list (``_shape``): a cassette's loaders share one trace between the sessions
    that replay it, which never edit it.
    """

    def __init__(self, steps: list[TraceStep]) -> None:
        self.problem = ToolRounds.of(steps).problem
        self.layout = _Layout.of(steps)
        self._links: _Links | None = None
        #: Each recorded call's request as compared (``RecordedTurn.request``), by ``model_input`` index.
        self.requests: dict[int, Any] = {}
        #: Each recorded call's ``RecordedTurn.handed_out``, by ``model_input`` index.
        self.handed: dict[int, HandedOut] = {}

    def links(self, turns: list[RecordedTurn]) -> _Links:
        """The links of ``turns`` (a run read from these steps; any run's turns give the same)."""
        if self._links is None:
            index: AnswerIndex[int] = AnswerIndex()
            for turn in turns:
                if turn.output is not None:
                    index.add(turn.number, turn.request, turn.output["payload"])
            parents: list[int | None] = []
            children: set[int] = set()
            for turn in turns:
                found = [n for n in index.continued(turn.request) if n != turn.number]
                parent = min(found, key=lambda n: (n in children, n)) if found else None
                if parent is not None:
                    children.add(parent)
                parents.append(parent)
            self._links = _Links(index, parents)
        return self._links


def note_media_free(trace: Trace, text: str) -> None:
    """Note that the cassette text ``trace`` was read from holds no media part, when its text shows it
    (a media part's ``"media"`` can only be written so, or with a ``\\u`` escape): its recorded
    requests are then compared as they are, without looking for bytes to leave out, message by
    message, in every request of a long run."""
    if '"media"' not in text and "\\u" not in text:
        _shape(trace["steps"]).requests[_HOLDS_MEDIA] = False


#: The key of ``_Shape.requests`` that says whether its cassette may hold media parts (unset: it may).
_HOLDS_MEDIA: Final = -1
#: Each steps list's shape, by its identity (the list kept alive with it); bounded.
_SHAPES: OrderedDict[int, tuple[list[TraceStep], _Shape]] = OrderedDict()
_SHAPES_MAX = 64


def _shape(steps: list[TraceStep]) -> _Shape:
    entry = _SHAPES.get(id(steps))
    if entry is None or entry[0] is not steps:
        entry = _SHAPES[id(steps)] = (steps, _Shape(steps))
        if len(_SHAPES) > _SHAPES_MAX:
            _SHAPES.popitem(last=False)
    return entry[1]
