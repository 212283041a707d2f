"""Gemini replies a replay sends: a generateContent response, its ``alt=sse`` chunks, the error body.

See docs/providers.md#google-gemini-google-genai.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from .. import choices as several
from ..common import ReplayArgs, label, replayed_model, unsupported
from ..replayed import ReplayOutput, read_output
from ..sse import encode_event, pieces
from .parts import CODE_TOOL
from .response import FINISH_REASONS, METADATA_TOOLS

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: Neutral provider-run part → the Gemini part it is sent back as (for the codeExecution tool).
_CODE_PARTS: Final = {"server_tool_use": "executableCode", "server_tool_result": "codeExecutionResult"}
#: Neutral stop → the finish reason a replay sends: the one it was recorded from.
_REPLAYED_FINISH: Final[dict[str | None, str]] = {stop: reason for reason, stop in FINISH_REASONS.items()}


def error_body(message: str) -> dict[str, Any]:
    """The Gemini API error shape, so the SDK raises a (never retried) 400 ``ClientError``."""
    text = message if message.startswith("[blackbox]") else f"[blackbox] {message}"
    return {"error": {"code": 400, "message": text, "status": "INVALID_ARGUMENT"}}


@several.synthesized_per_choice(several.join_gemini_choices)
def synthesize_response(output: Any, **where: Unpack[ReplayArgs]) -> dict[str, Any]:
    """The generateContent response a replay returns for a recorded output.

    Function calls carry their ``call-N`` as ``id`` and usage is zero. ``timestamp`` is unused: the
    response carries no creation time.
    """
    recorded = read_output(output)
    return _chunk(_replay_parts(recorded), recorded, where, last=True)


@several.synthesized_per_choice(several.join_gemini_streams)
def synthesize_stream(output: Any, **where: Unpack[ReplayArgs]) -> list[bytes]:
    """The server-sent events a replay streams for a recorded output, one item per event.

    Each event is one response chunk: the parts in order, text in fixed-size pieces (whole, when the
    recorded stream sent it whole: ``omitted: ["textPieces"]``, so google-genai's ``parsed`` comes
    back on that chunk) and one chunk for each other part (a function call, code, its result); the
    last chunk carries the finish reason and usage. Every chunk has content, as ``chats`` requires of
    a valid turn. ``request_body`` is unused.
    """
    recorded = read_output(output)
    cut = pieces if "textPieces" not in recorded.omitted else _whole
    groups: list[list[dict[str, Any]]] = []
    for part in _replay_parts(recorded):
        groups += [[{"text": piece}] for piece in cut(part["text"])] if "text" in part else [[part]]
    groups = groups or [[]]
    return [
        encode_event(None, _chunk(group, recorded, where, last=index == len(groups) - 1))
        for index, group in enumerate(groups)
    ]


def _whole(text: str) -> list[str]:
    """A text as one piece (none when empty), for a stream that sent it whole."""
    return [text] if text else []


def _replay_parts(recorded: ReplayOutput) -> list[dict[str, Any]]:
    """The candidate's parts in recorded order; built-in tools' metadata goes on the candidate."""
    with_ids = "codeExecutionId" not in recorded.omitted
    parts: list[dict[str, Any]] = []
    for part in recorded.parts:
        kind, name = part["type"], part.get("toolName")
        if kind == "text":
            parts.append({"text": part["text"]})
        elif kind == "tool_use":
            parts.append({"functionCall": _function_call(part)})
        elif kind in _CODE_PARTS and name == CODE_TOOL:
            fields = part["toolInput" if kind == "server_tool_use" else "result"]
            if not isinstance(fields, dict):
                unsupported(
                    f"replaying a {kind} part of {CODE_TOOL} whose fields are not a JSON object",
                    "Gemini code execution parts are objects",
                    "content",
                )
            identity = {"id": part["toolCallId"]} if with_ids else {}
            parts.append({_CODE_PARTS[kind]: {**fields, **identity}})
        elif not (kind == "server_tool_result" and name in METADATA_TOOLS.values()):
            unsupported(
                f"replaying a {kind} part of {label(name)} as a Gemini response",
                "a Gemini candidate holds text, function calls and code execution",
                "content",
            )
    return parts


def _function_call(call: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(call["toolInput"], dict):
        unsupported(
            f"replaying a call of {label(call['toolName'])} whose input is not a JSON object",
            "Gemini function calls take an object of arguments",
            "toolInput",
        )
    return {"id": call["toolCallId"], "name": call["toolName"], "args": call["toolInput"]}


def _metadata(recorded: ReplayOutput) -> dict[str, Any]:
    """The candidate metadata the recorded built-in tools' results came from (grounding, URL context)."""
    fields = {tool: field for field, tool in METADATA_TOOLS.items()}
    return {
        fields[part["toolName"]]: part["result"]
        for part in recorded.parts
        if part["type"] == "server_tool_result" and part["toolName"] in fields
    }


def _chunk(
    parts: list[dict[str, Any]], recorded: ReplayOutput, where: ReplayArgs, *, last: bool
) -> dict[str, Any]:
    """A response (or one streamed chunk of it); an empty answer has content without parts."""
    content: dict[str, Any] = {"parts": parts, "role": "model"} if parts else {"role": "model"}
    if not parts and recorded.stop == "refusal":
        content = {}  # the API's SAFETY-blocked candidate carries an empty content, without a role
    candidate: dict[str, Any] = {"content": content}
    if last:
        candidate["finishReason"] = _REPLAYED_FINISH.get(recorded.stop, "STOP")
        candidate.update(_metadata(recorded))
    if "candidateIndex" not in recorded.omitted:
        candidate["index"] = 0
    chunk: dict[str, Any] = {"candidates": [candidate]}
    if last:
        chunk["usageMetadata"] = {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0}
    chunk["modelVersion"] = replayed_model(where)
    chunk["responseId"] = f"blackbox-replay-{where['output_index']}"
    return chunk
