"""Gemini API (``POST …/models/{model}:generateContent`` and ``:streamGenerateContent``) ↔ neutral steps.

Gemini names the model, and whether to stream, in the URL path rather than the body, so the session
gets one :class:`GeminiCall` per request (from :func:`for_path`): this module's functions bound
to that path. A request becomes a ``model_input``: ``systemInstruction`` the system prompt,
``contents`` neutral messages (consecutive contents of one role are one turn, as a streamed answer
comes back in pieces), function declarations neutral tools, and the behaviour controls ``params``. A
response becomes a ``model_output``. Thought parts are dropped and thought signatures ignored in
both directions: a replay cannot return them.

Function calls may come without an ``id`` (Gemini 2.x). Each call of a response is therefore also
bound to its place in the conversation (the request's messages and its position in the turn), and a
history call without an ``id`` is found by the messages before it, which are that request's. A
replay hands every call its ``call-N`` as the ``id``; function responses without one (automatic
function calling sends none) answer the calls of the model turn before them by name, in order.

See docs/providers.md#google-gemini-google-genai for the field-by-field table.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from ..trace.canonical import js_stringify
from ..trace.model import Message, ModelInput, ModelOutput, Stop, ToolCallRef, ToolDefinition
from .common import (
    CallIds,
    ReplayOutput,
    final_answer,
    json_copy,
    label,
    list_field,
    malformed,
    model_input,
    pick_params,
    read_output,
    require_object,
    require_str,
    tool_calls_output,
    tool_definition,
    unsupported,
)
from .sse import encode_event, event_object, parse_events, pieces, stream_problem

__all__ = [
    "HISTORY",
    "NAME",
    "PATH",
    "ROUTE",
    "GeminiCall",
    "collect_stream",
    "error_body",
    "for_path",
    "is_stream_request",
    "normalize_request",
    "normalize_response",
    "synthesize_response",
    "synthesize_stream",
]

NAME: Final = "gemini"

#: ``…/models/{model}:generateContent`` (or ``tunedModels/…``) and its streaming twin. Vertex AI's
#: ``…/publishers/google/models/{model}:…`` matches too, so it is refused by name rather than let through.
ROUTE: Final = r"/(?:models|tunedModels)/[^/:]+:(?:generateContent|streamGenerateContent)$"
#: The request field that carries the conversation so far (it grows by a few items per call).
HISTORY: Final = "contents"
#: The same path, read: the model resource and the method.
PATH: Final = re.compile(r"/((?:models|tunedModels)/[^/:]+):(generateContent|streamGenerateContent)$")

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
)
#: The structured-output fields, recorded together as ``params.responseFormat``.
_RESPONSE_FORMAT: Final = ("responseMimeType", "responseSchema", "responseJsonSchema")
_TEXT_OUTPUT_ADVICE: Final = "only text output can be recorded in this version"
_NOT_RECORDED: Final = "it is not recorded in this version, so a replay could not give it back"
_SERVER_TOOL_ADVICE: Final = (
    "only function declarations (client-executed tools) can be recorded in this version; "
    "do the work in a wrapped tool"
)
#: Part fields that say what a part is; a part holds exactly one of them.
_PART_KINDS: Final = ("text", "functionCall", "functionResponse")
#: Part fields that go with any kind and are not recorded (``thought`` parts themselves are dropped).
_PART_EXTRAS: Final = frozenset({"thought", "thoughtSignature", "thought_signature"})
_CODE_ADVICE: Final = (
    "code execution runs on Google's servers and is not recorded; run code in a wrapped tool"
)
_SERVER_CALL_ADVICE: Final = "server-side tool calls are not recorded; do the work in a wrapped tool"
_PART_ADVICE: Final = {
    "inlineData": "only text content can be recorded in this version",
    "fileData": "only text content can be recorded in this version",
    "executableCode": _CODE_ADVICE,
    "codeExecutionResult": _CODE_ADVICE,
    "toolCall": _SERVER_CALL_ADVICE,
    "toolResponse": _SERVER_CALL_ADVICE,
}
_OTHER_PART_ADVICE: Final = (
    "only text, functionCall and functionResponse parts can be recorded in this version"
)
_FINISH_REASONS: Final[dict[str, Stop | None]] = {"STOP": None, "MAX_TOKENS": "length", "SAFETY": "refusal"}
_REPLAYED_FINISH: Final = {None: "STOP", "length": "MAX_TOKENS", "refusal": "SAFETY"}
#: Candidate fields only server-side features produce; a replay could not give them back.
_SERVER_CANDIDATE_FIELDS: Final = ("groundingMetadata", "urlContextMetadata", "logprobsResult")


# -- the call a path names -----------------------------------------------------------------------


def for_path(path: str) -> GeminiCall | None:
    """The Gemini call a request path names, or ``None`` when it is not a generateContent path.

    The provider registry asks for it once per call: the model and streaming come from the path, and
    the call keeps its request's conversation for its answer.
    """
    match = PATH.search(path)
    if match is None:
        return None
    resource, method = match.groups()
    return GeminiCall(
        model=resource.removeprefix("models/"),
        stream=method == "streamGenerateContent",
        vertex="/publishers/" in path,
    )


class GeminiCall:
    """One generateContent call as a provider: the module's functions bound to its path and request.

    It keeps what its request said for its answer: the model and streaming from the path, and the
    conversation the request carries, to which the answer's function calls are bound (recorded by
    :meth:`normalize_response`, replayed by the ``synthesize_*`` methods) so that a later request's
    history finds them, with or without ids.
    """

    NAME: ClassVar[str] = NAME
    HISTORY: ClassVar[str] = HISTORY

    def __init__(self, *, model: str, stream: bool, vertex: bool = False) -> None:
        self.model = model
        self.stream = stream
        self.vertex = vertex
        self._ids: CallIds | None = None
        self._conversation: _Conversation | None = None

    def normalize_request(self, body: Any, ids: CallIds, *, path: str = "") -> ModelInput:
        if self.vertex:
            unsupported(
                "Vertex AI (a …/publishers/…/models/… path)",
                "Google Cloud credentials are refreshed outside the model call, which a replay cannot "
                "answer offline; record against the Gemini Developer API (genai.Client(api_key=…) "
                "without vertexai)",
                "the request path",
            )
        payload, self._conversation = _request(body, ids, self.model)
        self._ids = ids
        return payload

    def normalize_response(self, body: Any, ids: CallIds) -> ModelOutput:
        return normalize_response(body, ids, self._conversation)

    def collect_stream(self, body: bytes) -> dict[str, Any]:
        return collect_stream(body)

    def synthesize_response(
        self, output: Any, *, output_index: int, model: str | None, timestamp: int | float
    ) -> dict[str, Any]:
        """The response for a recorded output; ``model`` is unused (the path names it)."""
        self._bind_replayed(output)
        return synthesize_response(output, output_index=output_index, model=self.model, timestamp=timestamp)

    def synthesize_stream(
        self,
        output: Any,
        *,
        output_index: int,
        model: str | None,
        timestamp: int | float,
        request_body: Any = None,
    ) -> list[bytes]:
        self._bind_replayed(output)
        return synthesize_stream(output, output_index=output_index, model=self.model, timestamp=timestamp)

    def error_body(self, message: str) -> dict[str, Any]:
        return error_body(message)

    def is_stream_request(self, body: Any, *, path: str = "") -> bool:
        """Streaming is chosen by the path (``:streamGenerateContent``), never by the body."""
        return self.stream

    def _bind_replayed(self, output: Any) -> None:
        """Bind a replayed answer's calls to their place, as recording did, for id-less histories."""
        if self._ids is None or self._conversation is None:
            return
        for position, call in enumerate(read_output(output).calls):
            self._ids.bind(self._conversation.call_key(position), call["toolCallId"], call["toolName"])


class _Conversation:
    """The neutral messages so far as a running digest: what identifies a call that has no id."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()

    def add(self, message: Message) -> None:
        self._digest.update(js_stringify(message).encode("utf-8") + b"\n")

    def call_key(self, position: int) -> str:
        """The key of the ``position``-th call of the model turn that follows these messages."""
        return f"gemini-call:{self._digest.copy().hexdigest()}:{position}"


# -- requests ----------------------------------------------------------------------------------


def normalize_request(body: Any, ids: CallIds, *, path: str = "") -> ModelInput:
    """The ``model_input`` payload for a generateContent body; refusals are raised before sending.

    The model comes from the URL ``path`` (the body does not name it); a call object from
    :func:`for_path` also keeps the conversation its answer's calls are bound to.
    """
    call = for_path(path)
    payload, _ = _request(body, ids, call.model if call is not None else None)
    return payload


def is_stream_request(body: Any, *, path: str = "") -> bool:
    """Streaming is chosen by the path (``:streamGenerateContent``), never by the body."""
    call = for_path(path)
    return call is not None and call.stream


def _request(body: Any, ids: CallIds, model: str | None) -> tuple[ModelInput, _Conversation]:
    request = require_object(body, "the request body")
    _refuse_request_fields(request)
    messages, conversation = _messages(list_field(request, "contents"), ids)
    payload = model_input(
        messages,
        _tools(request),
        system_prompt=_system_prompt(_field(request, "systemInstruction")),
        model=model,
        params=_params(request),
    )
    return payload, conversation


def _field(value: dict[str, Any], name: str) -> Any:
    """A field by its JSON name, else by its proto name: google-genai passes some objects through
    (function declarations and responses, thinking config) and writes their fields in snake_case."""
    found = value.get(name)
    return found if found is not None else value.get(re.sub(r"([A-Z])", r"_\1", name).lower())


def _refuse_request_fields(request: dict[str, Any]) -> None:
    if _field(request, "cachedContent") is not None:
        unsupported(
            "cachedContent",
            "the cached part of the conversation lives on the server, where a cassette can neither hold "
            "nor compare it; send the whole conversation in contents",
            "cachedContent",
        )
    if _field(request, "continuationToken") is not None:
        unsupported("continuationToken", "a replay answers each request as a whole", "continuationToken")


def _messages(contents: list[Any], ids: CallIds) -> tuple[list[Message], _Conversation]:
    conversation = _Conversation()
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


def _parts(content: dict[str, Any], at: str, side: str) -> Iterator[tuple[str, str, Any]]:
    """``(where, kind, value)`` for each part that is recorded; thought parts are dropped."""
    parts = content.get("parts")
    if parts is not None and not isinstance(parts, list):
        malformed(f"{at}.parts", "a list", side)
    for position, raw in enumerate(parts or []):
        where = f"{at}.parts[{position}]"
        part = require_object(raw, where, side)
        kind = _part_kind(part, where, side)
        if kind is not None:
            value = part[kind]
            yield where, kind, require_str(value, f"{where}.text", side) if kind == "text" else value


def _part_kind(part: dict[str, Any], at: str, side: str) -> str | None:
    for key, value in part.items():
        if value is not None and key not in _PART_KINDS and key not in _PART_EXTRAS:
            unsupported(f"{label(key)} parts", _PART_ADVICE.get(key, _OTHER_PART_ADVICE), f"{at}.{key}")
    if part.get("thought") is True:
        return None
    kinds = [key for key in _PART_KINDS if part.get(key) is not None]
    if len(kinds) > 1:
        malformed(at, "a part with one of text, functionCall and functionResponse", side)
    return kinds[0] if kinds else None


@dataclass
class _OpenCall:
    """A call of the model turn before a user turn, until a function response answers it."""

    call_id: str
    name: str
    answered: bool = False


def _model_turn(
    members: list[tuple[str, dict[str, Any]]], ids: CallIds, conversation: _Conversation
) -> tuple[Message, list[_OpenCall]]:
    """An assistant message as a replay returns one: its text (pieces joined as they arrived), then
    its calls. ``google-genai`` joins a response's text parts with nothing in between, so do we."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for at, content in members:
        for where, kind, value in _parts(content, at, "request"):
            if kind == "text":
                texts.append(value)
            elif kind == "functionCall":
                provider_id, name, args = _function_call(value, f"{where}.functionCall", "request")
                key = provider_id if provider_id is not None else conversation.call_key(len(calls))
                call_id = ids.neutral(key, name)
                calls.append({"type": "tool_use", "toolCallId": call_id, "toolName": name, "toolInput": args})
            else:
                unsupported(
                    "a functionResponse part in a model content",
                    "function responses belong in user contents",
                    where,
                )
    text = "".join(texts)
    if not calls:
        return {"role": "assistant", "content": text}, []
    content_parts = ([{"type": "text", "text": text}] if text else []) + calls
    return {"role": "assistant", "content": content_parts}, [
        _OpenCall(call["toolCallId"], call["toolName"]) for call in calls
    ]


def _user_turn(
    members: list[tuple[str, dict[str, Any]]], ids: CallIds, answerable: list[_OpenCall]
) -> Message:
    """A user message: its text (parts joined with a blank line), or its parts when it answers calls."""
    parts: list[dict[str, Any]] = []
    for at, content in members:
        for where, kind, value in _parts(content, at, "request"):
            if kind == "text":
                parts.append({"type": "text", "text": value})
            elif kind == "functionResponse":
                parts.append(_tool_result(value, f"{where}.functionResponse", ids, answerable))
            else:
                unsupported(
                    "a functionCall part in a user content", "function calls belong in model contents", where
                )
    if all(part["type"] == "text" for part in parts):
        return {"role": "user", "content": "\n\n".join(part["text"] for part in parts)}
    return {"role": "user", "content": parts}


def _function_call(value: Any, at: str, side: str) -> tuple[str | None, str, Any]:
    """``(provider id or None, name, args)``; streamed partial arguments are refused."""
    call = require_object(value, at, side)
    for key in ("partialArgs", "willContinue"):
        if _field(call, key) is not None:
            unsupported("streamed function-call arguments", _NOT_RECORDED, f"{at}.{key}")
    name = require_str(call.get("name"), f"{at}.name", side)
    provider_id = call.get("id") or None
    if provider_id is not None:
        require_str(provider_id, f"{at}.id", side)
    args = call.get("args")
    if args is not None and not isinstance(args, dict):
        malformed(f"{at}.args", "a JSON object", side)
    return provider_id, name, json_copy(args or {})


def _tool_result(value: Any, at: str, ids: CallIds, answerable: list[_OpenCall]) -> dict[str, Any]:
    response = require_object(value, at)
    for key in ("parts", "willContinue", "scheduling"):
        if _field(response, key):
            unsupported(f"{key} in a functionResponse", _NOT_RECORDED, f"{at}.{key}")
    name = require_str(response.get("name"), f"{at}.name")
    call_id = _answered_call(response.get("id") or None, name, at, ids, answerable)
    result = response.get("response")
    if result is None:
        result = {}
    if not isinstance(result, dict):
        malformed(f"{at}.response", "a JSON object")
    part: dict[str, Any] = {"type": "tool_result", "toolCallId": call_id, "toolName": name}
    if list(result) == ["error"] and isinstance(result["error"], str):
        part["error"] = result["error"]
    else:
        part["result"] = json_copy(result)
    return part


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
    for where, kind, value in _parts(content, "systemInstruction", "request"):
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
            elif value is not None:
                unsupported(f"the {key} tool", _SERVER_TOOL_ADVICE, f"{at}.{key}")
    return tools


def _declaration(raw: Any, at: str) -> ToolDefinition:
    """A neutral tool; the declared response schema is not recorded (it describes the result the
    model is sent, which is compared itself)."""
    declaration = require_object(raw, at)
    if _field(declaration, "behavior") is not None:
        unsupported(
            "behavior on a function declaration",
            "non-blocking functions belong to the Live API; leave behavior out",
            f"{at}.behavior",
        )
    schemas = [
        schema
        for key in ("parameters", "parametersJsonSchema")
        if (schema := _field(declaration, key)) is not None
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
    controls["toolConfig"] = _tool_config(_field(request, "toolConfig"))
    controls["safetySettings"] = _field(request, "safetySettings")
    response_format = {key: config[key] for key in _RESPONSE_FORMAT if config.get(key) is not None}
    controls["responseFormat"] = response_format or None
    return pick_params(controls, _PARAMS)


def _refuse_config(config: dict[str, Any]) -> None:
    at = "generationConfig"
    if config.get("candidateCount") not in (None, 1):
        unsupported("candidateCount other than 1", "a replay returns one candidate", f"{at}.candidateCount")
    if config.get("responseLogprobs") or config.get("logprobs") is not None:
        key = "responseLogprobs" if config.get("responseLogprobs") else "logprobs"
        unsupported("log probabilities", _NOT_RECORDED, f"{at}.{key}")
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
    if _field(config, "retrievalConfig") is not None:
        unsupported("retrievalConfig", "it serves server-side tools; " + _SERVER_TOOL_ADVICE, "toolConfig")
    if _field(config, "includeServerSideToolInvocations"):
        unsupported(
            "includeServerSideToolInvocations",
            _SERVER_TOOL_ADVICE,
            "toolConfig.includeServerSideToolInvocations",
        )
    return config


# -- responses ---------------------------------------------------------------------------------


def normalize_response(body: Any, ids: CallIds, conversation: _Conversation | None = None) -> ModelOutput:
    """The ``model_output`` payload for a generateContent response body.

    Everything is checked before an id is assigned, so a refused response assigns no ``call-N``.
    Each call is bound to its place after ``conversation`` (the request's messages), so a later
    history without ids finds it; without a conversation, id-less calls get new ids only.
    """
    response = require_object(body, "the response body", "response")
    candidate = _candidate(response)
    text, calls = _response_content(candidate)
    stop = _stop(candidate.get("finishReason"), has_calls=bool(calls))
    for field in _SERVER_CANDIDATE_FIELDS:
        if candidate.get(field) is not None:
            unsupported(f"{field} in a response", _NOT_RECORDED, f"candidates[0].{field}")
    neutral_calls: list[ToolCallRef] = []
    for position, (provider_id, name, args) in enumerate(calls):
        call_id = ids.neutral(provider_id, name) if provider_id is not None else ids.fresh()
        if conversation is not None:
            ids.bind(conversation.call_key(position), call_id, name)
        neutral_calls.append({"toolCallId": call_id, "toolName": name, "toolInput": args})
    if neutral_calls:
        return tool_calls_output(neutral_calls, text, "length" if stop == "length" else None)
    return final_answer(text, stop)


def _candidate(response: dict[str, Any]) -> dict[str, Any]:
    candidates = list_field(response, "candidates", "response")
    if not candidates:
        feedback = response.get("promptFeedback")
        reason = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if reason is not None:
            unsupported(
                f"a blocked prompt (blockReason {label(reason)})",
                "a replay could not return it",
                "promptFeedback.blockReason",
            )
        malformed("candidates", "a list with one candidate", "response")
    if len(candidates) > 1:
        unsupported("more than one candidate", "a replay returns one; leave candidateCount out", "candidates")
    return require_object(candidates[0], "candidates[0]", "response")


def _response_content(candidate: dict[str, Any]) -> tuple[str, list[tuple[str | None, str, Any]]]:
    content = candidate.get("content")
    if content is None:
        return "", []
    at = "candidates[0].content"
    texts: list[str] = []
    calls: list[tuple[str | None, str, Any]] = []
    for where, kind, value in _parts(require_object(content, at, "response"), at, "response"):
        if kind == "text":
            texts.append(value)
        elif kind == "functionCall":
            calls.append(_function_call(value, f"{where}.functionCall", "response"))
        else:
            unsupported("a functionResponse part in a response", "a model answers with text and calls", where)
    return "".join(texts), calls


def _stop(reason: Any, *, has_calls: bool) -> Stop | None:
    if reason == "SAFETY" and has_calls:
        unsupported(
            "finishReason SAFETY together with function calls",
            "a replay returns a safety stop with text alone",
            "finishReason",
        )
    if reason == "CONTINUATION":
        unsupported(
            "finishReason CONTINUATION (an answer continued in a further request)",
            "a replay answers each request as a whole",
            "finishReason",
        )
    if not isinstance(reason, str) or reason not in _FINISH_REASONS:
        unsupported(
            f"finishReason {label(reason)}",
            "a replay could return only STOP, MAX_TOKENS or SAFETY",
            "finishReason",
        )
    return _FINISH_REASONS[reason]


def error_body(message: str) -> dict[str, Any]:
    """The Gemini API error shape, so the SDK raises a (never retried) 400 ``ClientError``."""
    text = message if message.startswith("[blackbox]") else f"[blackbox] {message}"
    return {"error": {"code": 400, "message": text, "status": "INVALID_ARGUMENT"}}


# -- replay ------------------------------------------------------------------------------------


def synthesize_response(
    output: Any, *, output_index: int, model: str | None, timestamp: int | float
) -> dict[str, Any]:
    """The generateContent response a replay returns for a recorded output.

    Function calls carry their ``call-N`` as ``id`` and usage is zero. ``timestamp`` is unused: the
    response carries no creation time.
    """
    recorded = read_output(output)
    return _chunk(_replay_parts(recorded), recorded, model, output_index, last=True)


def synthesize_stream(
    output: Any,
    *,
    output_index: int,
    model: str | None,
    timestamp: int | float,
    request_body: Any = None,
) -> list[bytes]:
    """The server-sent events a replay streams for a recorded output, one item per event.

    Each event is one response chunk: the text in fixed-size pieces, then one chunk per function
    call; the last chunk carries the finish reason and usage. Every chunk has content, as
    ``chats`` requires of a valid turn. ``request_body`` is unused.
    """
    recorded = read_output(output)
    parts = _replay_parts(recorded)
    texts = [[{"text": piece}] for piece in pieces(recorded.text)]
    groups = texts + [[part] for part in parts if "functionCall" in part] or [[]]
    return [
        encode_event(None, _chunk(group, recorded, model, output_index, last=index == len(groups) - 1))
        for index, group in enumerate(groups)
    ]


def _replay_parts(recorded: ReplayOutput) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": recorded.text}] if recorded.text else []
    for call in recorded.calls:
        if not isinstance(call["toolInput"], dict):
            unsupported(
                f"replaying a call of {label(call['toolName'])} whose input is not a JSON object",
                "Gemini function calls take an object of arguments",
                "toolInput",
            )
        function_call = {"id": call["toolCallId"], "name": call["toolName"], "args": call["toolInput"]}
        parts.append({"functionCall": function_call})
    return parts


def _chunk(
    parts: list[dict[str, Any]], recorded: ReplayOutput, model: str | None, output_index: int, *, last: bool
) -> dict[str, Any]:
    """A response (or one streamed chunk of it); an empty answer has content without parts."""
    content: dict[str, Any] = {"parts": parts, "role": "model"} if parts else {"role": "model"}
    candidate: dict[str, Any] = {"content": content}
    if last:
        candidate["finishReason"] = _REPLAYED_FINISH[recorded.stop]
    candidate["index"] = 0
    chunk: dict[str, Any] = {"candidates": [candidate]}
    if last:
        chunk["usageMetadata"] = {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0}
    chunk["modelVersion"] = model if model is not None else "unknown"
    chunk["responseId"] = f"blackbox-replay-{output_index}"
    return chunk


# -- streams -----------------------------------------------------------------------------------


def collect_stream(body: bytes) -> dict[str, Any]:
    """The response a complete ``alt=sse`` stream adds up to, ready for :func:`normalize_response`.

    Each event is a response chunk: the parts of the one candidate are concatenated in order, its
    other fields (the finish reason) and the response's own fields are the last ones sent. An
    ``error`` chunk, or a stream that ends before a finish reason, is refused.
    """
    response: dict[str, Any] = {}
    candidate: dict[str, Any] | None = None
    parts: list[Any] = []
    for position, event in enumerate(parse_events(body)):
        chunk = event_object(event, position)
        error = chunk.get("error")
        if error is not None:
            status = error.get("status") if isinstance(error, dict) else None
            stream_problem(f"reported an error ({label(status)}) at event {position}")
        for key, value in chunk.items():
            if key != "candidates":
                response[key] = value
        for raw in list_field(chunk, "candidates", "response"):
            piece = require_object(raw, "candidates[0]", "response")
            if piece.get("index", 0) != 0:
                unsupported(
                    "more than one candidate in a stream", "a replay returns one", f"event {position}"
                )
            content = piece.get("content")
            if isinstance(content, dict):
                parts.extend(list_field(content, "parts", "response"))
            candidate = candidate if candidate is not None else {}
            candidate.update(
                (key, value)
                for key, value in piece.items()
                if key not in ("content", "index") and value is not None
            )
    if candidate is None:
        if response.get("promptFeedback") is None:
            stream_problem("has no candidates (it was cut short)", cut_short=True)
        return response  # a blocked prompt: normalize_response names the reason
    if candidate.get("finishReason") is None:
        stream_problem("ended before a finishReason (it was cut short)", cut_short=True)
    response["candidates"] = [{"content": {"parts": parts, "role": "model"}, **candidate, "index": 0}]
    return response
