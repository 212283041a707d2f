"""Amazon Bedrock's Converse API (``POST …/model/{id}/converse`` and ``…/converse-stream``) ↔ neutral steps.

One protocol for every model family on Bedrock, as boto3's ``converse`` and ``converse_stream`` send
it. A request becomes a ``model_input``: the model from the path, ``system`` text blocks the system
prompt, ``messages`` neutral messages (content blocks ``text``, ``toolUse``, ``toolResult``,
``image``, ``document``; tool ids mapped to ``call-N``), ``toolConfig`` tools and its ``toolChoice``,
and ``inferenceConfig`` the behaviour controls ``params``. A response becomes a ``model_output``
from ``output.message`` and ``stopReason``; ``usage`` and ``metrics`` are dropped (a replay sends
zeros), reasoning blocks are dropped in both directions (a replay cannot return them) and
``cachePoint`` markers are not compared. Anything else is refused naming the field.

A streamed answer is the AWS event stream with ``messageStart``, ``contentBlockStart`` (a tool
use's id and name), ``contentBlockDelta`` (text, or a piece of a tool input's JSON),
``contentBlockStop``, ``messageStop`` (the stop reason) and ``metadata`` (usage, dropped) events.
See docs/providers.md#amazon-bedrock-converse-boto3.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from ..trace.canonical import js_stringify
from ..trace.model import Message, ModelInput, ModelOutput, Stop, ToolDefinition
from .bedrock import error_body as error_body
from .bedrock import model_of_path
from .common import (
    CallIds,
    ReplayArgs,
    json_copy,
    label,
    list_field,
    malformed,
    model_input,
    pick_params,
    require_object,
    require_str,
    tool_definition,
    unsupported,
)
from .content import ordered_output, text_part
from .eventstream import EVENT_STREAM_HEADERS, encode_message, read_events
from .media import bytes_part, message_content, with_extras
from .replayed import read_output
from .sse import pieces, stream_problem

if TYPE_CHECKING:
    from typing_extensions import Unpack

NAME: Final = "bedrock_converse"
HISTORY: Final = "messages"
STREAM_HEADERS: Final = EVENT_STREAM_HEADERS

#: ``inferenceConfig`` field → neutral ``params`` key.
_INFERENCE: Final = (
    ("maxTokens", "maxTokens"),
    ("temperature", "temperature"),
    ("topP", "topP"),
    ("stopSequences", "stop"),
)
#: Top-level request fields compared as they are, under the same name in ``params``.
_COMPARED: Final = ("additionalModelRequestFields", "performanceConfig", "serviceTier")
#: The response fields recorded (``output``, ``stopReason``) or dropped on purpose (``usage``, ``metrics``).
_RESPONSE_FIELDS: Final = frozenset({"output", "stopReason", "usage", "metrics"})
_KNOWN: Final = frozenset({"messages", "system", "toolConfig", "inferenceConfig", *_COMPARED})
_NOT_RECORDED: Final = "it is not recorded in this version, so a replay could not give it back"
_BLOCKS: Final = "only text, toolUse, toolResult, image and document blocks can be recorded in this version"
#: Content blocks that change nothing a replay compares or returns: left out in both directions.
_DROPPED: Final = frozenset({"cachePoint", "reasoningContent"})
_STOP_REASONS: Final[dict[str | None, Stop | None]] = {
    None: None,
    "end_turn": None,
    "tool_use": None,
    "max_tokens": "length",
    "content_filtered": "contentFilter",
    "model_context_window_exceeded": "contextWindow",
}
_REPLAYED_STOPS: Final[dict[str, str]] = {
    stop: reason for reason, stop in _STOP_REASONS.items() if stop is not None and reason is not None
}
#: A document block's ``format`` → its media type.
_DOCUMENT_TYPES: Final = {
    "pdf": "application/pdf",
    "csv": "text/csv",
    "doc": "application/msword",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xls": "application/vnd.ms-excel",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "html": "text/html",
    "txt": "text/plain",
    "md": "text/markdown",
}


# -- requests ----------------------------------------------------------------------------------


def normalize_request(body: Any, ids: CallIds, *, path: str = "") -> ModelInput:
    """The ``model_input`` payload of a Converse request; refusals are raised before sending."""
    request = require_object(body, "the request body")
    for field in request:
        if field not in _KNOWN:
            unsupported(f"{label(field)} in a Converse request", _NOT_RECORDED, field)
    messages = ids.normalized(list_field(request, HISTORY), lambda raw, index: _message(raw, index, ids))
    tool_config = request.get("toolConfig")
    config = require_object(tool_config, "toolConfig") if tool_config is not None else {}
    tools = [
        tool
        for index, raw in enumerate(list_field(config, "tools"))
        if (tool := _tool(raw, f"toolConfig.tools[{index}]")) is not None
    ]
    inference = request.get("inferenceConfig")
    params = pick_params(
        require_object(inference, "inferenceConfig") if inference is not None else {}, _INFERENCE
    )
    extra = {key: json_copy(request[key]) for key in _COMPARED if request.get(key) is not None}
    if config.get("toolChoice") is not None:
        extra = {"toolChoice": json_copy(config["toolChoice"]), **extra}
    if extra:
        params = {**(params or {}), **extra}
    return model_input(
        messages,
        tools,
        system_prompt=_system_prompt(request.get("system")),
        model=model_of_path(path),
        params=params,
    )


def _system_prompt(system: Any) -> str | None:
    if system is None:
        return None
    if not isinstance(system, list):
        malformed("system", "a list of system content blocks")
    texts: list[str] = []
    for index, raw in enumerate(system):
        block = require_object(raw, f"system[{index}]")
        if "cachePoint" in block:
            continue
        if set(block) != {"text"}:
            unsupported(
                f"a system block of {label(next(iter(block), None))}",
                "only text can be recorded",
                f"system[{index}]",
            )
        texts.append(require_str(block["text"], f"system[{index}].text"))
    return "\n\n".join(texts)


def _only_key(block: dict[str, Any], at: str) -> str:
    """A Converse content block's one key (``text``, ``toolUse``, …): a union, one member set."""
    if len(block) != 1:
        malformed(at, "a content block with exactly one member")
    return next(iter(block))


def _message(raw: Any, index: int, ids: CallIds) -> Message:
    at = f"messages[{index}]"
    message = require_object(raw, at)
    role = message.get("role")
    if role not in ("user", "assistant"):
        malformed(f"{at}.role", '"user" or "assistant"')
    content = list_field(message, "content")
    parts = [
        part
        for position, block in enumerate(content)
        if (
            part := _part(
                require_object(block, f"{at}.content[{position}]"), f"{at}.content[{position}]", ids, role
            )
        )
        is not None
    ]
    return {"role": "assistant" if role == "assistant" else "user", "content": parts}


def _part(block: dict[str, Any], at: str, ids: CallIds, role: str) -> dict[str, Any] | None:
    key = _only_key(block, at)
    value = block[key]
    where = f"{at}.{key}"
    if key in _DROPPED:
        return None
    if key == "text":
        return text_part(require_str(value, where))
    if key == "toolUse" and role == "assistant":
        call_id, name, tool_input = _tool_use(value, where)
        return {
            "type": "tool_use",
            "toolCallId": ids.neutral(call_id, name),
            "toolName": name,
            "toolInput": tool_input,
        }
    if key == "toolResult" and role == "user":
        return _tool_result(require_object(value, where), where, ids)
    if key in ("image", "document"):
        return _media(key, require_object(value, where), where)
    unsupported(f"a {label(key)} block in a {role} message", _BLOCKS, at)


def _tool_use(value: Any, at: str) -> tuple[str, str, Any]:
    use = require_object(value, at)
    for field in use:
        if field not in ("toolUseId", "name", "input"):
            unsupported(f"{label(field)} in a toolUse block", _NOT_RECORDED, f"{at}.{field}")
    return (
        require_str(use.get("toolUseId"), f"{at}.toolUseId"),
        require_str(use.get("name"), f"{at}.name"),
        json_copy(use.get("input")),
    )


def _tool_result(result: dict[str, Any], at: str, ids: CallIds) -> dict[str, Any]:
    call_id, name = ids.resolve(require_str(result.get("toolUseId"), f"{at}.toolUseId"))
    status = result.get("status")
    if status not in (None, "success", "error"):
        malformed(f"{at}.status", '"success" or "error"')
    value = _result_value(list_field(result, "content"), f"{at}.content")
    part: dict[str, Any] = {"type": "tool_result", "toolCallId": call_id, "toolName": name}
    if status == "error":
        part["error"] = value if isinstance(value, str) else js_stringify(value)
    else:
        part["result"] = value
    return part


def _result_value(content: list[Any], at: str) -> Any:
    """A tool result's content: one ``json`` block's value, or its text and media in order."""
    blocks = [require_object(raw, f"{at}[{index}]") for index, raw in enumerate(content)]
    if len(blocks) == 1 and "json" in blocks[0]:
        return json_copy(blocks[0]["json"])
    parts: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        where = f"{at}[{index}]"
        key = _only_key(block, where)
        if key == "text":
            parts.append(text_part(require_str(block[key], f"{where}.text")))
        elif key in ("image", "document"):
            parts.append(_media(key, require_object(block[key], f"{where}.{key}"), f"{where}.{key}"))
        else:
            unsupported(
                f"a {label(key)} block in a tool result",
                "only text, one json, image and document blocks can be recorded",
                where,
            )
    return message_content(parts) if parts else ""


def _media(key: str, block: dict[str, Any], at: str) -> dict[str, Any]:
    """An ``image`` or ``document`` block with inline bytes (base64 on the wire) as a media part."""
    allowed = ("format", "source") if key == "image" else ("format", "source", "name")
    for field in block:
        if field not in allowed:
            unsupported(f"{label(field)} in a {key} block", _NOT_RECORDED, f"{at}.{field}")
    kind_format = require_str(block.get("format"), f"{at}.format")
    source = require_object(block.get("source"), f"{at}.source")
    if set(source) != {"bytes"}:
        unsupported(
            f"a {key} source other than bytes ({label(next(iter(source), None))})",
            "only inline bytes can be recorded in this version",
            f"{at}.source",
        )
    if key == "image":
        return bytes_part("image", f"image/{kind_format}", source["bytes"], f"{at}.source.bytes")
    media_type = _DOCUMENT_TYPES.get(kind_format)
    if media_type is None:
        unsupported(
            f"a document of format {label(kind_format)}", f"the formats are {', '.join(_DOCUMENT_TYPES)}", at
        )
    part = bytes_part("document", media_type, source["bytes"], f"{at}.source.bytes")
    return with_extras(part, (("title", block.get("name")),))


def _tool(raw: Any, at: str) -> ToolDefinition | None:
    tool = require_object(raw, at)
    key = _only_key(tool, at)
    if key == "cachePoint":
        return None
    if key != "toolSpec":
        unsupported(f"a {label(key)} tool", "only toolSpec tools can be recorded in this version", at)
    spec = require_object(tool[key], f"{at}.toolSpec")
    for field in spec:
        if field not in ("name", "description", "inputSchema"):
            unsupported(f"{label(field)} in a toolSpec", _NOT_RECORDED, f"{at}.toolSpec.{field}")
    schema = spec.get("inputSchema")
    json_schema = (
        require_object(schema, f"{at}.toolSpec.inputSchema").get("json") if schema is not None else None
    )
    return tool_definition(
        require_str(spec.get("name"), f"{at}.toolSpec.name"), spec.get("description"), json_schema
    )


# -- responses ---------------------------------------------------------------------------------


def normalize_response(body: Any, ids: CallIds) -> ModelOutput:
    """The ``model_output`` of a Converse response; ``usage`` and ``metrics`` are dropped."""
    response = require_object(body, "the response body", "response")
    for field, value in response.items():
        if field not in _RESPONSE_FIELDS and value is not None:
            unsupported(f"{label(field)} in a Converse response", _NOT_RECORDED, field)
    output = require_object(response.get("output"), "output", "response")
    message = require_object(output.get("message"), "output.message", "response")
    read: list[tuple[dict[str, Any], str | None]] = []
    for index, raw in enumerate(list_field(message, "content", "response")):
        at = f"output.message.content[{index}]"
        block = require_object(raw, at, "response")
        key = _only_key(block, at)
        if key in _DROPPED:
            continue
        if key == "text":
            text = require_str(block[key], f"{at}.text", "response")
            if text:
                read.append((text_part(text), None))
        elif key == "toolUse":
            call_id, name, tool_input = _tool_use(block[key], f"{at}.toolUse")
            read.append(({"type": "tool_use", "toolName": name, "toolInput": tool_input}, call_id))
        else:
            unsupported(f"a {label(key)} block in a Converse response", _BLOCKS, at)
    reason = response.get("stopReason")
    if not isinstance(reason, (str, type(None))) or reason not in _STOP_REASONS:
        unsupported(f"stopReason {label(reason)}", "a replay could not return it", "stopReason")
    parts = [
        part if provider_id is None else {**part, "toolCallId": ids.neutral(provider_id, part["toolName"])}
        for part, provider_id in read
    ]
    return ordered_output([_with_id_first(part) for part in parts], _STOP_REASONS[reason])


def _with_id_first(part: dict[str, Any]) -> dict[str, Any]:
    """A tool_use part with its keys in the neutral order (type, toolCallId, toolName, toolInput)."""
    if part["type"] != "tool_use":
        return part
    return {
        "type": "tool_use",
        "toolCallId": part["toolCallId"],
        "toolName": part["toolName"],
        "toolInput": part["toolInput"],
    }


def collect_stream(body: bytes) -> dict[str, Any]:
    """The Converse response a complete event stream adds up to, for :func:`normalize_response`.

    An exception message is refused, and so is a stream that ends before ``messageStop``.
    """
    collector = _StreamCollector()
    for position, (kind, payload) in enumerate(read_events(body)):
        collector.add(kind, payload, position)
    return collector.response()


class _StreamCollector:
    """Adds Converse stream events up into the response they describe."""

    def __init__(self) -> None:
        self._role: str | None = None
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, str] = {}
        self._stop: dict[str, Any] | None = None

    def add(self, kind: str, event: dict[str, Any], position: int) -> None:
        if kind == "messageStart":
            self._role = str(event.get("role", "assistant"))
        elif kind == "contentBlockStart":
            start = require_object(event.get("start"), "contentBlockStart.start", "response")
            use = require_object(start.get("toolUse"), "contentBlockStart.start.toolUse", "response")
            self._blocks[self._index(event, position)] = {"toolUse": {**use, "input": None}}
        elif kind == "contentBlockDelta":
            self._delta(self._index(event, position), event, position)
        elif kind == "messageStop":
            self._stop = event
        elif kind not in ("contentBlockStop", "metadata"):
            stream_problem(f"has an event of type {label(kind)} Blackbox does not know (message {position})")

    def _index(self, event: dict[str, Any], position: int) -> int:
        index = event.get("contentBlockIndex")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            stream_problem(f"has an event without a contentBlockIndex (message {position})")
        return index

    def _delta(self, index: int, event: dict[str, Any], position: int) -> None:
        delta = require_object(event.get("delta"), "contentBlockDelta.delta", "response")
        if "text" in delta:
            block = self._blocks.setdefault(index, {"text": ""})
            block["text"] = block.get("text", "") + require_str(delta["text"], "delta.text", "response")
        elif "toolUse" in delta:
            piece = require_object(delta["toolUse"], "delta.toolUse", "response").get("input", "")
            self._json[index] = self._json.get(index, "") + require_str(
                piece, "delta.toolUse.input", "response"
            )
        elif "reasoningContent" in delta:
            self._blocks.setdefault(index, {"reasoningContent": {}})
        else:
            stream_problem(f"has a delta Blackbox does not know (message {position})")

    def response(self) -> dict[str, Any]:
        if self._stop is None:
            stream_problem("ended before messageStop (it was cut short)", cut_short=True)
        for index, text in self._json.items():
            block = self._blocks.get(index, {}).get("toolUse")
            if block is None:
                stream_problem(f"has tool input for a block that was not started (content block {index})")
            try:
                block["input"] = json.loads(text) if text else {}
            except ValueError:
                stream_problem(f"has tool input that is not complete JSON (content block {index})")
        for block in self._blocks.values():
            if "toolUse" in block and block["toolUse"]["input"] is None:
                block["toolUse"]["input"] = {}
        message = {
            "role": self._role or "assistant",
            "content": [self._blocks[i] for i in sorted(self._blocks)],
        }
        stop = {key: value for key, value in self._stop.items() if key != "stopReason"}
        return {"output": {"message": message}, "stopReason": self._stop.get("stopReason"), **stop}


# -- replay ------------------------------------------------------------------------------------


def _content(output: Any) -> tuple[list[dict[str, Any]], str]:
    """A recorded output's Converse content blocks, and its ``stopReason``."""
    recorded = read_output(output)
    blocks: list[dict[str, Any]] = []
    for part in recorded.parts:
        if part["type"] == "text":
            blocks.append({"text": part["text"]})
        elif part["type"] == "tool_use":
            blocks.append(
                {
                    "toolUse": {
                        "toolUseId": part["toolCallId"],
                        "name": part["toolName"],
                        "input": part["toolInput"],
                    }
                }
            )
        else:
            unsupported(
                f"a recorded {label(part['type'])} part", "a Converse replay returns only text and tool calls"
            )
    reason = _REPLAYED_STOPS.get(recorded.stop or "", "tool_use" if recorded.has_calls else "end_turn")
    return blocks, reason


def synthesize_response(output: Any, **where: Unpack[ReplayArgs]) -> dict[str, Any]:
    """The Converse response a replay returns: the recorded content, zero usage and latency.

    ``where`` is unused: a Converse response names no id, model or time.
    """
    content, reason = _content(output)
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": reason,
        "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
        "metrics": {"latencyMs": 0},
    }


def synthesize_stream(output: Any, **where: Unpack[ReplayArgs]) -> list[bytes]:
    """The event stream a replay serves: text and tool input JSON in fixed-size pieces, then the stop
    and zero usage. ``where`` is unused."""
    content, reason = _content(output)
    events: list[bytes] = [encode_message("messageStart", {"role": "assistant"})]
    for index, block in enumerate(content):
        events.extend(_block_events(index, block))
    events.append(encode_message("messageStop", {"stopReason": reason}))
    usage = {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}
    events.append(encode_message("metadata", {"usage": usage, "metrics": {"latencyMs": 0}}))
    return events


def _block_events(index: int, block: dict[str, Any]) -> list[bytes]:
    """A block's events: a tool use opens with its id and name; text needs no start."""
    deltas: list[dict[str, Any]]
    if "text" in block:
        deltas = [{"text": piece} for piece in pieces(block["text"])]
        events = []
    else:
        use = block["toolUse"]
        start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
        events = [encode_message("contentBlockStart", {"start": start, "contentBlockIndex": index})]
        deltas = [{"toolUse": {"input": piece}} for piece in pieces(js_stringify(use["input"]))]
    events += [
        encode_message("contentBlockDelta", {"delta": delta, "contentBlockIndex": index}) for delta in deltas
    ]
    events.append(encode_message("contentBlockStop", {"contentBlockIndex": index}))
    return events


def is_stream_request(body: Any, *, path: str = "") -> bool:
    """Whether the path is ``converse-stream``: Converse asks for a stream by path, not in the body."""
    return path.endswith("/converse-stream")
