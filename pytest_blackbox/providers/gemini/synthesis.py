"""Gemini replies a replay sends: a generateContent response, its ``alt=sse`` chunks, the error body.

See docs/providers.md#google-gemini-google-genai.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ..common import ReplayArgs, ReplayOutput, label, read_output, replayed_model, unsupported
from ..sse import encode_event, pieces
from .response import FINISH_REASONS, METADATA_TOOLS

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: Neutral stop → the finish reason a replay sends: the one it was recorded from.
_REPLAYED_FINISH: Final[dict[str | None, str]] = {stop: reason for reason, stop in FINISH_REASONS.items()}


def error_body(message: str) -> dict[str, Any]:
    """The Gemini API error shape, so the SDK raises a (never retried) 400 ``ClientError``."""
    text = message if message.startswith("[blackbox]") else f"[blackbox] {message}"
    return {"error": {"code": 400, "message": text, "status": "INVALID_ARGUMENT"}}


def synthesize_response(output: Any, **where: Unpack[ReplayArgs]) -> dict[str, Any]:
    """The generateContent response a replay returns for a recorded output.

    Function calls carry their ``call-N`` as ``id`` and usage is zero. ``timestamp`` is unused: the
    response carries no creation time.
    """
    recorded = read_output(output)
    return _chunk(_replay_parts(recorded), recorded, where, last=True)


def synthesize_stream(output: Any, **where: Unpack[ReplayArgs]) -> list[bytes]:
    """The server-sent events a replay streams for a recorded output, one item per event.

    Each event is one response chunk: the text in fixed-size pieces, then one chunk per function
    call; the last chunk carries the finish reason and usage. Every chunk has content, as
    ``chats`` requires of a valid turn. ``request_body`` is unused.
    """
    recorded = read_output(output)
    parts = _replay_parts(recorded)
    texts = [[{"text": piece}] for piece in pieces(recorded.text)]
    groups = texts + [[part] for part in parts if "functionCall" in part] or [[]]
    return [
        encode_event(None, _chunk(group, recorded, where, last=index == len(groups) - 1))
        for index, group in enumerate(groups)
    ]


def _replay_parts(recorded: ReplayOutput) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": recorded.text}] if recorded.text else []
    for call in recorded.calls:
        if not isinstance(call["toolInput"], dict):
            unsupported(
                f"replaying a call of {label(call['toolName'])} whose input is not a JSON object",
                "Gemini function calls take an object of arguments",
                "toolInput",
            )
        function_call = {"id": call["toolCallId"], "name": call["toolName"], "args": call["toolInput"]}
        parts.append({"functionCall": function_call})
    return parts


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
