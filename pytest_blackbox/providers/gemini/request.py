"""Gemini requests → ``model_input``: contents as neutral turns, declarations as tools, the ``params``.

Refusals are raised here, before anything is sent. See docs/providers.md#google-gemini-google-genai.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ...trace.canonical import canonical_json
from ...trace.model import Message, ModelInput, ToolDefinition
from ..common import (
    CallIds,
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
from ..content import builtin_tool
from ..media import GEMINI_MEDIA, gemini_media, message_content
from .parts import (
    CODE_PARTS,
    NOT_RECORDED,
    CodeIds,
    Conversation,
    Item,
    content_parts,
    read_item,
    turn_parts,
    wire_field,
)

#: Wire field → neutral ``params`` key, in the order the params object is written. ``toolConfig``,
#: ``responseFormat`` and ``safetySettings`` are gathered from outside ``generationConfig`` first.
_PARAMS: Final = (
    ("maxOutputTokens", "maxTokens"),
    ("temperature", "temperature"),
    ("topP", "topP"),
    ("topK", "topK"),
    ("toolConfig", "toolChoice"),
    ("stopSequences", "stop"),
    ("responseFormat", "responseFormat"),
    ("thinkingConfig", "thinking"),
    ("seed", "seed"),
    ("presencePenalty", "presencePenalty"),
    ("frequencyPenalty", "frequencyPenalty"),
    ("safetySettings", "safetySettings"),
    ("candidateCount", "choiceCount"),
)
#: The structured-output fields, recorded together as ``params.responseFormat``.
_RESPONSE_FORMAT: Final = ("responseMimeType", "responseSchema", "responseJsonSchema")
_MODEL_ADVICE: Final = "a model content is recorded as its text and function calls"
_TEXT_OUTPUT_ADVICE: Final = "only text output can be recorded in this version"
#: Built-in tools, recorded: their results come as candidate metadata or as code execution parts
#: (docs/providers.md).
_BUILTINS: Final = ("googleSearch", "urlContext", "codeExecution")
_SERVER_TOOL_ADVICE: Final = (
    "only function declarations and the googleSearch, urlContext and codeExecution tools can be "
    "recorded in this version; do the work in a wrapped tool"
)


def normalize(body: Any, ids: CallIds, model: str | None) -> tuple[ModelInput, Conversation]:
    request = require_object(body, "the request body")
    _refuse_request_fields(request)
    messages, conversation = _messages(list_field(request, "contents"), ids)
    payload = model_input(
        messages,
        _tools(request),
        system_prompt=_system_prompt(wire_field(request, "systemInstruction")),
        model=model,
        params=_params(request),
    )
    return payload, conversation


def parses_text(payload: ModelInput) -> bool:
    """Whether a recorded request asks for structured output with a schema, which google-genai
    parses from each streamed chunk's text into the chunk's ``parsed``."""
    response_format = (payload.get("params") or {}).get("responseFormat") or {}
    return any(key in response_format for key in ("responseSchema", "responseJsonSchema"))


def _refuse_request_fields(request: dict[str, Any]) -> None:
    if wire_field(request, "cachedContent") is not None:
        unsupported(
            "cachedContent",
            "the cached part of the conversation lives on the server, where a cassette can neither hold "
            "nor compare it; send the whole conversation in contents",
            "cachedContent",
        )
    if wire_field(request, "continuationToken") is not None:
        unsupported("continuationToken", "a replay answers each request as a whole", "continuationToken")


def _messages(contents: list[Any], ids: CallIds) -> tuple[list[Message], Conversation]:
    conversation = Conversation()
    messages: list[Message] = []
    answerable: list[_OpenCall] = []
    for role, members in _turns(contents):
        if role == "assistant":
            message, answerable = _model_turn(members, ids, conversation)
        else:
            message, answerable = _user_turn(members, ids, answerable), []
        messages.append(message)
        conversation.add(message)
    return messages, conversation


def _turns(contents: list[Any]) -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    """Contents grouped into turns: consecutive contents of one role, as ``(where, content)``."""
    turns: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = []
    for index, raw in enumerate(contents):
        at = f"contents[{index}]"
        content = require_object(raw, at)
        role = _role(content.get("role"), at)
        if turns and turns[-1][0] == role:
            turns[-1][1].append((at, content))
        else:
            turns.append((role, [(at, content)]))
    return turns


def _role(role: Any, at: str) -> str:
    if role == "model":
        return "assistant"
    if role is None or role == "user":
        return "user"
    unsupported(f"role {label(role)}", "Gemini contents are user or model turns", f"{at}.role")


@dataclass
class _OpenCall:
    """A call of the model turn before a user turn, until a function response answers it."""

    call_id: str
    name: str
    answered: bool = False


def _model_turn(
    members: list[tuple[str, dict[str, Any]]], ids: CallIds, conversation: Conversation
) -> tuple[Message, list[_OpenCall]]:
    """An assistant message as a replay returns one: its text (pieces joined as they arrived), then
    its calls; its parts in order when it holds code execution. ``google-genai`` joins a response's
    text parts with nothing in between, so do we."""
    items: list[Item] = []
    for at, content in members:
        for where, kind, value in content_parts(content, at, "request"):
            if kind in GEMINI_MEDIA or kind == "functionResponse":
                home = "function responses belong in user contents"
                unsupported(
                    f"a {kind} part in a model content",
                    home if kind == "functionResponse" else _MODEL_ADVICE,
                    where,
                )
            items.append(read_item(where, kind, value, "request"))

    def call_id(position: int, provider_id: str | None, name: str) -> str:
        return ids.neutral(provider_id if provider_id is not None else conversation.call_key(position), name)

    parts = turn_parts(items, CodeIds(ids, conversation, answer=False), call_id, members[0][0])
    calls = [part for part in parts if part["type"] == "tool_use"]
    text = "".join(part["text"] for part in parts if part["type"] == "text")
    if any(kind in CODE_PARTS for kind, _ in items):
        blocks = parts
    elif not calls:
        return {"role": "assistant", "content": text}, []
    else:
        blocks = ([{"type": "text", "text": text}] if text else []) + calls
    return {"role": "assistant", "content": blocks}, [
        _OpenCall(call["toolCallId"], call["toolName"]) for call in calls
    ]


def _user_turn(
    members: list[tuple[str, dict[str, Any]]], ids: CallIds, answerable: list[_OpenCall]
) -> Message:
    """A user message: its text (parts joined with a blank line), or its parts when it answers calls
    or holds media."""
    parts: list[dict[str, Any]] = []
    for at, content in members:
        for where, kind, value in content_parts(content, at, "request"):
            if kind == "text":
                parts.append({"type": "text", "text": value})
            elif kind == "functionResponse":
                parts.append(_tool_result(value, f"{where}.functionResponse", ids, answerable))
            elif kind in GEMINI_MEDIA:
                parts.append(gemini_media(kind, value, where))
            else:
                unsupported(
                    f"a {kind} part in a user content",
                    "function calls and code execution belong in model contents",
                    where,
                )
    return {"role": "user", "content": message_content(parts)}


def _tool_result(value: Any, at: str, ids: CallIds, answerable: list[_OpenCall]) -> dict[str, Any]:
    response = require_object(value, at)
    for key in ("willContinue", "scheduling"):
        if wire_field(response, key):
            unsupported(f"{key} in a functionResponse", NOT_RECORDED, f"{at}.{key}")
    media = _response_media(wire_field(response, "parts"), f"{at}.parts")
    name = require_str(response.get("name"), f"{at}.name")
    result = response.get("response")
    if result is None:
        result = {}
    if not isinstance(result, dict):
        malformed(f"{at}.response", "a JSON object")
    call_id = _answered_call(response.get("id") or None, name, at, ids, answerable)
    part: dict[str, Any] = {"type": "tool_result", "toolCallId": call_id, "toolName": name}
    if media:
        part["result"] = ([{"type": "text", "text": canonical_json(result)}] if result else []) + media
    elif list(result) == ["error"] and isinstance(result["error"], str):
        part["error"] = result["error"]
    else:
        part["result"] = json_copy(result)
    return part


def _response_media(raw: Any, at: str) -> list[dict[str, Any]]:
    """The media parts of a multimodal function response (``parts``: ``inlineData`` / ``fileData``)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        malformed(at, "a list")
    media = []
    for index, item in enumerate(raw):
        where = f"{at}[{index}]"
        fields = require_object(item, where)
        kinds = [key for key in GEMINI_MEDIA if wire_field(fields, key) is not None]
        for key, field in fields.items():
            if _camel(key) not in GEMINI_MEDIA and field is not None:
                unsupported(
                    f"the field {label(key)} of a functionResponse part", NOT_RECORDED, f"{where}.{key}"
                )
        if len(kinds) != 1:
            malformed(where, "a part with one of inlineData, fileData")
        media.append(gemini_media(kinds[0], wire_field(fields, kinds[0]), where))
    return media


def _answered_call(provider_id: Any, name: str, at: str, ids: CallIds, answerable: list[_OpenCall]) -> str:
    """The ``call-N`` a function response answers: by its id, else the first open call of that name."""
    if provider_id is not None:
        call_id = ids.resolve(require_str(provider_id, f"{at}.id"))[0]
        match = next((open_ for open_ in answerable if open_.call_id == call_id), None)
    else:
        match = next((o for o in answerable if not o.answered and o.name == name), None)
        if match is None:
            unsupported(
                f"a functionResponse for {label(name)} that answers no functionCall of the model turn "
                "before it",
                "give it the id of the call it answers, or send it right after that model turn",
                at,
            )
        call_id = match.call_id
    if match is not None:
        match.answered = True
    return call_id


def _system_prompt(instruction: Any) -> str | None:
    if instruction is None or isinstance(instruction, str):
        return instruction
    content = require_object(instruction, "systemInstruction")
    texts = []
    for where, kind, value in content_parts(content, "systemInstruction", "request"):
        if kind != "text":
            unsupported(f"a {kind} part in the system instruction", "it can hold only text", where)
        texts.append(value)
    return "\n\n".join(texts)


def _tools(request: dict[str, Any]) -> list[ToolDefinition]:
    tools: list[ToolDefinition] = []
    for index, raw in enumerate(list_field(request, "tools")):
        at = f"tools[{index}]"
        for key, value in require_object(raw, at).items():
            if key in ("functionDeclarations", "function_declarations"):
                if value is not None and not isinstance(value, list):
                    malformed(f"{at}.{key}", "a list")
                tools.extend(_declaration(item, f"{at}.{key}[{i}]") for i, item in enumerate(value or []))
            elif _camel(key) in _BUILTINS and (value is None or isinstance(value, dict)):
                tools.append(builtin_tool(_camel(key), _camel(key), value or {}, ()))
            elif value is not None:
                unsupported(f"the {key} tool", _SERVER_TOOL_ADVICE, f"{at}.{key}")
    return tools


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word.capitalize() for word in rest)


def _declaration(raw: Any, at: str) -> ToolDefinition:
    """A neutral tool; the declared response schema is not recorded (it describes the result the
    model is sent, which is compared itself)."""
    declaration = require_object(raw, at)
    if wire_field(declaration, "behavior") is not None:
        unsupported(
            "behavior on a function declaration",
            "non-blocking functions belong to the Live API; leave behavior out",
            f"{at}.behavior",
        )
    schemas = [
        schema
        for key in ("parameters", "parametersJsonSchema")
        if (schema := wire_field(declaration, key)) is not None
    ]
    if len(schemas) > 1:
        malformed(at, "a declaration with parameters or parametersJsonSchema, not both")
    return tool_definition(
        require_str(declaration.get("name"), f"{at}.name"),
        declaration.get("description"),
        schemas[0] if schemas else None,
    )


def _params(request: dict[str, Any]) -> dict[str, Any] | None:
    raw = request.get("generationConfig")
    config = {} if raw is None else require_object(raw, "generationConfig")
    _refuse_config(config)
    controls = dict(config)
    if controls.get("candidateCount") == 1:
        del controls["candidateCount"]  # the default, left out as a cassette of one candidate has it
    controls["toolConfig"] = _tool_config(wire_field(request, "toolConfig"))
    controls["safetySettings"] = wire_field(request, "safetySettings")
    response_format = {key: config[key] for key in _RESPONSE_FORMAT if config.get(key) is not None}
    controls["responseFormat"] = response_format or None
    return pick_params(controls, _PARAMS)


def _refuse_config(config: dict[str, Any]) -> None:
    at = "generationConfig"
    if config.get("responseLogprobs") or config.get("logprobs") is not None:
        key = "responseLogprobs" if config.get("responseLogprobs") else "logprobs"
        unsupported("log probabilities", NOT_RECORDED, f"{at}.{key}")
    modalities = config.get("responseModalities")
    if modalities is not None and modalities != ["TEXT"]:
        unsupported("responseModalities other than TEXT", _TEXT_OUTPUT_ADVICE, f"{at}.responseModalities")
    for key in ("speechConfig", "imageConfig", "audioTranscriptionConfig"):
        if config.get(key) is not None:
            unsupported(key, _TEXT_OUTPUT_ADVICE, f"{at}.{key}")


def _tool_config(raw: Any) -> Any:
    """``toolConfig`` as recorded (``params.toolChoice``); only function calling can be configured."""
    if raw is None:
        return None
    config = require_object(raw, "toolConfig")
    if wire_field(config, "retrievalConfig") is not None:
        unsupported("retrievalConfig", "it serves server-side tools; " + _SERVER_TOOL_ADVICE, "toolConfig")
    if wire_field(config, "includeServerSideToolInvocations"):
        unsupported(
            "includeServerSideToolInvocations",
            _SERVER_TOOL_ADVICE,
            "toolConfig.includeServerSideToolInvocations",
        )
    return config
