"""OpenAI Chat Completions (``POST …/chat/completions``) ↔ neutral step payloads.

A request becomes a ``model_input``: the leading ``system`` / ``developer`` messages the system
prompt, the rest neutral messages (consecutive ``tool`` messages grouped into one user turn of tool
results), function tools neutral tool definitions, and the behaviour controls ``params``. A response
becomes a ``model_output``, with tool-call arguments parsed when they are JSON.

Fields a cassette cannot carry faithfully (audio, the legacy functions API, message names, strict
tools, logprobs, a content-filtered stop, …) are refused with a ``BlackboxUnsupportedError`` naming
the field, never recorded or replayed altered.
"""

from __future__ import annotations

from typing import Any, Final

from .common import (
    CallIds,
    final_answer,
    is_stream_request,
    join_text_blocks,
    js_stringify,
    label,
    list_field,
    malformed,
    model_input,
    parse_arguments,
    pick_params,
    read_output,
    refuse_stream,
    require_object,
    require_str,
    tool_calls_output,
    tool_definition,
    unsupported,
)

__all__ = [
    "NAME",
    "error_body",
    "is_stream_request",
    "normalize_request",
    "normalize_response",
    "synthesize_response",
]

NAME: Final = "openai_chat"

#: Wire field → neutral ``params`` key, in the order the params object is written.
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
)
_INSTRUCTION_ROLES: Final = ("system", "developer")
_LEGACY_ADVICE: Final = "use tools and tool_choice instead of the legacy functions API"
_AUDIO_ADVICE: Final = "request text output; audio cannot be recorded in this version"
_TEXT_ADVICE: Final = "only text content can be recorded in this version"
_REFUSAL_HISTORY_ADVICE: Final = "a refusal in the history would be recorded as ordinary text"
_FUNCTION_TOOLS_ADVICE: Final = "only function tools can be recorded in this version"
_NOT_RECORDED: Final = "it is not recorded in this version, so a replay could not give it back"
_FINISH_REASONS: Final = (None, "stop", "length", "tool_calls")


# -- requests ----------------------------------------------------------------------------------


def normalize_request(body: Any, ids: CallIds) -> dict[str, Any]:
    """The ``model_input`` payload for a Chat Completions request body; refusals come before sending."""
    request = require_object(body, "the request body")
    _check_request(request)
    raw_messages = list_field(request, "messages")
    instructions: list[str] = []
    start = 0
    while start < len(raw_messages) and _role(raw_messages[start], start) in _INSTRUCTION_ROLES:
        instructions.append(_content_text(raw_messages[start].get("content"), f"messages[{start}].content"))
        start += 1
    return model_input(
        _messages(raw_messages, start, ids),
        [_tool(raw, index) for index, raw in enumerate(list_field(request, "tools"))],
        system_prompt="\n\n".join(instructions) if instructions else None,
        model=request.get("model"),
        params=pick_params(request, _PARAMS),
    )


def _check_request(request: dict[str, Any]) -> None:
    refuse_stream(request)
    n = request.get("n")
    if n is not None and n != 1:
        unsupported("n > 1 (several choices per request)", "request one choice per call", "n")
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
    if request.get("web_search_options") is not None:
        unsupported(
            "web_search_options (server-side search)",
            "search in a wrapped tool instead",
            "web_search_options",
        )


def _role(raw: Any, index: int) -> Any:
    """The role of a checked message: every message is checked before it is used."""
    at = f"messages[{index}]"
    message = require_object(raw, at)
    if message.get("name") is not None:
        unsupported(
            "a message name", "leave name out; message names are not recorded in this version", f"{at}.name"
        )
    if message.get("function_call") is not None:
        unsupported("a legacy function_call in the history", _LEGACY_ADVICE, f"{at}.function_call")
    if message.get("audio") is not None:
        unsupported("audio in the history", _AUDIO_ADVICE, f"{at}.audio")
    if message.get("refusal") is not None:
        unsupported("an assistant refusal in the history", _REFUSAL_HISTORY_ADVICE, f"{at}.refusal")
    return message.get("role")


def _messages(raw_messages: list[Any], start: int, ids: CallIds) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
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
            messages.append(
                {"role": "user", "content": _content_text(message.get("content"), f"{at}.content")}
            )
        elif role == "assistant":
            messages.append(_assistant(message, at, ids))
        elif role in _INSTRUCTION_ROLES:
            unsupported(
                f"a {role} message after the conversation starts",
                "put system and developer messages first",
                at,
            )
        else:
            unsupported(
                f"{label(role)} messages",
                "use user, assistant, tool, system or developer messages",
                f"{at}.role",
            )
    return messages


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
    return join_text_blocks(content, at, _TEXT_ADVICE)


def _tool_result(message: dict[str, Any], at: str, ids: CallIds) -> dict[str, Any]:
    """A tool message's content is kept as the text the agent sent: never parsed, never an error."""
    call_id, name = ids.resolve(require_str(message.get("tool_call_id"), f"{at}.tool_call_id"))
    text = _content_text(message.get("content"), f"{at}.content")
    return {"type": "tool_result", "toolCallId": call_id, "toolName": name, "result": text}


def _assistant(message: dict[str, Any], at: str, ids: CallIds) -> dict[str, Any]:
    text = _content_text(message.get("content"), f"{at}.content")
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


def _tool(raw: Any, index: int) -> dict[str, Any]:
    at = f"tools[{index}]"
    tool = require_object(raw, at)
    function = tool.get("function")
    if tool.get("type") != "function" or not isinstance(function, dict):
        unsupported(f"{label(tool.get('type'))} tools", _FUNCTION_TOOLS_ADVICE, at)
    strict = function.get("strict")
    if strict is not None and strict is not False:
        unsupported(
            "strict: true on a function tool",
            f"leave strict out or set it to false; {_NOT_RECORDED}",
            f"{at}.function.strict",
        )
    name = require_str(function.get("name"), f"{at}.function.name")
    return tool_definition(name, function.get("description"), function.get("parameters"))


# -- responses ---------------------------------------------------------------------------------


def normalize_response(body: Any, ids: CallIds) -> dict[str, Any]:
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
    stop = "length" if finish == "length" else None
    if calls:
        neutral_calls = [
            {
                "toolCallId": ids.neutral(provider_id, name),
                "toolName": name,
                "toolInput": parse_arguments(arguments),
            }
            for name, provider_id, arguments in calls
        ]
        return tool_calls_output(neutral_calls, text, stop)
    return final_answer(text, "refusal" if refusal is not None else stop)


def _check_choice(choice: dict[str, Any], message: dict[str, Any], finish: Any) -> None:
    if finish == "content_filter":
        unsupported(
            "a response stopped by the content filter (finish_reason content_filter)",
            "a replay would return it as a normal stop",
            "choices[0].finish_reason",
        )
    if finish == "function_call" or message.get("function_call") is not None:
        unsupported("a legacy function_call response", _LEGACY_ADVICE, "choices[0].message.function_call")
    if finish not in _FINISH_REASONS:
        unsupported(
            f"finish_reason {label(finish)}", "a replay could not return it", "choices[0].finish_reason"
        )
    if message.get("audio") is not None:
        unsupported("audio in a response", _AUDIO_ADVICE, "choices[0].message.audio")
    if _present(choice.get("logprobs")):
        unsupported("logprobs in a response", f"leave logprobs off; {_NOT_RECORDED}", "choices[0].logprobs")
    if _present(message.get("annotations")):
        unsupported("annotations in a response", _NOT_RECORDED, "choices[0].message.annotations")


def _present(value: Any) -> bool:
    return value is not None and value != []


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
        if content == "":
            unsupported(
                "tool calls with empty-string content",
                "a replay would return null content",
                "choices[0].message",
            )
        if finish not in ("tool_calls", "length"):
            unsupported(
                f"tool calls with finish_reason {label(finish)} "
                "(the API returns stop when tool_choice names a function)",
                "they would replay with finish_reason tool_calls; "
                "let the model choose the tool (tool_choice auto or required)",
                "choices[0].finish_reason",
            )
    elif content is None:
        unsupported(
            "a response with no content, tool calls or refusal",
            "a replay would return empty-string content",
            "choices[0].message.content",
        )
    return content or ""


# -- replay ------------------------------------------------------------------------------------


def synthesize_response(
    output: Any, *, output_index: int, model: str | None, timestamp: int | float
) -> dict[str, Any]:
    """The Chat Completions response a replay returns for a recorded output.

    Tool-call ids are the neutral ``call-N`` ids, usage is zero, and ``created`` is the recorded
    step's time in seconds.
    """
    recorded = read_output(output)
    refused = not recorded.has_calls and recorded.stop == "refusal"
    content: str | None
    if refused:
        content = None
    elif recorded.has_calls:
        content = recorded.text or None
    else:
        content = recorded.text
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "refusal": recorded.text if refused else None,
    }
    if recorded.has_calls:
        message["tool_calls"] = [
            {
                "id": call["toolCallId"],
                "type": "function",
                "function": {"name": call["toolName"], "arguments": _arguments(call["toolInput"])},
            }
            for call in recorded.calls
        ]
    finish = "length" if recorded.stop == "length" else "tool_calls" if recorded.has_calls else "stop"
    return {
        "id": f"blackbox-replay-{output_index}",
        "object": "chat.completion",
        "created": int(timestamp // 1000),
        "model": model if model is not None else "unknown",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _arguments(tool_input: Any) -> str:
    """A string input goes back as it was recorded; anything else as compact JSON."""
    return tool_input if isinstance(tool_input, str) else js_stringify(tool_input)


def error_body(message: str) -> dict[str, Any]:
    """The OpenAI error shape, so the SDK raises (and does not retry) a ``[blackbox]`` error."""
    text = message if message.startswith("[blackbox]") else f"[blackbox] {message}"
    return {"error": {"message": text, "type": "invalid_request_error", "param": None, "code": "blackbox"}}
