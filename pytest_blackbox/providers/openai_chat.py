"""OpenAI Chat Completions (``POST …/chat/completions``) ↔ neutral step payloads.

A request becomes a ``model_input``: the leading ``system`` / ``developer`` messages the system
prompt, the rest neutral messages (consecutive ``tool`` messages grouped into one user turn of tool
results), function tools neutral tool definitions, and the behaviour controls ``params``. A response
becomes a ``model_output``, with tool-call arguments parsed when they are JSON.

Fields a cassette cannot carry faithfully (audio, the legacy functions API, message names, …) are
refused, naming the field. Strict function tools are recorded in ``params.toolStrict`` (agent
frameworks send them by default), several choices (``n``) through ``providers.choices``. See
docs/providers.md#openai-chat-completions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal

from ..trace.model import Message, ModelInput, ModelOutput, Stop, ToolCallRef, ToolDefinition
from . import choices as several
from .common import (
    CallIds,
    ReplayArgs,
    arguments_text,
    azure_deployment,
    final_answer,
    label,
    list_field,
    malformed,
    model_input,
    parse_arguments,
    pick_params,
    replayed_model,
    require_object,
    require_str,
    tool_calls_output,
    tool_definition,
    unsupported,
)
from .common import is_stream_request as is_stream_request
from .content import (
    INSTRUCTION_ROLES,
    REFUSAL_HISTORY_ADVICE,
    content_text,
    late_instruction,
    nested_citations_of,
    nested_wire,
    ordered_output,
    text_part,
)
from .envelope import (
    chat_logprobs,
    chat_logprobs_wire,
    chat_omitted,
    merge_chat_logprobs,
    wire_json,
    with_envelope,
)
from .media import CHAT_MEDIA, chat_media, text_or_media
from .reasoning import JOINED_DELTAS, chat_reasoning, reasoning_deltas, reasoning_wire
from .replayed import read_output
from .sse import encode_event, event_object, parse_events, pieces, stream_problem

if TYPE_CHECKING:
    from typing_extensions import Unpack


NAME: Final = "openai_chat"
#: The request field that carries the conversation so far (it grows by a few items per call).
HISTORY: Final = "messages"

#: Wire field → neutral ``params`` key, in the order the params object is written. The tools'
#: ``strict`` flags are lifted to the top level before picking.
_PARAMS: Final = (
    ("max_tokens", "maxTokens"),
    ("max_completion_tokens", "maxTokens"),
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("tool_choice", "toolChoice"),
    ("response_format", "responseFormat"),
    ("stop", "stop"),
    ("parallel_tool_calls", "parallelToolCalls"),
    ("seed", "seed"),
    ("reasoning_effort", "reasoningEffort"),
    ("presence_penalty", "presencePenalty"),
    ("frequency_penalty", "frequencyPenalty"),
    ("logit_bias", "logitBias"),
    ("logprobs", "logprobs"),
    ("top_logprobs", "topLogprobs"),
    ("verbosity", "verbosity"),
    ("prediction", "prediction"),
    ("modalities", "modalities"),
    ("web_search_options", "webSearchOptions"),
    ("moderation", "moderation"),
    ("n", "choiceCount"),
    ("tools.strict", "toolStrict"),
    ("path.deployment", "azureDeployment"),
)
_LEGACY_ADVICE: Final = "use tools and tool_choice instead of the legacy functions API"
_AUDIO_ADVICE: Final = "request text output; audio cannot be recorded in this version"
_FUNCTION_TOOLS_ADVICE: Final = "only function tools can be recorded in this version"
_FINISH_REASONS: Final = (None, "stop", "length", "tool_calls", "content_filter")
#: finish_reason → neutral stop, and back for a replay (``stop`` and ``tool_calls`` are no stop).
_STOPS: Final[dict[str, Stop]] = {"length": "length", "content_filter": "contentFilter"}
_REPLAYED_STOPS: Final[dict[str, str]] = {stop: reason for reason, stop in _STOPS.items()}


# -- requests ----------------------------------------------------------------------------------


def normalize_request(body: Any, ids: CallIds, *, path: str = "") -> ModelInput:
    """The ``model_input`` payload for a Chat Completions request body; refusals come before sending.

    ``path`` gives only the Azure OpenAI deployment it names; Chat Completions carries the rest in the body.
    """
    request = several.counted(require_object(body, "the request body"))
    _check_request(request)
    raw_messages = list_field(request, "messages")
    instructions: list[str] = []
    start = 0
    while start < len(raw_messages) and _role(raw_messages[start], start) in INSTRUCTION_ROLES:
        instructions.append(content_text(raw_messages[start].get("content"), f"messages[{start}].content"))
        start += 1
    messages = _messages(raw_messages, start, ids)
    tools = list_field(request, "tools")
    definitions = [_tool(raw, index) for index, raw in enumerate(tools)]
    return model_input(
        messages,
        definitions,
        system_prompt="\n\n".join(instructions) if instructions else None,
        model=request.get("model"),
        params=pick_params(
            {**request, "tools.strict": _strict_tools(tools), "path.deployment": azure_deployment(path)},
            _PARAMS,
        ),
    )


def _strict_tools(tools: list[Any]) -> dict[str, bool] | None:
    """``{name: True}`` for the tools sent with ``strict: true`` (checked by ``_tool``), else ``None``.

    Unlike the Responses API, Chat Completions tools are not strict unless told, so ``strict: false``
    records like leaving it out, and cassettes recorded without strict tools keep replaying.
    """
    strict = {tool["function"]["name"]: True for tool in tools if tool["function"].get("strict") is True}
    return strict or None


def _check_request(request: dict[str, Any]) -> None:
    if request.get("audio") is not None:
        unsupported("the audio request field (audio output)", _AUDIO_ADVICE, "audio")
    for field in ("functions", "function_call"):
        if request.get(field) is not None:
            unsupported(f"the legacy {field} request field", _LEGACY_ADVICE, field)
    if request.get("max_tokens") is not None and request.get("max_completion_tokens") is not None:
        unsupported(
            "both max_tokens and max_completion_tokens in one request",
            "send one of them; they are recorded as one value",
            "max_tokens, max_completion_tokens",
        )


def _role(raw: Any, index: int) -> Any:
    """The role of a checked message: every message is checked before it is used."""
    at = f"messages[{index}]"
    message = require_object(raw, at)
    if message.get("name") is not None and message.get("role") != "tool":  # a tool's: see _tool_result
        unsupported(
            "a message name", "leave name out; message names are not recorded in this version", f"{at}.name"
        )
    if message.get("function_call") is not None:
        unsupported("a legacy function_call in the history", _LEGACY_ADVICE, f"{at}.function_call")
    if message.get("audio") is not None:
        unsupported("audio in the history", _AUDIO_ADVICE, f"{at}.audio")
    if message.get("refusal") is not None:
        unsupported("an assistant refusal in the history", REFUSAL_HISTORY_ADVICE, f"{at}.refusal")
    return message.get("role")


def _messages(raw_messages: list[Any], start: int, ids: CallIds) -> list[Message]:
    messages: list[Message] = []
    results: list[dict[str, Any]] | None = None
    for index in range(start, len(raw_messages)):
        at = f"messages[{index}]"
        role = _role(raw_messages[index], index)
        message: dict[str, Any] = raw_messages[index]
        if role == "tool":
            if results is None:
                results = []
                messages.append({"role": "user", "content": results})
            results.append(_tool_result(message, at, ids))
            continue
        results = None
        if role == "user":
            messages.append({"role": "user", "content": _media_content(message, at)})
        elif role == "assistant":
            messages.append(_assistant(message, at, ids))
        elif role in INSTRUCTION_ROLES:
            late_instruction(role, at)
        else:
            unsupported(
                f"{label(role)} messages",
                "use user, assistant, tool, system or developer messages",
                f"{at}.role",
            )
    return messages


def _media_content(message: dict[str, Any], at: str) -> str | list[dict[str, Any]]:
    """A user or tool message's content: its text, or its text and media parts in order."""
    return text_or_media(message.get("content"), f"{at}.content", content_text, chat_media, CHAT_MEDIA)


def _tool_result(message: dict[str, Any], at: str, ids: CallIds) -> dict[str, Any]:
    """A tool message's content is kept as the agent sent it, never parsed, never an error: its text,
    or its text and media parts in order (a screenshot tool's, for OpenAI-compatible servers).

    A ``name`` is accepted when it is the called function's (instructor sends one with each re-ask):
    the recorded ``toolName`` already says it. Any other name would be lost, so it is refused.
    """
    call_id, name = ids.resolve(require_str(message.get("tool_call_id"), f"{at}.tool_call_id"))
    if message.get("name") not in (None, name):
        unsupported(
            "a tool message name other than its call's function name",
            "leave name out, or send the name of the function called",
            f"{at}.name",
        )
    result = _media_content(message, at)
    return {"type": "tool_result", "toolCallId": call_id, "toolName": name, "result": result}


def _assistant(message: dict[str, Any], at: str, ids: CallIds) -> Message:
    text = content_text(message.get("content"), f"{at}.content")
    tool_calls = message.get("tool_calls")
    if tool_calls is None or tool_calls == []:
        return {"role": "assistant", "content": text}
    if not isinstance(tool_calls, list):
        malformed(f"{at}.tool_calls", "a list")
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for index, raw in enumerate(tool_calls):
        name, provider_id, arguments = _function_call(raw, f"{at}.tool_calls[{index}]", "request")
        parts.append(
            {
                "type": "tool_use",
                "toolCallId": ids.neutral(provider_id, name),
                "toolName": name,
                "toolInput": parse_arguments(arguments),
            }
        )
    return {"role": "assistant", "content": parts}


def _function_call(raw: Any, at: str, side: str) -> tuple[str, str, Any]:
    """``(name, provider id, raw arguments)`` of a function tool call."""
    call = require_object(raw, at, side)
    if call.get("type") != "function" or not isinstance(call.get("function"), dict):
        unsupported(f"{label(call.get('type'))} tool calls", _FUNCTION_TOOLS_ADVICE, at)
    function: dict[str, Any] = call["function"]
    name = require_str(function.get("name"), f"{at}.function.name", side)
    return name, require_str(call.get("id"), f"{at}.id", side), function.get("arguments")


def _tool(raw: Any, index: int) -> ToolDefinition:
    at = f"tools[{index}]"
    tool = require_object(raw, at)
    function = tool.get("function")
    if tool.get("type") != "function" or not isinstance(function, dict):
        unsupported(f"{label(tool.get('type'))} tools", _FUNCTION_TOOLS_ADVICE, at)
    strict = function.get("strict")
    if strict is not None and not isinstance(strict, bool):
        malformed(f"{at}.function.strict", "true, false or null")
    name = require_str(function.get("name"), f"{at}.function.name")
    return tool_definition(name, function.get("description"), function.get("parameters"))


# -- responses ---------------------------------------------------------------------------------


@several.normalized_per_choice("choices")
def normalize_response(body: Any, ids: CallIds) -> ModelOutput:
    """The ``model_output`` payload for a Chat Completions response body.

    Everything is checked before a provider id is mapped, so a refused response assigns no ``call-N``.
    """
    response = require_object(body, "the response body", "response")
    choices = list_field(response, "choices", "response")
    if not choices or not isinstance(choices[0], dict) or not isinstance(choices[0].get("message"), dict):
        malformed("choices[0].message", "a JSON object", "response")
    choice: dict[str, Any] = choices[0]
    message: dict[str, Any] = choice["message"]
    finish = choice.get("finish_reason")
    _check_choice(choice, message, finish)
    calls = [
        _function_call(raw, f"choices[0].message.tool_calls[{index}]", "response")
        for index, raw in enumerate(list_field(message, "tool_calls", "response"))
    ]
    refusal = message.get("refusal")
    text = _answer_text(message.get("content"), refusal, finish, has_calls=bool(calls))
    stop = _STOPS.get(finish) if isinstance(finish, str) else None
    envelope: dict[str, Any] = {"moderation": response.get("moderation"), "logprobs": chat_logprobs(choice)}
    envelope["reasoning"] = chat_reasoning(message, "choices[0].message")
    envelope["omitted"] = chat_omitted(finish, [arguments for _, _, arguments in calls])
    citations = nested_citations_of(message.get("annotations"), "choices[0].message.annotations")
    if citations:
        uses = [{"type": "tool_use", **call} for call in _neutral_calls(calls, ids)]
        return with_envelope(ordered_output([text_part(text, citations), *uses], stop), **envelope)
    if calls:
        calls_stop: Literal["length"] | None = "length" if stop == "length" else None
        output = tool_calls_output(_neutral_calls(calls, ids), text, calls_stop)
        if message.get("content") == "":  # some compatible servers' calls come with an empty text
            output["text"] = ""
        return with_envelope(output, **envelope)
    return with_envelope(final_answer(text, "refusal" if refusal is not None else stop), **envelope)


def _neutral_calls(calls: list[tuple[str, str, Any]], ids: CallIds) -> list[ToolCallRef]:
    return [
        {
            "toolCallId": ids.neutral(provider_id, name),
            "toolName": name,
            "toolInput": parse_arguments(arguments),
        }
        for name, provider_id, arguments in calls
    ]


def _check_choice(choice: dict[str, Any], message: dict[str, Any], finish: Any) -> None:
    if finish == "function_call" or message.get("function_call") is not None:
        unsupported("a legacy function_call response", _LEGACY_ADVICE, "choices[0].message.function_call")
    if finish not in _FINISH_REASONS:
        unsupported(
            f"finish_reason {label(finish)}", "a replay could not return it", "choices[0].finish_reason"
        )
    if message.get("audio") is not None:
        unsupported("audio in a response", _AUDIO_ADVICE, "choices[0].message.audio")


def _answer_text(content: Any, refusal: Any, finish: Any, *, has_calls: bool) -> str:
    """The text to record (the refusal, if any), refusing what a replay could not return as it came."""
    if content is not None and not isinstance(content, str):
        malformed("choices[0].message.content", "a string or null", "response")
    if refusal is not None:
        if not isinstance(refusal, str):
            malformed("choices[0].message.refusal", "a string or null", "response")
        if content is not None or has_calls or finish != "stop":
            unsupported(
                "a refusal together with content, tool calls or a finish_reason other than stop",
                "a replay returns a refusal alone, with finish_reason stop",
                "choices[0].message.refusal",
            )
        return refusal
    if has_calls:
        if finish not in ("tool_calls", "length", None):
            unsupported(
                f"tool calls with finish_reason {label(finish)} "
                "(the API returns stop when tool_choice names a function)",
                "they would replay with finish_reason tool_calls; "
                "let the model choose the tool (tool_choice auto or required)",
                "choices[0].finish_reason",
            )
    elif content is None and finish != "content_filter":  # a filtered answer may have no content
        unsupported(
            "a response with no content, tool calls or refusal",
            "a replay would return empty-string content",
            "choices[0].message.content",
        )
    return content or ""


# -- replay ------------------------------------------------------------------------------------


@several.synthesized_per_choice(several.join_chat_choices)
def synthesize_response(output: Any, **where: Unpack[ReplayArgs]) -> dict[str, Any]:
    """The Chat Completions response a replay returns for a recorded output.

    Tool-call ids are the neutral ``call-N`` ids, usage is zero, and ``created`` is the recorded
    step's time in seconds.
    """
    recorded = read_output(output)
    refused = not recorded.has_calls and recorded.stop == "refusal"
    content: str | None
    if refused:
        content = None
    elif recorded.has_calls:  # a recorded empty text is an empty content, else none
        content = recorded.text if "text" in output else None
    else:
        content = recorded.text if recorded.text or recorded.stop != "contentFilter" else None
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "refusal": recorded.text if refused else None,
        # the Chat API sends an empty list for a message without citations
        "annotations": nested_wire(
            next((p.get("citations", []) for p in recorded.parts if p["type"] == "text"), [])
        ),
        **reasoning_wire(output.get("reasoning")),
    }
    if recorded.has_calls:
        null = "callArguments" in recorded.omitted
        message["tool_calls"] = [
            {
                "id": call["toolCallId"],
                "type": "function",
                "function": {
                    "name": call["toolName"],
                    "arguments": None if null else arguments_text(call["toolInput"]),
                },
            }
            for call in recorded.calls
        ]
    finish: str | None = None  # when the response named none (omitted)
    if "finishReason" not in recorded.omitted:
        finish = _REPLAYED_STOPS.get(recorded.stop or "") or ("tool_calls" if recorded.has_calls else "stop")
    logprobs = chat_logprobs_wire(recorded.logprobs)
    completion = {
        "id": f"blackbox-replay-{where['output_index']}",
        "object": "chat.completion",
        "created": int(where["timestamp"] // 1000),
        "model": replayed_model(where),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": logprobs}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }
    if recorded.moderation is not None:
        completion["moderation"] = wire_json(recorded.moderation)
    return completion


def error_body(message: str) -> dict[str, Any]:
    """The OpenAI error shape, so the SDK raises (and does not retry) a ``[blackbox]`` error."""
    text = message if message.startswith("[blackbox]") else f"[blackbox] {message}"
    return {"error": {"message": text, "type": "invalid_request_error", "param": None, "code": "blackbox"}}


# -- streams -----------------------------------------------------------------------------------


@several.collected_per_choice("choices")
def collect_stream(body: bytes) -> dict[str, Any]:
    """The completion a complete chunk stream adds up to, ready for :func:`normalize_response`.

    Deltas are joined as the SDK's stream helper joins them (content, refusal, and each tool call's
    arguments by its ``index``); the ``include_usage`` chunk gives the usage; reading stops at
    ``data: [DONE]``. An ``error`` chunk is refused, and so is a stream that ends with neither a
    ``finish_reason`` nor ``[DONE]`` (it was cut short); some OpenAI-compatible servers end a whole
    answer with ``[DONE]`` alone, never naming a ``finish_reason``.
    """
    collector = _CompletionCollector()
    for position, event in enumerate(parse_events(body)):
        if event.data.startswith("[DONE]"):
            return collector.completion(done=True)
        collector.add(event_object(event, position), position)
    return collector.completion(done=False)


class _CompletionCollector:
    """Adds chunks up into the ``chat.completion`` they describe."""

    def __init__(self) -> None:
        self._head: dict[str, Any] | None = None
        self._message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: Any = None
        self._logprobs: Any = None
        self._tail: dict[str, Any] = {}  # usage and moderation, from the chunks after the choices

    def add(self, chunk: dict[str, Any], position: int) -> None:
        if chunk.get("error") is not None:
            error = chunk["error"]
            error_type = error.get("type") if isinstance(error, dict) else None
            stream_problem(f"reported an error ({label(error_type)}) at event {position}")
        if self._head is None:
            self._head = {key: chunk[key] for key in _CHUNK_HEAD if chunk.get(key) is not None}
        self._tail.update((key, chunk[key]) for key in ("usage", "moderation") if chunk.get(key) is not None)
        for choice in list_field(chunk, "choices", "response"):
            self._choice(require_object(choice, "choices[0]", "response"), position)

    def _choice(self, choice: dict[str, Any], position: int) -> None:
        if choice.get("index", 0) != 0:
            unsupported("a stream whose one choice is not index 0", several.INDEX_ADVICE, f"event {position}")
        if choice.get("finish_reason") is not None:
            self._finish = choice["finish_reason"]
        self._logprobs = merge_chat_logprobs(self._logprobs, choice.get("logprobs"))
        delta = require_object(choice.get("delta") or {}, "choices[0].delta", "response")
        for key, value in delta.items():
            if key in JOINED_DELTAS and isinstance(value, str):
                self._message[key] = (self._message.get(key) or "") + value
            elif key == "tool_calls" and isinstance(value, list):
                for raw in value:
                    self._tool_call(require_object(raw, "choices[0].delta.tool_calls[0]", "response"))
            elif key not in ("role", "content", "refusal") and value is not None:
                self._message[key] = value  # function_call, audio, annotations: refused when normalized

    def _tool_call(self, delta: dict[str, Any]) -> None:
        index = delta.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            malformed("choices[0].delta.tool_calls[].index", "an integer", "response")
        call = self._calls.setdefault(index, {"function": {"arguments": None}})  # null until a delta
        for key, value in delta.items():
            if key == "function" and isinstance(value, dict):
                function = call["function"]
                if isinstance(value.get("name"), str):
                    function["name"] = value["name"]
                if isinstance(value.get("arguments"), str):
                    function["arguments"] = (function["arguments"] or "") + value["arguments"]
            elif key != "index" and value is not None:
                call[key] = value

    def completion(self, *, done: bool) -> dict[str, Any]:
        """The completion, once the stream has ended (``done``: with ``data: [DONE]``)."""
        if self._head is None:
            stream_problem("has no chunks", cut_short=True)
        if self._finish is None and not done:
            stream_problem("ended without a finish_reason or [DONE] (it was cut short)", cut_short=True)
        message = dict(self._message)
        if self._calls:
            message["tool_calls"] = [self._calls[index] for index in sorted(self._calls)]
        choice = {"index": 0, "message": message, "finish_reason": self._finish, "logprobs": self._logprobs}
        return {**self._head, "object": "chat.completion", "choices": [choice], **self._tail}


_CHUNK_HEAD: Final = ("id", "created", "model", "service_tier", "system_fingerprint")


@several.synthesized_per_choice(several.join_chat_streams)
def synthesize_stream(output: Any, **where: Unpack[ReplayArgs]) -> list[bytes]:
    """The chunk stream a replay serves for a recorded output, one item per event.

    It carries exactly :func:`synthesize_response`'s completion: a role chunk, the content (or the
    refusal) in fixed-size pieces, each tool call's id and name and then its arguments in pieces, a
    chunk with the finish reason (and the annotations, when there are some), the usage chunk when
    the request's ``stream_options`` asks for it, the moderation chunk when one was recorded, and
    ``data: [DONE]``.
    """
    completion = synthesize_response(output, **where)
    head = {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": completion["created"],
        "model": completion["model"],
    }
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None, logprobs: Any = None) -> bytes:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": logprobs}]
        return encode_event(None, {**head, "choices": choices})

    refused = message["refusal"] is not None
    opening = {
        "role": "assistant",
        "content": None if message["content"] is None else "",
        "refusal": "" if refused else None,
    }
    chunks = [chunk(opening)]
    chunks.extend(chunk(delta) for delta in reasoning_deltas(message))
    key, text = ("refusal", message["refusal"]) if refused else ("content", message["content"] or "")
    logprobs = choice["logprobs"]  # all of them with the first piece
    chunks.extend(chunk({key: bit}, logprobs=None if n else logprobs) for n, bit in enumerate(pieces(text)))
    for index, call in enumerate(message.get("tool_calls", [])):
        function = call["function"]
        first = {"index": index, "id": call["id"], "type": "function"}
        opening = {"name": function["name"], "arguments": None if function["arguments"] is None else ""}
        chunks.append(chunk({"tool_calls": [{**first, "function": opening}]}))
        chunks.extend(
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in pieces(function["arguments"] or "")
        )
    chunks.append(
        chunk(
            {"annotations": message["annotations"]} if message["annotations"] else {}, choice["finish_reason"]
        )
    )
    if _includes_usage(where.get("request_body")):
        chunks.append(encode_event(None, {**head, "choices": [], "usage": completion["usage"]}))
    if "moderation" in completion:
        chunks.append(encode_event(None, {**head, "choices": [], "moderation": completion["moderation"]}))
    chunks.append(encode_event(None, "[DONE]"))
    return chunks


def _includes_usage(request_body: Any) -> bool:
    options = request_body.get("stream_options") if isinstance(request_body, dict) else None
    return isinstance(options, dict) and options.get("include_usage") is True
