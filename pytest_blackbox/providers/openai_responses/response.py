"""Responses responses → ``model_output``: the message text or refusal, function calls, the status.

See docs/providers.md#openai-responses.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from ...trace.model import ModelOutput, Omitted, ToolCallRef
from ..common import (
    CallIds,
    final_answer,
    label,
    list_field,
    malformed,
    parse_arguments,
    present,
    require_object,
    require_str,
    tool_calls_output,
    unsupported,
)
from ..envelope import with_envelope
from .request import TEXT_ADVICE

_ONE_TEXT_ADVICE: Final = (
    "a replay returns one message with one text part before the function calls, "
    "so this response could not come back as it was"
)
_NOT_RECORDED: Final = "it is not recorded in this version, so a replay could not give it back"
#: ``incomplete_details.reason`` → neutral stop (a replay sends each back as the reason it came from).
INCOMPLETE_REASONS: Final[dict[str, Literal["length", "contentFilter"]]] = {
    "max_output_tokens": "length",
    "content_filter": "contentFilter",
}


def normalize_response(body: Any, ids: CallIds) -> ModelOutput:
    """The ``model_output`` payload for a Responses response body.

    Everything is checked before a provider id is mapped, so a refused response assigns no ``call-N``.
    """
    response = require_object(body, "the response body", "response")
    stop = _status_stop(response)
    text, refusal, calls, logprobs = _response_output(response)
    moderation = response.get("moderation")
    if refusal is not None:
        if text or calls or stop is not None:
            unsupported(
                "a refusal together with text, function calls or an incomplete status",
                "a replay returns a refusal alone",
                "output",
            )
        return with_envelope(final_answer(refusal, "refusal"), moderation=moderation)
    omitted: tuple[Omitted, ...] = ("textLogprobs",) if logprobs is None and (text or not calls) else ()
    envelope: dict[str, Any] = {"moderation": moderation, "logprobs": logprobs or None, "omitted": omitted}
    if calls:
        neutral_calls: list[ToolCallRef] = [
            {
                "toolCallId": ids.neutral(call_id, name),
                "toolName": name,
                "toolInput": parse_arguments(arguments),
            }
            for call_id, name, arguments in calls
        ]
        if stop == "contentFilter":
            unsupported(
                "function calls in a response stopped by the content filter", _ONE_TEXT_ADVICE, "output"
            )
        calls_output = tool_calls_output(neutral_calls, text, stop)
        return with_envelope(calls_output, **envelope)
    return with_envelope(final_answer(text, stop), **envelope)


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


def _response_output(
    response: dict[str, Any],
) -> tuple[str, str | None, list[tuple[str, str, Any]], tuple[Omitted, ...]]:
    """The text, the refusal, the calls and the text part's ``logprobs`` (``None`` when a text part had
    none, ``[]`` when there is no text part)."""
    text: str | None = None
    refusal: str | None = None
    calls: list[tuple[str, str, Any]] = []
    logprobs: Any = []
    for index, raw in enumerate(list_field(response, "output", "response")):
        at = f"output[{index}]"
        item = require_object(raw, at, "response")
        kind = item.get("type")
        if kind == "function_call":
            name = require_str(item.get("name"), f"{at}.name", "response")
            calls.append(
                (require_str(item.get("call_id"), f"{at}.call_id", "response"), name, item.get("arguments"))
            )
        elif kind == "message":
            for position, part in enumerate(list_field(item, "content", "response")):
                where = f"{at}.content[{position}]"
                content = require_object(part, where, "response")
                piece, refused = _output_part(content, where)
                if not refused and (piece or text is None):
                    logprobs = content.get("logprobs")
                if refused:
                    if refusal is not None:
                        unsupported("a response with more than one refusal part", _ONE_TEXT_ADVICE, where)
                    refusal = piece
                elif piece:
                    if calls:
                        unsupported("text after a function call in a response", _ONE_TEXT_ADVICE, where)
                    if text is not None:
                        unsupported("a response with more than one text part", _ONE_TEXT_ADVICE, where)
                    text = piece
        elif kind != "reasoning":
            unsupported(
                f"{label(kind)} output items",
                "only message and function_call output items can be recorded in this version",
                at,
            )
    return text or "", refusal, calls, logprobs


def _output_part(part: dict[str, Any], at: str) -> tuple[str, bool]:
    """``(text, is_refusal)`` of a message content part."""
    kind = part.get("type")
    if kind == "refusal":
        return require_str(part.get("refusal"), f"{at}.refusal", "response"), True
    if kind != "output_text":
        unsupported(f"{label(kind)} content in a response", TEXT_ADVICE, at)
    if present(part.get("annotations")):
        unsupported("annotations in a response", _NOT_RECORDED, f"{at}.annotations")
    if part.get("logprobs") is not None and not isinstance(part["logprobs"], list):
        malformed(f"{at}.logprobs", "a list or null", "response")
    return require_str(part.get("text"), f"{at}.text", "response"), False
