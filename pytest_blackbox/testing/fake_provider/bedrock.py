"""The fake provider's Amazon Bedrock: InvokeModel's event-stream framing and the Converse API.

Bedrock names the model in the path (``/model/{id}/invoke``, ``/model/{id}/converse``) and streams
in the AWS event stream (``application/vnd.amazon.eventstream``): binary messages with a prelude,
string headers, a JSON payload and CRC32 checksums. Anthropic answers on InvokeModel are built by the
``anthropic`` module and only framed here; the Converse API is answered whole here.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from .wire import (
    Calls,
    Ids,
    Protocol,
    ReceivedRequest,
    Said,
    Script,
    ScriptedResponse,
    arguments,
    compact,
    halves,
    said,
    tokens,
)

EVENT_STREAM = (("content-type", "application/vnd.amazon.eventstream"),)
_INVOKE = re.compile(r"/model/([^/]+)/(invoke|invoke-with-response-stream)$")
_CONVERSE = re.compile(r"/model/([^/]+)/(converse|converse-stream)$")


def is_invoke(path: str) -> bool:
    return _INVOKE.search(path) is not None


def invoke_model(path: str) -> tuple[str, bool]:
    """(model id, streamed) of an InvokeModel path."""
    match = _INVOKE.search(path)
    assert match is not None
    return unquote(match.group(1)), match.group(2) == "invoke-with-response-stream"


def frame(event_type: str, payload: Any) -> bytes:
    """One event-stream message: prelude, ``:event-type`` / ``:content-type`` / ``:message-type`` headers,
    the payload as compact JSON, and the checksums."""
    headers = bytearray()
    for name, value in (
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ):
        headers += (
            bytes([len(name)]) + name.encode() + b"\x07" + len(value).to_bytes(2, "big") + value.encode()
        )
    data = compact(payload).encode()
    total = 12 + len(headers) + len(data) + 4
    prelude = total.to_bytes(4, "big") + len(headers).to_bytes(4, "big")
    prelude += binascii.crc32(prelude).to_bytes(4, "big")
    message = prelude + bytes(headers) + data
    return message + binascii.crc32(message).to_bytes(4, "big")


def chunks(events: Iterator[dict[str, Any]]) -> tuple[bytes, ...]:
    """Anthropic stream events as InvokeModel streams them: each a ``chunk`` of base64 JSON bytes."""
    return tuple(
        frame("chunk", {"bytes": base64.b64encode(compact(event).encode()).decode()}) for event in events
    )


# -- Converse ----------------------------------------------------------------------------------


def converse_script(ids: Ids, text: str | None, calls: Calls) -> Script:
    """A Converse answer: text then tool uses, streamed for ``converse-stream``."""

    def respond(request: ReceivedRequest) -> ScriptedResponse:
        content: list[dict[str, Any]] = [{"text": text}] if text is not None else []
        content += [
            {"toolUse": {"toolUseId": ids.make("tooluse_", 22), "name": name, "input": dict(tool_input)}}
            for name, tool_input in calls
        ]
        usage = {"inputTokens": tokens(request.body), "outputTokens": tokens(compact(content))}
        response = {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": "tool_use" if calls else "end_turn",
            "usage": {**usage, "totalTokens": sum(usage.values())},
            "metrics": {"latencyMs": 321},
        }
        headers = (("x-amzn-requestid", ids.make("req-", 20)),)
        if request.path.endswith("/converse-stream"):
            return ScriptedResponse(
                200, headers=headers + EVENT_STREAM, chunks=tuple(_converse_events(response))
            )
        return ScriptedResponse(200, response, headers)

    return respond


def _converse_events(response: dict[str, Any]) -> Iterator[bytes]:
    """The stream of a Converse answer; text and tool input in two deltas each."""
    message = response["output"]["message"]
    yield frame("messageStart", {"role": message["role"]})
    deltas: list[dict[str, Any]]
    for index, block in enumerate(message["content"]):
        if "text" in block:
            deltas = [{"text": piece} for piece in halves(block["text"])]
        else:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            yield frame("contentBlockStart", {"start": start, "contentBlockIndex": index})
            deltas = [{"toolUse": {"input": piece}} for piece in halves(compact(use["input"]))]
        for delta in deltas:
            yield frame("contentBlockDelta", {"delta": delta, "contentBlockIndex": index})
        yield frame("contentBlockStop", {"contentBlockIndex": index})
    yield frame("messageStop", {"stopReason": response["stopReason"]})
    yield frame("metadata", {"usage": response["usage"], "metrics": response["metrics"]})


def _held(body: dict[str, Any]) -> list[Said]:
    answers: list[Said] = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
        text = "".join(b["text"] for b in blocks if isinstance(b.get("text"), str)) or None
        uses = [b["toolUse"] for b in blocks if isinstance(b.get("toolUse"), dict)]
        answers.append(said(text, [(use.get("name"), arguments(use.get("input"))) for use in uses]))
    return answers


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"message": message}


CONVERSE = Protocol(
    "/model/{id}/converse", lambda path: _CONVERSE.search(path) is not None, _held, _error_body
)
