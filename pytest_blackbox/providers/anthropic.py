"""Anthropic Messages API (``POST …/v1/messages``) ↔ neutral step payloads.

A request becomes a ``model_input``: ``system`` the system prompt, ``messages`` neutral messages with
provider tool ids mapped to ``call-N``, custom tools neutral tool definitions, and the behaviour
controls ``params``; image and document blocks become media parts (``media.py``). A response becomes
a ``model_output``. Anything a replay could not give back as it was is refused with a
``BlackboxUnsupportedError`` naming the field, so nothing is recorded that would replay altered.

Thinking blocks are dropped in both directions: a replay cannot return them, so the history an agent
sends back must normalize the same without them.

See docs/providers.md#anthropic-messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, Literal

from ..trace.canonical import js_stringify
from ..trace.model import Message, ModelInput, ModelOutput, Stop, ToolDefinition
from .anthropic_content import DROPPED, Block, block_of, neutral_parts, wire_block
from .common import (
    CallIds,
    ReplayArgs,
    join_text_blocks,
    json_copy,
    label,
    list_field,
    malformed,
    model_input,
    pick_params,
    replayed_model,
    require_object,
    require_str,
    tool_definition,
    unsupported,
)
from .common import is_stream_request as is_stream_request
from .content import TEXT_ADVICE, builtin_tool, neutral_fields, ordered_output, wire_fields
from .media import anthropic_block, anthropic_content, message_content
from .replayed import read_output
from .settings import anthropic_context
from .sse import encode_event, event_object, parse_events, pieces, stream_problem
from .vertex import model_in_path

if TYPE_CHECKING:
    from typing_extensions import Unpack


NAME: Final = "anthropic"
#: The request field that carries the conversation so far (it grows by a few items per call).
HISTORY: Final = "messages"

#: Wire field → neutral ``params`` key, in the order the params object is written.
_PARAMS: Final = (
    ("max_tokens", "maxTokens"),
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("top_k", "topK"),
    ("tool_choice", "toolChoice"),
    ("stop_sequences", "stop"),
    ("output_config", "outputConfig"),
    ("thinking", "thinking"),
    ("context_management", "contextManagement"),
    ("mcp_servers", "mcpServers"),
    ("container", "container"),
)
_BLOCKS_ADVICE: Final = (
    "only text, image, document, tool_use and tool_result blocks can be recorded in this version"
)
#: A provider-defined tool's fields that are not compared: its name and type are, apart, and
#: ``cache_control`` does not change the answer (as for custom tools).
_BUILTIN_SKIP: Final = ("name", "type", "cache_control")
_NOT_RECORDED: Final = "it is not recorded in this version, so a replay could not give it back"
_STOP_REASONS: Final[dict[str | None, Stop | None]] = {
    None: None,
    "end_turn": None,
    "tool_use": None,
    "max_tokens": "length",
    "refusal": "refusal",
    "pause_turn": "pause",
    "stop_sequence": "stopSequence",
    "model_context_window_exceeded": "contextWindow",
}
#: Neutral stop → the ``stop_reason`` a replay sends (any other stop ends the turn as usual).
_REPLAYED_STOPS: Final[dict[str, str]] = {
    stop: reason for reason, stop in _STOP_REASONS.items() if stop is not None and reason is not None
}


# -- requests ----------------------------------------------------------------------------------


def normalize_request(body: Any, ids: CallIds, *, path: str = "") -> ModelInput:
    """The ``model_input`` payload for a Messages request body; refusals are raised before sending.

    ``stream`` is not part of it: a streamed and a plain call with the same content are the same turn.
    The model is the body's, or on Vertex AI the one the ``path`` names (``anthropic_version``, which
    the Vertex client adds to the body, is the protocol's version and is not compared, like the
    ``anthropic-version`` header).
    """
    request = require_object(body, "the request body")
    messages = ids.normalized(list_field(request, HISTORY), lambda raw, index: _message(raw, index, ids))
    tools = ids.reused("tools", request.get("tools"), lambda _: _tools(request))
    if request.get("container") is None:  # a container's id is mapped (``ids.states``): read each time
        read = (path, *[request.get(key, _ABSENT) for key in _SETTINGS])
        system_prompt, model, params = ids.reused("settings", read, lambda _: _settings(request, ids, path))
    else:
        system_prompt, model, params = _settings(request, ids, path)
    return model_input(messages, tools, system_prompt=system_prompt, model=model, params=params)


#: The request fields :func:`_settings` reads (the container apart), and the mark of one left out.
_SETTINGS: Final = ("system", "model", *(wire for wire, _ in _PARAMS))
_ABSENT: Final = object()
Params = dict[str, Any] | None


def _settings(request: dict[str, Any], ids: CallIds, path: str) -> tuple[str | None, Any, Params]:
    """The system prompt, the model and the ``params`` of a request."""
    return (
        _system_prompt(request.get("system")),
        request.get("model", model_in_path(path)),
        pick_params(
            {
                **request,
                "container": _container_named(request.get("container"), ids),
                "context_management": anthropic_context(request.get("context_management")),
            },
            _PARAMS,
        ),
    )


def _tools(request: dict[str, Any]) -> list[ToolDefinition]:
    return [_tool(raw, index) for index, raw in enumerate(list_field(request, "tools"))]


def _container_named(container: Any, ids: CallIds) -> Any:
    """A request's ``container`` (an id, or an object with one) with the id neutral (``providers.state``)."""
    if container is None:
        return None
    named = container.get("id") if isinstance(container, dict) else container
    if not isinstance(named, str):
        malformed("container", 'a string id or an object with a string "id"')
    neutral = ids.states.named("container", named, "container")
    return {**container, "id": neutral} if isinstance(container, dict) else neutral


def _system_prompt(system: Any) -> str | None:
    if system is None or isinstance(system, str):
        return system
    if isinstance(system, list):
        return join_text_blocks(system, "system", TEXT_ADVICE)
    malformed("system", "a string or a list of text blocks")


def _message(raw: Any, index: int, ids: CallIds) -> Message:
    at = f"messages[{index}]"
    message = require_object(raw, at)
    role: Literal["user", "assistant"] = "assistant" if message.get("role") == "assistant" else "user"
    content = message.get("content")
    if isinstance(content, str):
        return {"role": role, "content": content}
    if not isinstance(content, list):
        malformed(f"{at}.content", "a string or a list of content blocks")
    if role == "assistant":
        return {"role": role, "content": _merge_text(_assistant_parts(content, at, ids))}
    parts = [
        part
        for position, block in enumerate(content)
        if (part := _part(block, f"{at}.content[{position}]", ids)) is not None
    ]
    return {"role": role, "content": parts}


def _assistant_parts(content: list[Any], at: str, ids: CallIds) -> list[dict[str, Any]]:
    """An assistant turn read as a response is, so a turn a replay gave back normalizes alike."""
    blocks: list[Block] = []
    for position, raw in enumerate(content):
        where = f"{at}.content[{position}]"
        block = require_object(raw, where)
        if block.get("type") == "tool_result":
            unsupported(
                'a "tool_result" block in an assistant message',
                "tool_result blocks belong in user messages",
                where,
            )
        if (read := block_of(block, where, "request")) is not None:
            blocks.append(read)
    return neutral_parts(blocks, ids, f"{at}.content")


def _part(raw: Any, at: str, ids: CallIds) -> dict[str, Any] | None:
    block = require_object(raw, at)
    kind = block.get("type")
    if isinstance(kind, str) and kind in DROPPED:
        return None
    if kind == "text":
        return {"type": "text", "text": require_str(block.get("text"), f"{at}.text")}
    if kind == "tool_result":
        return _tool_result(block, at, ids)
    if kind in ("image", "document"):
        return anthropic_block(block, at)
    if kind == "tool_use":
        unsupported(
            'a "tool_use" block in a user message', "tool_use blocks belong in assistant messages", at
        )
    unsupported(f"{label(kind)} content blocks", _BLOCKS_ADVICE, at)


def _merge_text(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An assistant turn in order, with each run of text blocks without citations joined into one.

    How plain text is split into blocks is not compared (an agent may join or split what it got),
    but where text stands among the calls is, and so are citations.
    """
    merged: list[dict[str, Any]] = []
    for part in parts:
        plain = part["type"] == "text" and "citations" not in part
        if plain and merged and merged[-1]["type"] == "text" and "citations" not in merged[-1]:
            merged[-1] = {"type": "text", "text": merged[-1]["text"] + "\n\n" + part["text"]}
        else:
            merged.append(part)
    return merged


def _tool_result(block: dict[str, Any], at: str, ids: CallIds) -> dict[str, Any]:
    call_id, name = ids.resolve(require_str(block.get("tool_use_id"), f"{at}.tool_use_id"))
    value = _result_value(block.get("content"), f"{at}.content")
    part: dict[str, Any] = {"type": "tool_result", "toolCallId": call_id, "toolName": name}
    if block.get("is_error") is True:
        part["error"] = value if isinstance(value, str) else js_stringify(value)
    else:
        part["result"] = value
    return part


def _is_tool_reference(block: Any) -> bool:
    """A tool search result's ``{"type": "tool_reference", "tool_name"}`` block (the tool it found)."""
    return (
        isinstance(block, dict)
        and block.get("type") == "tool_reference"
        and isinstance(block.get("tool_name"), str)
    )


def _result_value(content: Any, at: str) -> Any:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and all(_is_tool_reference(block) for block in content):
        return {"toolReferences": [block["tool_name"] for block in content]}
    if isinstance(content, list):
        return message_content(anthropic_content(content, at))
    return json_copy(content)


def _tool(raw: Any, index: int) -> ToolDefinition:
    at = f"tools[{index}]"
    tool = require_object(raw, at)
    kind = tool.get("type")
    if kind is not None and kind != "custom":
        name = require_str(tool.get("name"), f"{at}.name")
        return builtin_tool(name, require_str(kind, f"{at}.type"), tool, _BUILTIN_SKIP)
    strict = tool.get("strict")
    if strict is not None and strict is not False:
        unsupported(
            "strict: true on a tool", f"leave strict out or set it to false; {_NOT_RECORDED}", f"{at}.strict"
        )
    return tool_definition(
        require_str(tool.get("name"), f"{at}.name"), tool.get("description"), tool.get("input_schema")
    )


# -- responses ---------------------------------------------------------------------------------


def normalize_response(body: Any, ids: CallIds) -> ModelOutput:
    """The ``model_output`` payload for a Messages response body, its blocks in order.

    Everything is checked before a provider id is mapped, so a refused response assigns no ``call-N``.
    """
    response = require_object(body, "the response body", "response")
    blocks = [
        read
        for index, raw in enumerate(list_field(response, "content", "response"))
        if (
            read := block_of(
                require_object(raw, f"content[{index}]", "response"), f"content[{index}]", "response"
            )
        )
        is not None
    ]
    stop = _stop(response.get("stop_reason"), has_calls=any(part["type"] == "tool_use" for part, _ in blocks))
    if response.get("stop_details") is not None:
        unsupported("stop_details in a response", _NOT_RECORDED, "stop_details")
    output = ordered_output(neutral_parts(blocks, ids, "content"), stop)
    if response.get("container") is not None:
        container = require_object(response["container"], "container", "response")
        provider_id = require_str(container.get("id"), "container.id", "response")
        fields = neutral_fields({key: value for key, value in container.items() if key != "id"}, "container")
        output["container"] = {"id": ids.states.handed_out("container", provider_id), **fields}
    if stop == "stopSequence" and output["type"] == "final_answer":
        output["stopSequence"] = require_str(response.get("stop_sequence"), "stop_sequence", "response")
    return output


def _stop(reason: Any, *, has_calls: bool) -> Stop | None:
    if has_calls and reason in ("refusal", "stop_sequence", "model_context_window_exceeded"):
        unsupported(
            f"stop_reason {reason} together with tool calls",
            "a replay returns this stop with text alone",
            "stop_reason",
        )
    if not isinstance(reason, (str, type(None))) or reason not in _STOP_REASONS:
        unsupported(f"stop_reason {label(reason)}", "a replay could not return it", "stop_reason")
    return _STOP_REASONS[reason]


# -- replay ------------------------------------------------------------------------------------


def synthesize_response(output: Any, **where: Unpack[ReplayArgs]) -> dict[str, Any]:
    """The Messages response a replay returns for a recorded output.

    Tool-use ids are the neutral ``call-N`` ids and usage is zero. ``timestamp`` is unused: the
    Messages API carries no creation time.
    """
    recorded = read_output(output)
    content = [wire_block(part) for part in recorded.parts]
    return {
        "id": f"blackbox-replay-{where['output_index']}",
        "type": "message",
        "role": "assistant",
        "model": replayed_model(where),
        "content": content,
        "stop_reason": _REPLAYED_STOPS.get(
            recorded.stop or "", "tool_use" if recorded.has_calls else "end_turn"
        ),
        "stop_sequence": recorded.stop_sequence,
        "stop_details": None,
        "container": None if recorded.container is None else _wire_container(recorded.container),
        "diagnostics": None,
        "usage": {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_creation_input_tokens": None,
            "cache_read_input_tokens": None,
            "cache_creation": None,
            "server_tool_use": None,
            "service_tier": None,
            "inference_geo": None,
            "output_tokens_details": None,
        },
    }


def _wire_container(recorded: dict[str, Any]) -> dict[str, Any]:
    """The ``container`` a replay sends: the recorded one, its id the neutral one."""
    return {
        "id": recorded["id"],
        **wire_fields({key: value for key, value in recorded.items() if key != "id"}),
    }


def error_body(message: str) -> dict[str, Any]:
    """The Messages API error shape, so the SDK raises (and does not retry) a ``[blackbox]`` error."""
    text = message if message.startswith("[blackbox]") else f"[blackbox] {message}"
    return {"type": "error", "error": {"type": "invalid_request_error", "message": text}}


# -- streams -----------------------------------------------------------------------------------


def collect_stream(body: bytes) -> dict[str, Any]:
    """The Messages response a complete event stream adds up to, ready for :func:`normalize_response`.

    Events are read as the SDK reads them (an event without an ``event:`` line is skipped). An
    ``error`` event, or a stream that ends before ``message_stop``, is refused: there is no whole
    answer to record.
    """
    return collect_events(
        (position, event_object(event, position))
        for position, event in enumerate(parse_events(body))
        if event.event is not None
    )


def collect_events(events: Iterable[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    """The Messages response a stream's events (each with its position) add up to, however they were
    framed: SSE, or Amazon Bedrock's event stream."""
    collector = _MessageCollector()
    for position, event in events:
        collector.add(event, position)
    return collector.message()


class _MessageCollector:
    """Adds stream events up into the message they describe, the way the SDK's stream helper does."""

    def __init__(self) -> None:
        self._message: dict[str, Any] | None = None
        self._blocks: list[dict[str, Any]] = []
        self._json: dict[int, str] = {}
        self._stopped = False

    def add(self, event: dict[str, Any], position: int) -> None:
        kind = event.get("type")
        if kind in ("ping", "content_block_stop") or self._stopped:
            return
        if kind == "error":
            error = event.get("error")
            error_type = error.get("type") if isinstance(error, dict) else None
            stream_problem(f"reported an error ({label(error_type)}) at event {position}")
        if kind == "message_start":
            if self._message is not None:
                stream_problem(f"has a second message_start at event {position}")
            self._message = require_object(event.get("message"), "message_start.message", "response")
            self._blocks = list(list_field(self._message, "content", "response"))
            return
        if self._message is None:
            stream_problem(f"sends {label(kind)} before message_start (event {position})")
        if kind == "content_block_start":
            self._start_block(event, position)
        elif kind == "content_block_delta":
            self._delta(event, position)
        elif kind == "message_delta":
            self._message.update(require_object(event.get("delta"), "message_delta.delta", "response"))
            usage = event.get("usage")
            if isinstance(usage, dict):
                self._message["usage"] = {**(self._message.get("usage") or {}), **usage}
        elif kind == "message_stop":
            self._stopped = True
        else:
            stream_problem(f"has an event of type {label(kind)} Blackbox does not know (event {position})")

    def _start_block(self, event: dict[str, Any], position: int) -> None:
        if event.get("index") != len(self._blocks):
            stream_problem(f"starts a content block out of order (event {position})")
        block = require_object(event.get("content_block"), "content_block_start.content_block", "response")
        self._blocks.append(dict(block))

    def _delta(self, event: dict[str, Any], position: int) -> None:
        index = event.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self._blocks):
            stream_problem(f"has a delta for a content block that was not started (event {position})")
        block = self._blocks[index]
        delta = require_object(event.get("delta"), "content_block_delta.delta", "response")
        kind = delta.get("type")
        if kind == "text_delta":
            piece = require_str(delta.get("text"), "text_delta.text", "response")
            block["text"] = block.get("text", "") + piece
        elif kind == "input_json_delta":
            piece = require_str(delta.get("partial_json"), "input_json_delta.partial_json", "response")
            self._json[index] = self._json.get(index, "") + piece
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature")
        elif kind == "citations_delta":
            block["citations"] = [*(block.get("citations") or []), delta.get("citation")]
        elif kind == "compaction_delta":
            block["content"] = delta.get("content")
            block["encrypted_content"] = delta.get("encrypted_content")
        else:
            stream_problem(f"has a {label(kind)} delta that Blackbox does not know (event {position})")

    def message(self) -> dict[str, Any]:
        message = self._message
        if message is None:
            stream_problem("has no message_start event", cut_short=True)
        if not self._stopped:
            answered = message.get("stop_reason") is not None  # only message_stop is missing
            stream_problem(
                "ended before message_stop (it was cut short)",
                cut_short=True,
                whole=self._whole(message) if answered else None,
            )
        return self._whole(message)

    def _whole(self, message: dict[str, Any]) -> dict[str, Any]:
        for index, text in self._json.items():
            if text:
                self._blocks[index]["input"] = _tool_input_json(text, index)
        return {**message, "content": self._blocks}


def _tool_input_json(text: str, index: int) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        stream_problem(f"has tool input that is not complete JSON (content block {index})")


def synthesize_stream(output: Any, **where: Unpack[ReplayArgs]) -> list[bytes]:
    """The event stream a replay serves for a recorded output, one item per event (see
    :func:`stream_events`). ``request_body`` is unused: a Messages stream has no request-dependent parts.
    """
    return [encode_event(event["type"], event) for event in stream_events(output, **where)]


def stream_events(output: Any, **where: Unpack[ReplayArgs]) -> list[dict[str, Any]]:
    """The events of a replayed stream, as JSON objects, whatever framing carries them.

    They carry exactly :func:`synthesize_response`'s message: ``message_start`` with no content and
    zero usage, each block's start, deltas (text, or the input's JSON text, in fixed-size pieces) and
    stop, then ``message_delta`` with the stop reason and ``message_stop``.
    """
    message = synthesize_response(output, **where)
    start = {**message, "content": [], "stop_reason": None, "container": None}
    events = [_event("message_start", message=start), _event("ping")]
    for index, block in enumerate(message["content"]):
        events.extend(_block_events(index, block))
    stop = {
        "stop_reason": message["stop_reason"],
        "stop_sequence": message["stop_sequence"],
        "stop_details": None,
    }
    if message["container"] is not None:  # the API names the container in the delta
        stop["container"] = message["container"]
    events.append(_event("message_delta", delta=stop, usage={"output_tokens": 0}))
    events.append(_event("message_stop"))
    return events


def _block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    """A block's start, deltas and stop; a tool result block comes whole in its start, as the API sends it."""
    deltas: list[dict[str, Any]] = []
    if block["type"] == "text":
        citations = block["citations"] or []
        opening: dict[str, Any] = {"type": "text", "text": "", "citations": [] if citations else None}
        deltas += [{"type": "citations_delta", "citation": citation} for citation in citations]
        deltas += [{"type": "text_delta", "text": piece} for piece in pieces(block["text"])]
    elif block["type"] == "compaction":
        opening = {key: value for key, value in block.items() if key not in ("content", "encrypted_content")}
        summary = {key: block.get(key) for key in ("content", "encrypted_content")}
        deltas = [{"type": "compaction_delta", **summary}]
    elif "input" in block:
        opening = {**block, "input": {}}
        json_text = js_stringify(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces(json_text)]
    else:
        opening = block
    return [
        _event("content_block_start", index=index, content_block=opening),
        *(_event("content_block_delta", index=index, delta=delta) for delta in deltas),
        _event("content_block_stop", index=index),
    ]


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}
