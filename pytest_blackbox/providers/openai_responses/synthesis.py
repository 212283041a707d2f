"""The Responses response a replay returns for a recorded ``model_output``.

See docs/providers.md#openai-responses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..common import ReplayArgs, arguments_text, read_output, replayed_model
from ..envelope import wire_json
from ..responses_content import wire_annotations, wire_server_item
from .response import INCOMPLETE_REASONS

if TYPE_CHECKING:
    from typing_extensions import Unpack


def synthesize_response(output: Any, **where: Unpack[ReplayArgs]) -> dict[str, Any]:
    """The Responses response a replay returns for a recorded output.

    The response id is ``blackbox-replay-<i>``; item ids keep the API's ``msg_`` / ``fc_`` prefixes
    and are derived from it; call ids are the neutral ``call-N``; usage is zero; ``created_at`` is the
    recorded step's time in seconds. A text part has the recorded ``logprobs`` (``[]`` when none were
    recorded) unless the recorded response left them out (``omitted``); a recorded moderation result
    comes back as ``moderation``. A final answer always has a message item, so ``output_text`` reads
    as it did live, even for an empty answer.
    """
    recorded = read_output(output)
    output_index = where["output_index"]
    response_id = f"blackbox-replay-{output_index}"
    reason = next((wire for wire, stop in INCOMPLETE_REASONS.items() if stop == recorded.stop), None)
    incomplete = reason is not None
    logprobs = {} if "textLogprobs" in recorded.omitted else {"logprobs": wire_json(recorded.logprobs or [])}
    items: list[dict[str, Any]] = []
    if recorded.stop == "refusal":
        items.append(
            _message_item(output_index, 0, {"type": "refusal", "refusal": recorded.text}, incomplete)
        )
    for part in [] if recorded.stop == "refusal" else recorded.parts:
        if part["type"] == "text":
            annotations = wire_annotations(part.get("citations"))
            text = {"type": "output_text", "text": part["text"], "annotations": annotations, **logprobs}
            items.append(_message_item(output_index, len(items), text, incomplete))
        elif part["type"] == "server_tool_use":
            items.append(wire_server_item(part))
        else:
            items.append(
                {
                    "id": f"fc_blackbox_replay_{output_index}_{len(items)}",
                    "type": "function_call",
                    "call_id": part["toolCallId"],
                    "name": part["toolName"],
                    "arguments": arguments_text(part["toolInput"]),
                    "status": "completed",
                }
            )
    if not any(item["type"] in ("message", "function_call") for item in items):
        empty = {"type": "output_text", "text": "", "annotations": [], **logprobs}
        items.insert(0, _message_item(output_index, 0, empty, incomplete))
    response = {
        "id": response_id,
        "object": "response",
        "created_at": int(where["timestamp"] // 1000),
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": reason} if incomplete else None,
        "instructions": None,
        "model": replayed_model(where),
        "output": items,
        "parallel_tool_calls": True,
        "temperature": None,
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "usage": {
            "input_tokens": 0,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 0,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 0,
        },
    }
    if recorded.moderation is not None:
        response["moderation"] = wire_json(recorded.moderation)
    return response


def _message_item(output_index: int, position: int, part: dict[str, Any], incomplete: bool) -> dict[str, Any]:
    return {
        "id": f"msg_blackbox_replay_{output_index}_{position}",
        "type": "message",
        "role": "assistant",
        "status": "incomplete" if incomplete else "completed",
        "content": [part],
    }
