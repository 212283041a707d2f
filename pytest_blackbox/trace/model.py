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
    """One call requested by the model: ``call-N`` id, tool name and input (the ``tool_call`` payload)."""

    toolCallId: str
    toolName: str
    toolInput: Any


# -- step payloads as this package writes them ---------------------------------------------------
# A payload read from a file is ``Any`` until checked; these are the shapes the providers, the
# session and the builders produce, so mypy checks that they agree. Message parts stay plain dicts:
# the providers build them field by field and the schema checks them.


class _ToolDefinitionFields(TypedDict):
    name: str
    description: str


class ToolDefinition(_ToolDefinitionFields, total=False):
    """A tool the model may call; ``inputSchema`` only when the request gave an object.

    A provider-defined tool (a provider-run one such as web search, or a typed client tool such as
    Anthropic's memory tool) names its provider type in ``builtin`` and keeps its other fields in
    ``settings``.
    """

    inputSchema: Any
    builtin: str
    settings: dict[str, Any]


class Message(TypedDict):
    """One neutral message: a string, or a list of ``text`` / ``tool_use`` / ``tool_result`` parts."""

    role: Literal["user", "assistant"]
    content: str | list[dict[str, Any]]


class _ModelInputFields(TypedDict):
    messages: list[Message]
    tools: list[ToolDefinition]


class ModelInput(_ModelInputFields, total=False):
    """The ``model_input`` payload: one model request, provider-neutral."""

    systemPrompt: str
    model: str
    params: dict[str, Any]


#: Why a model output stopped, when it is not the ordinary end of its turn. ``length`` and ``refusal``
#: are the original Blackbox's; the others are this project's (see docs/cassette-format.md); ``pause``:
#: the provider paused a long turn of provider-run tools, and the agent sends it back to go on.
Stop = Literal[
    "length",
    "refusal",
    "pause",
    "stopSequence",
    "contextWindow",
    "contentFilter",
    "recitation",
    "blocklist",
    "prohibitedContent",
    "personalData",
    "language",
    "malformedCall",
    "unexpectedCall",
    "tooManyCalls",
    "other",
]


#: The wire fields a response may leave out that a replay otherwise sends (see ``omitted`` below).
Omitted = Literal[
    "candidateIndex",
    "textLogprobs",
    "codeExecutionId",
    "textMessage",
    "finishReason",
    "textPieces",
    "callArguments",
]


class _Envelope(TypedDict, total=False):
    """What a response carries besides its text and calls, present only when the response had it.

    ``moderation`` is the OpenAI moderation result (keys in camelCase, category names as sent);
    ``logprobs`` the text's token log probabilities (``token``, ``logprob``, ``bytes``, ``topLogprobs``);
    ``omitted`` names wire fields this response left out, so a replay leaves them out too;
    ``conversation`` (a neutral id) and ``container`` (its neutral ``id`` and other fields in camelCase)
    are the conversation state the provider keeps that the response named;
    ``choices`` are the choices after the first of a request for several (Chat ``n``, Gemini
    ``candidateCount``), each a model output of its own;
    ``reasoning`` is the reasoning text an OpenAI-compatible server sent beside a Chat answer, by the
    field it came in (``reasoningContent``, ``reasoning``).
    """

    moderation: dict[str, Any]
    reasoning: dict[str, str]
    logprobs: list[dict[str, Any]]
    omitted: list[Omitted]
    conversation: str
    container: dict[str, Any]
    choices: list[dict[str, Any]]


class _FinalAnswerFields(_Envelope):
    type: Literal["final_answer"]
    text: str


class FinalAnswer(_FinalAnswerFields, total=False):
    """A ``model_output`` that ends the model's turn with text; ``content`` keeps its parts in order;
    ``stopSequence`` is the stop sequence that ended it (with ``stop: "stopSequence"``)."""

    stop: Stop
    content: list[dict[str, Any]]
    stopSequence: str


class _ToolCallsFields(_Envelope):
    type: Literal["tool_calls"]
    calls: list[ToolCallRef]


class ToolCallsOutput(_ToolCallsFields, total=False):
    """A ``model_output`` requesting one or more tool calls, with the text before them if any."""

    text: str
    stop: Literal["length"]
    content: list[dict[str, Any]]


class SingleToolCall(TypedDict):
    """The single-call ``model_output`` of the built-in demo loop (as the original's demo writes it)."""

    type: Literal["tool_call"]
    toolCallId: str
    toolName: str
    toolInput: Any


ModelOutput = FinalAnswer | ToolCallsOutput | SingleToolCall


class _ToolResultFields(TypedDict):
    toolCallId: str
    toolName: str


class ToolResult(_ToolResultFields, total=False):
    """The ``tool_result`` payload: the tool's ``result``, or the ``error`` it raised."""

    result: Any
    error: str


class RunCompleted(TypedDict):
    """The terminal ``metadata`` payload of a run that ended with a final answer."""

    event: Literal["run_completed"]
    status: Literal["success"]
    result: str


class _RunFailedFields(TypedDict):
    event: Literal["run_failed"]
    status: Literal["error"]
    reason: str


class RunFailed(_RunFailedFields, total=False):
    """The terminal ``metadata`` payload of a failed run; the details depend on ``reason``."""

    message: str
    exitCode: int
    inFlight: int
    maxSteps: int
    toolName: str
    toolCallId: str


Terminal = RunCompleted | RunFailed


def step_id(trace_id: str, index: int) -> str:
    """``${traceId}:${index}`` — human-readable and not hashed."""
    return f"{trace_id}:{index}"
