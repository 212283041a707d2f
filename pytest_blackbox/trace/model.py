"""The v2 trace as typed JSON: ``TypedDict`` names for plain ``dict``/``list`` data.

Not classes: a cassette must round-trip byte for byte (payload key order is the producer's) and its
hash is defined over JSON, so the data stays JSON. See docs/cassette-format.md.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypedDict

#: The only trace format version this package reads or writes.
CURRENT_TRACE_VERSION: Final = 2

JsonValue = None | bool | int | float | str | list[Any] | dict[str, Any]

StepType = Literal["model_input", "model_output", "tool_call", "tool_result", "metadata"]
STEP_TYPES: Final[tuple[StepType, ...]] = (
    "model_input",
    "model_output",
    "tool_call",
    "tool_result",
    "metadata",
)


class TraceStep(TypedDict):
    """One hash-chained step; keys in the order the original writes them."""

    id: str
    index: int
    type: StepType
    timestamp: int | float
    payload: Any
    prevHash: str | None
    hash: str


class _TraceFields(TypedDict):
    version: int
    id: str
    createdAt: int | float
    steps: list[TraceStep]


class Trace(_TraceFields, total=False):
    """One run. ``parentId``/``forkedFromStepId`` exist only on forks and are written after ``steps``."""

    parentId: str
    forkedFromStepId: str


class ToolCallRef(TypedDict):
    """One call requested by the model: ``call-N`` id, tool name and input."""

    toolCallId: str
    toolName: str
    toolInput: Any


def step_id(trace_id: str, index: int) -> str:
    """``${traceId}:${index}`` — human-readable and not hashed."""
    return f"{trace_id}:{index}"
