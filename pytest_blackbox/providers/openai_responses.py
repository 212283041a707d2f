"""OpenAI Responses API (``POST …/responses``) ↔ neutral step payloads.

A request becomes a ``model_input`` as a Chat Completions request does: ``instructions`` and the
leading ``system`` / ``developer`` input items the system prompt; ``message`` items the messages; an
assistant message with the ``function_call`` items after it one assistant turn of tool calls;
consecutive ``function_call_output`` items one user turn of tool results; function tools neutral
tool definitions; the behaviour controls ``params``. Reasoning items are dropped, as thinking blocks
are: a replay cannot return them, so the history an agent sends back must normalize the same.

Conversation state kept by the provider (``previous_response_id``, ``conversation``, item references,
stored prompts, background responses) is refused: the request would not carry the conversation, so a
cassette could neither hold it nor compare it, and a replayed response id means nothing to the
server a live fork continues on. Built-in tools are refused as server tools are for Anthropic.

See docs/providers.md#openai-responses.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from ..trace.model import Message, ModelInput, ModelOutput, ToolCallRef, ToolDefinition
from .common import (
    CallIds,
    arguments_text,
    azure_deployment,
    final_answer,
    is_stream_request,
    join_text_blocks,
    label,
    list_field,
    malformed,
    model_input,
    parse_arguments,
    pick_params,
    present,
    read_output,
    require_object,
    require_str,
    tool_calls_output,
    tool_definition,
    unsupported,
)
from .media import RESPONSES_MEDIA, responses_media, text_or_media
from .openai_chat import error_body
from .sse import encode_event, event_object, parse_events, pieces, stream_problem

__all__ = [
    "HISTORY",
    "NAME",
    "ROUTE",
    "SIDE_ROUTES",
    "collect_stream",
    "error_body",
    "is_stream_request",
    "normalize_request",
    "normalize_response",
    "synthesize_response",
    "synthesize_stream",
]

NAME: Final = "openai_responses"
#: The Responses endpoint, under any base URL; its sub-resources (``/responses/{id}``) are not model calls.
ROUTE: Final = r"/responses$"
#: The request field that carries the conversation so far (it grows by a few items per call).
HISTORY: Final = "input"
#: The SDK's side calls of this API (not model calls): refused, see ``providers.side_call_of``.
SIDE_ROUTES: Final[dict[str, str]] = {"responses.input_tokens.count": r"/responses/input_tokens$"}

#: Wire field → neutral ``params`` key, in the order the params object is written. ``text.format``,
#: ``text.verbosity`` and the tools' ``strict`` flags are lifted to the top level before picking.
_PARAMS: Final = (
    ("max_output_tokens", "maxTokens"),
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("tool_choice", "toolChoice"),
    ("parallel_tool_calls", "parallelToolCalls"),
    ("max_tool_calls", "maxToolCalls"),
    ("reasoning", "reasoning"),
    ("text.format", "responseFormat"),
    ("text.verbosity", "verbosity"),
    ("top_logprobs", "topLogprobs"),
    ("truncation", "truncation"),
    ("tools.strict", "toolStrict"),
    ("path.deployment", "azureDeployment"),
)
_SERVER_STATE: Final = (
    ("previous_response_id", "previous_response_id (a conversation kept by the provider)"),
    ("conversation", "conversation (a conversation kept by the provider)"),
    ("prompt", "a stored prompt (prompt)"),
)
_SERVER_STATE_ADVICE: Final = (
    "send the whole conversation in input and the prompt text in instructions, so the cassette holds "
    "what the model saw and a replay can compare it"
)
_INSTRUCTION_ROLES: Final = ("system", "developer")
_TEXT_PARTS: Final = ("input_text", "output_text")
_TEXT_ADVICE: Final = "only text content can be recorded in this version"
_REFUSAL_HISTORY_ADVICE: Final = "a refusal in the history would be recorded as ordinary text"
_ITEMS_ADVICE: Final = (
    "only message, function_call, function_call_output and reasoning items can be recorded in this version"
)
_ONE_TEXT_ADVICE: Final = (
    "a replay returns one message with one text part before the function calls, "
    "so this response could not come back as it was"
)
_NOT_RECORDED: Final = "it is not recorded in this version, so a replay could not give it back"


# -- requests ----------------------------------------------------------------------------------


def normalize_request(body: Any, ids: CallIds, *, path: str = "") -> ModelInput:
    """The ``model_input`` payload for a Responses request body; refusals come before sending.

    ``stream`` and ``stream_options`` are not part of it, nor is ``store``: keeping a response on the
    server does not change the answer; only referring back to kept state does, and that is refused.
    ``path`` gives only the Azure OpenAI deployment it names; the Responses API carries the rest in the body.
    """
    request = require_object(body, "the request body")
    _check_request(request)
    items = _input_items(request.get("input"))
    instructions = [] if request.get("instructions") is None else [_instructions(request["instructions"])]
    start = 0
    while start < len(items) and _message_role(items[start], start) in _INSTRUCTION_ROLES:
        instructions.append(_content_text(items[start].get("content"), f"input[{start}].content"))
        start += 1
    transcript = _Transcript(ids)
    for index in range(start, len(items)):
        transcript.add(items[index], index)
    tools = list_field(request, "tools")
    return model_input(
        transcript.messages(),
        [_tool(raw, index) for index, raw in enumerate(tools)],
        system_prompt="\n\n".join(instructions) if instructions else None,
        model=request.get("model"),
        params=pick_params(
            {**_lifted_controls(request, tools), "path.deployment": azure_deployment(path)}, _PARAMS
        ),
    )


def _check_request(request: dict[str, Any]) -> None:
    for field, what in _SERVER_STATE:
        if request.get(field) is not None:
            unsupported(what, _SERVER_STATE_ADVICE, field)
    if request.get("background") is True:
        unsupported(
            "background responses",
            "they are fetched later by id, which a replay cannot serve; leave background off",
            "background",
        )


def _instructions(value: Any) -> str:
    if not isinstance(value, str):
        malformed("instructions", "a string")
    return value


def _input_items(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, list):
        malformed("input", "a string or a list of input items")
    return value


def _message_role(raw: Any, index: int) -> Any:
    """The role of a message item, or ``None`` for any other kind of item."""
    item = require_object(raw, f"input[{index}]")
    return item.get("role") if item.get("type", "message") in (None, "message") else None


def _lifted_controls(request: dict[str, Any], tools: list[Any]) -> dict[str, Any]:
    text = request.get("text")
    if text is not None and not isinstance(text, dict):
        malformed("text", "a JSON object")
    strict = {
        tool["name"]: tool["strict"]
        for tool in tools
        if isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool.get("strict") is not None
    }
    return {
        **request,
        "text.format": (text or {}).get("format"),
        "text.verbosity": (text or {}).get("verbosity"),
        "tools.strict": strict or None,
    }


def _media(content: Any, at: str) -> str | list[dict[str, Any]]:
    return text_or_media(content, at, _content_text, responses_media, RESPONSES_MEDIA, _TEXT_PARTS)


def _content_text(content: Any, at: str) -> str:
    """Message content as text: text parts joined with a blank line, nothing else accepted."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        malformed(at, "a string or a list of content parts")
    for index, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") == "refusal":
            unsupported("a refusal part in the history", _REFUSAL_HISTORY_ADVICE, f"{at}[{index}]")
    texts = [
        {"type": "text", "text": part.get("text")}
        if isinstance(part, dict) and part.get("type") in _TEXT_PARTS
        else part
        for part in content
    ]
    return join_text_blocks(texts, at, _TEXT_ADVICE)


class _Transcript:
    """Input items → neutral messages, grouping items the way one model turn produces them.

    An assistant message opens an assistant turn and the ``function_call`` items right after it join
    that turn; consecutive ``function_call_output`` items form one user turn of tool results. That is
    the shape a replayed turn comes back in, so a history sent back from a replay normalizes alike.
    """

    def __init__(self, ids: CallIds) -> None:
        self._ids = ids
        self._messages: list[Message] = []
        self._text: str | None = None
        self._calls: list[dict[str, Any]] = []
        self._results: list[dict[str, Any]] | None = None

    def add(self, raw: Any, index: int) -> None:
        at = f"input[{index}]"
        item = require_object(raw, at)
        kind = item.get("type", "message")
        if kind is None or kind == "message":
            self._message(item, at)
        elif kind == "function_call":
            self._results = None
            if self._text is None:
                self._text = ""
            self._calls.append(self._function_call(item, at))
        elif kind == "function_call_output":
            self._close_assistant()
            if self._results is None:
                self._results = []
                self._messages.append({"role": "user", "content": self._results})
            self._results.append(self._function_call_output(item, at))
        elif kind == "item_reference":
            unsupported("item references (items kept by the provider)", _SERVER_STATE_ADVICE, at)
        elif kind != "reasoning":
            unsupported(f"{label(kind)} input items", _ITEMS_ADVICE, at)

    def messages(self) -> list[Message]:
        self._close_assistant()
        return self._messages

    def _message(self, item: dict[str, Any], at: str) -> None:
        self._close_assistant()
        self._results = None
        role = item.get("role")
        if role == "user":
            self._messages.append({"role": "user", "content": _media(item.get("content"), f"{at}.content")})
        elif role == "assistant":
            self._text = _content_text(item.get("content"), f"{at}.content")
        elif role in _INSTRUCTION_ROLES:
            unsupported(
                f"a {role} message after the conversation starts",
                "put system and developer messages first",
                at,
            )
        else:
            unsupported(
                f"{label(role)} messages", "use user, assistant, system or developer messages", f"{at}.role"
            )

    def _function_call(self, item: dict[str, Any], at: str) -> dict[str, Any]:
        name = require_str(item.get("name"), f"{at}.name")
        call_id = self._ids.neutral(require_str(item.get("call_id"), f"{at}.call_id"), name)
        return {
            "type": "tool_use",
            "toolCallId": call_id,
            "toolName": name,
            "toolInput": parse_arguments(item.get("arguments")),
        }

    def _function_call_output(self, item: dict[str, Any], at: str) -> dict[str, Any]:
        """The output is kept as the text the agent sent: never parsed, never an error."""
        call_id, name = self._ids.resolve(require_str(item.get("call_id"), f"{at}.call_id"))
        output = item.get("output")
        if not isinstance(output, (str, list)):
            malformed(f"{at}.output", "a string or a list of content parts")
        result = _media(output, f"{at}.output")
        return {"type": "tool_result", "toolCallId": call_id, "toolName": name, "result": result}

    def _close_assistant(self) -> None:
        if self._text is None:
            return
        if self._calls:
            text_part = [{"type": "text", "text": self._text}] if self._text else []
            self._messages.append({"role": "assistant", "content": text_part + self._calls})
        else:
            self._messages.append({"role": "assistant", "content": self._text})
        self._text, self._calls = None, []


def _tool(raw: Any, index: int) -> ToolDefinition:
    at = f"tools[{index}]"
    tool = require_object(raw, at)
    kind = tool.get("type")
    if kind != "function":
        unsupported(
            f"built-in tool {label(kind)}",
            "only function tools can be recorded in this version; do the work in a wrapped tool",
            at,
        )
    name = require_str(tool.get("name"), f"{at}.name")
    return tool_definition(name, tool.get("description"), tool.get("parameters"))


# -- responses ---------------------------------------------------------------------------------


def normalize_response(body: Any, ids: CallIds) -> ModelOutput:
    """The ``model_output`` payload for a Responses response body.

    Everything is checked before a provider id is mapped, so a refused response assigns no ``call-N``.
    """
    response = require_object(body, "the response body", "response")
    stop = _status_stop(response)
    text, refusal, calls = _response_output(response)
    if refusal is not None:
        if text or calls or stop is not None:
            unsupported(
                "a refusal together with text, function calls or an incomplete status",
                "a replay returns a refusal alone",
                "output",
            )
        return final_answer(refusal, "refusal")
    if calls:
        neutral_calls: list[ToolCallRef] = [
            {
                "toolCallId": ids.neutral(call_id, name),
                "toolName": name,
                "toolInput": parse_arguments(arguments),
            }
            for call_id, name, arguments in calls
        ]
        return tool_calls_output(neutral_calls, text, stop)
    return final_answer(text, stop)


def _status_stop(response: dict[str, Any]) -> Literal["length"] | None:
    status = response.get("status")
    if status in (None, "completed"):
        return None
    if status != "incomplete":
        unsupported(
            f"a response with status {label(status)}",
            "only completed responses, or ones cut at max_output_tokens, can be recorded",
            "status",
        )
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    if reason == "max_output_tokens":
        return "length"
    if reason == "content_filter":
        unsupported(
            "a response stopped by the content filter",
            "a replay would return it as a normal stop",
            "incomplete_details.reason",
        )
    unsupported(
        f"an incomplete response with reason {label(reason)}",
        "a replay could not return it",
        "incomplete_details.reason",
    )


def _response_output(response: dict[str, Any]) -> tuple[str, str | None, list[tuple[str, str, Any]]]:
    text: str | None = None
    refusal: str | None = None
    calls: list[tuple[str, str, Any]] = []
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
                piece, refused = _output_part(require_object(part, where, "response"), where)
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
    return text or "", refusal, calls


def _output_part(part: dict[str, Any], at: str) -> tuple[str, bool]:
    """``(text, is_refusal)`` of a message content part."""
    kind = part.get("type")
    if kind == "refusal":
        return require_str(part.get("refusal"), f"{at}.refusal", "response"), True
    if kind != "output_text":
        unsupported(f"{label(kind)} content in a response", _TEXT_ADVICE, at)
    if present(part.get("annotations")):
        unsupported("annotations in a response", _NOT_RECORDED, f"{at}.annotations")
    if present(part.get("logprobs")):
        unsupported("logprobs in a response", f"leave them out of include; {_NOT_RECORDED}", f"{at}.logprobs")
    return require_str(part.get("text"), f"{at}.text", "response"), False


# -- replay ------------------------------------------------------------------------------------


def synthesize_response(
    output: Any, *, output_index: int, model: str | None, timestamp: int | float
) -> dict[str, Any]:
    """The Responses response a replay returns for a recorded output.

    The response id is ``blackbox-replay-<i>``; item ids keep the API's ``msg_`` / ``fc_`` prefixes
    and are derived from it; call ids are the neutral ``call-N``; usage is zero; ``created_at`` is the
    recorded step's time in seconds. A final answer always has a message item, so ``output_text``
    reads as it did live, even for an empty answer.
    """
    recorded = read_output(output)
    response_id = f"blackbox-replay-{output_index}"
    incomplete = recorded.stop == "length"
    items: list[dict[str, Any]] = []
    if recorded.text or not recorded.has_calls:
        part: dict[str, Any] = (
            {"type": "refusal", "refusal": recorded.text}
            if recorded.stop == "refusal"
            else {"type": "output_text", "text": recorded.text, "annotations": [], "logprobs": []}
        )
        items.append(
            {
                "id": f"msg_blackbox_replay_{output_index}_0",
                "type": "message",
                "role": "assistant",
                "status": "incomplete" if incomplete else "completed",
                "content": [part],
            }
        )
    for call in recorded.calls:
        items.append(
            {
                "id": f"fc_blackbox_replay_{output_index}_{len(items)}",
                "type": "function_call",
                "call_id": call["toolCallId"],
                "name": call["toolName"],
                "arguments": arguments_text(call["toolInput"]),
                "status": "completed",
            }
        )
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(timestamp // 1000),
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": None,
        "model": model if model is not None else "unknown",
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


# -- streams -----------------------------------------------------------------------------------


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


def synthesize_stream(
    output: Any,
    *,
    output_index: int,
    model: str | None,
    timestamp: int | float,
    request_body: Any = None,
) -> list[bytes]:
    """The event stream a replay serves for a recorded output, one item per event.

    It carries exactly :func:`synthesize_response`'s response: ``response.created`` and
    ``response.in_progress`` (status ``in_progress``, no output), each item's ``added`` event, its
    text, refusal or arguments in fixed-size deltas and its ``done`` events, then
    ``response.completed`` (or ``response.incomplete`` for a length stop). Every event carries a
    ``sequence_number`` counting from 0. ``request_body`` is unused.
    """
    response = synthesize_response(output, output_index=output_index, model=model, timestamp=timestamp)
    stream = _EventWriter()
    opening = {**response, "status": "in_progress", "output": [], "incomplete_details": None, "usage": None}
    stream.add("response.created", response=opening)
    stream.add("response.in_progress", response=opening)
    for position, item in enumerate(response["output"]):
        if item["type"] == "message":
            _message_events(stream, position, item)
        else:
            _function_call_events(stream, position, item)
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
        empty = {**part, "text": ""}
        stream.add("response.content_part.added", **where, content_index=0, part=empty)
        for piece in pieces(part["text"]):
            stream.add("response.output_text.delta", **where, content_index=0, delta=piece, logprobs=[])
        stream.add("response.output_text.done", **where, content_index=0, text=part["text"], logprobs=[])
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
