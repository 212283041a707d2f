"""Responses event streams: the response one ends with (recording) and the events a replay serves.

See docs/providers.md#openai-responses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..common import ReplayArgs, label, require_object
from ..sse import encode_event, event_object, parse_events, pieces, stream_problem
from .synthesis import synthesize_response

if TYPE_CHECKING:
    from typing_extensions import Unpack


def collect_stream(body: bytes) -> dict[str, Any]:
    """The response a complete event stream ends with, ready for :func:`normalize_response`.

    The closing ``response.completed`` / ``response.incomplete`` event carries the whole response;
    when it leaves ``output`` out, the items come from the ``response.output_item.done`` events, as the
    SDK's stream helper recovers them. An ``error`` or ``response.failed`` event, or a stream that ends
    before its closing event, is refused.
    """
    done: dict[int, Any] = {}
    for position, event in enumerate(parse_events(body)):
        if event.data.startswith("[DONE]"):
            break
        data = event_object(event, position)
        kind = data.get("type")
        if kind == "error":
            stream_problem(f"reported an error ({label(data.get('code'))}) at event {position}")
        if kind == "response.failed":
            stream_problem(f"reported that the response failed at event {position}")
        if kind == "response.output_item.done" and isinstance(data.get("output_index"), int):
            done[data["output_index"]] = data.get("item")
        if kind in ("response.completed", "response.incomplete"):
            response = require_object(data.get("response"), f"{kind}.response", "response")
            if response.get("output") is None:
                return {**response, "output": [done[index] for index in sorted(done)]}
            return response
    stream_problem(
        "ended before response.completed or response.incomplete (it was cut short)", cut_short=True
    )


def synthesize_stream(output: Any, **where: Unpack[ReplayArgs]) -> list[bytes]:
    """The event stream a replay serves for a recorded output, one item per event.

    It carries exactly :func:`synthesize_response`'s response: ``response.created`` and
    ``response.in_progress`` (status ``in_progress``, no output), each item's ``added`` event, its
    text, refusal or arguments in fixed-size deltas and its ``done`` events, then
    ``response.completed`` (or ``response.incomplete`` for a length stop). Every event carries a
    ``sequence_number`` counting from 0. ``request_body`` is unused.
    """
    response = synthesize_response(output, **where)
    stream = _EventWriter()
    opening = {**response, "status": "in_progress", "output": [], "incomplete_details": None, "usage": None}
    stream.add("response.created", response=opening)
    stream.add("response.in_progress", response=opening)
    for position, item in enumerate(response["output"]):
        if item["type"] == "message":
            _message_events(stream, position, item)
        elif item["type"] == "function_call":
            _function_call_events(stream, position, item)
        else:
            stream.add("response.output_item.added", output_index=position, item=item)
            stream.add("response.output_item.done", output_index=position, item=item)
    final = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    stream.add(final, response=response)
    return stream.events


class _EventWriter:
    """Numbers events as the API does: ``sequence_number`` from 0, in the order they are written."""

    def __init__(self) -> None:
        self.events: list[bytes] = []

    def add(self, kind: str, **fields: Any) -> None:
        self.events.append(encode_event(kind, {"type": kind, **fields, "sequence_number": len(self.events)}))


def _message_events(stream: _EventWriter, position: int, item: dict[str, Any]) -> None:
    where = {"item_id": item["id"], "output_index": position}
    [part] = item["content"]
    stream.add(
        "response.output_item.added",
        output_index=position,
        item={**item, "status": "in_progress", "content": []},
    )
    if part["type"] == "refusal":
        stream.add(
            "response.content_part.added", **where, content_index=0, part={"type": "refusal", "refusal": ""}
        )
        for piece in pieces(part["refusal"]):
            stream.add("response.refusal.delta", **where, content_index=0, delta=piece)
        stream.add("response.refusal.done", **where, content_index=0, refusal=part["refusal"])
    else:
        logprobs = {"logprobs": part["logprobs"]} if "logprobs" in part else {}
        empty = {**part, "text": "", **({"logprobs": []} if logprobs else {})}
        stream.add("response.content_part.added", **where, content_index=0, part=empty)
        for number, piece in enumerate(pieces(part["text"])):  # the logprobs all come with the first piece
            tokens = {"logprobs": []} if number and logprobs else logprobs
            stream.add("response.output_text.delta", **where, content_index=0, delta=piece, **tokens)
        stream.add("response.output_text.done", **where, content_index=0, text=part["text"], **logprobs)
    stream.add("response.content_part.done", **where, content_index=0, part=part)
    stream.add("response.output_item.done", output_index=position, item=item)


def _function_call_events(stream: _EventWriter, position: int, item: dict[str, Any]) -> None:
    where = {"item_id": item["id"], "output_index": position}
    added = {**item, "arguments": "", "status": "in_progress"}
    stream.add("response.output_item.added", output_index=position, item=added)
    for piece in pieces(item["arguments"]):
        stream.add("response.function_call_arguments.delta", **where, delta=piece)
    stream.add(
        "response.function_call_arguments.done", **where, name=item["name"], arguments=item["arguments"]
    )
    stream.add("response.output_item.done", output_index=position, item=item)
