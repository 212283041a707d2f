"""Responses responses → ``model_output``: the message text or refusal, function calls, the status.

See docs/providers.md#openai-responses.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from ...trace.model import ModelOutput, Omitted
from ..common import (
    CallIds,
    final_answer,
    label,
    list_field,
    malformed,
    parse_arguments,
    require_object,
    require_str,
    unsupported,
)
from ..content import TEXT_ADVICE, ordered_output, text_part
from ..envelope import with_envelope
from ..responses_content import SERVER_ITEMS, annotations_of, server_part

_ONE_TEXT_ADVICE: Final = (
    "a replay returns one text part (or one refusal) per message, "
    "so this response could not come back as it was"
)
_NOT_RECORDED: Final = "it is not recorded in this version, so a replay could not give it back"
#: ``incomplete_details.reason`` → neutral stop (a replay sends each back as the reason it came from).
INCOMPLETE_REASONS: Final[dict[str, Literal["length", "contentFilter"]]] = {
    "max_output_tokens": "length",
    "content_filter": "contentFilter",
}


def normalize_response(body: Any, ids: CallIds) -> ModelOutput:
    """The ``model_output`` payload for a Responses response body, its items in order.

    Everything is checked before a provider id is mapped, so a refused response assigns no ``call-N``.
    """
    response = require_object(body, "the response body", "response")
    stop = _status_stop(response)
    parts, refusal, logprobs = _response_output(response)
    moderation = response.get("moderation")
    if refusal is not None:
        if parts or stop is not None:
            unsupported(
                "a refusal together with text, function calls or an incomplete status",
                "a replay returns a refusal alone",
                "output",
            )
        return with_envelope(final_answer(refusal, "refusal"), moderation=moderation)
    if stop == "contentFilter" and any(part["type"] != "text" for part in parts):
        unsupported("function calls in a response stopped by the content filter", _ONE_TEXT_ADVICE, "output")
    has_text = any(part["type"] == "text" and part["text"] for part in parts)
    no_calls = all(part["type"] != "tool_use" for part in parts)
    omitted: tuple[Omitted, ...] = ("textLogprobs",) if logprobs is None and (has_text or no_calls) else ()
    for part in parts:
        if part["type"] == "tool_use":
            call_id, arguments = part["toolCallId"], part["toolInput"]
            part.update(
                toolCallId=ids.neutral(call_id, part["toolName"]), toolInput=parse_arguments(arguments)
            )
        elif part["type"] == "server_tool_use":
            part["toolCallId"] = ids.server(part["toolCallId"], part["toolName"])[0]
    return with_envelope(
        ordered_output(parts, stop), moderation=moderation, logprobs=logprobs or None, omitted=omitted
    )


def _status_stop(response: dict[str, Any]) -> Literal["length", "contentFilter"] | None:
    status = response.get("status")
    if status in (None, "completed"):
        return None
    if status != "incomplete":
        unsupported(
            f"a response with status {label(status)}",
            "only completed responses, or incomplete ones cut at max_output_tokens or by the content "
            "filter, can be recorded",
            "status",
        )
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    if reason in INCOMPLETE_REASONS:
        return INCOMPLETE_REASONS[reason]
    unsupported(
        f"an incomplete response with reason {label(reason)}",
        "a replay could not return it",
        "incomplete_details.reason",
    )


def _response_output(response: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None, Any]:
    """The output's parts in order (provider ids not mapped yet), the refusal, if any, and the text
    part's ``logprobs`` (``None`` when a text part had none, ``[]`` when there is no text part)."""
    parts: list[dict[str, Any]] = []
    refusal: str | None = None
    logprobs: Any = []
    for index, raw in enumerate(list_field(response, "output", "response")):
        at = f"output[{index}]"
        item = require_object(raw, at, "response")
        kind = item.get("type")
        if kind == "function_call":
            name = require_str(item.get("name"), f"{at}.name", "response")
            call_id = require_str(item.get("call_id"), f"{at}.call_id", "response")
            parts.append(
                {
                    "type": "tool_use",
                    "toolCallId": call_id,
                    "toolName": name,
                    "toolInput": item.get("arguments"),
                }
            )
        elif kind == "message":
            texts = 0
            for position, part in enumerate(list_field(item, "content", "response")):
                where = f"{at}.content[{position}]"
                content = require_object(part, where, "response")
                piece, refused = _output_part(content, where)
                if not refused and (piece["text"] or logprobs == []):
                    logprobs = content.get("logprobs")
                if refused:
                    if refusal is not None:
                        unsupported("a response with more than one refusal part", _ONE_TEXT_ADVICE, where)
                    refusal = piece["text"]
                elif piece["text"] or "citations" in piece:
                    texts += 1
                    if texts > 1:
                        unsupported("a message with more than one text part", _ONE_TEXT_ADVICE, where)
                    parts.append(piece)
        elif kind in SERVER_ITEMS:
            parts.append(server_part(item, at, "response", None))
        elif kind != "reasoning":
            unsupported(
                f"{label(kind)} output items",
                "only message, function_call, reasoning and provider-run built-in tool items can be "
                "recorded in this version",
                at,
            )
    return parts, refusal, logprobs


def _output_part(part: dict[str, Any], at: str) -> tuple[dict[str, Any], bool]:
    """``(text part, is_refusal)`` of a message content part."""
    kind = part.get("type")
    if kind == "refusal":
        return text_part(require_str(part.get("refusal"), f"{at}.refusal", "response")), True
    if kind != "output_text":
        unsupported(f"{label(kind)} content in a response", TEXT_ADVICE, at)
    if part.get("logprobs") is not None and not isinstance(part["logprobs"], list):
        malformed(f"{at}.logprobs", "a list or null", "response")
    text = require_str(part.get("text"), f"{at}.text", "response")
    return text_part(text, annotations_of(part.get("annotations"), f"{at}.annotations")), False
