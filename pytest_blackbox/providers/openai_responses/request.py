"""Responses requests → ``model_input``: instructions, input items, function tools and controls.

See docs/providers.md#openai-responses.
"""

from __future__ import annotations

from typing import Any, Final

from ...trace.model import Message, ModelInput, ToolDefinition
from ..common import (
    CallIds,
    azure_deployment,
    label,
    list_field,
    malformed,
    model_input,
    parse_arguments,
    pick_params,
    require_object,
    require_str,
    tool_definition,
    unsupported,
)
from ..content import INSTRUCTION_ROLES, builtin_tool, content_text, late_instruction
from ..media import RESPONSES_MEDIA, responses_media, text_or_media
from ..responses_content import SERVER_ITEMS, server_part
from ..settings import responses_context
from ..state import StateKind

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
    ("moderation", "moderation"),
    ("context_management", "contextManagement"),
    ("previous_response_id", "previousResponseId"),
    ("conversation", "conversation"),
    ("tools.strict", "toolStrict"),
    ("tools.defer_loading", "toolDeferLoading"),
    ("path.deployment", "azureDeployment"),
)
_SERVER_STATE: Final = (("prompt", "a stored prompt (prompt)"),)
_SERVER_STATE_ADVICE: Final = (
    "send the whole conversation in input and the prompt text in instructions, so the cassette holds "
    "what the model saw and a replay can compare it"
)
_TEXT_PARTS: Final = ("input_text", "output_text")
#: Built-in tools the agent runs itself, whose calls this version does not record.
_CLIENT_BUILTINS: Final = frozenset(
    {"custom", "computer_use_preview", "computer", "local_shell", "shell", "apply_patch"}
)
_ITEMS_ADVICE: Final = (
    "only message, function_call, function_call_output and reasoning items can be recorded in this version"
)


def normalize_request(body: Any, ids: CallIds, *, path: str = "") -> ModelInput:
    """The ``model_input`` payload for a Responses request body; refusals come before sending.

    ``stream`` and ``stream_options`` are not part of it, nor is ``store``: keeping a response on the
    server does not change the answer; referring back to kept state does, and ``previous_response_id``
    and ``conversation`` are compared as the neutral ids they map to (``state``).
    ``path`` gives only the Azure OpenAI deployment it names; the Responses API carries the rest in the body.
    """
    request = require_object(body, "the request body")
    _check_request(request)
    items = _input_items(request.get("input"))
    instructions = [] if request.get("instructions") is None else [_instructions(request["instructions"])]
    start = 0
    while start < len(items) and _message_role(items[start], start) in INSTRUCTION_ROLES:
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
            {
                **_lifted_controls(request, tools),
                **_kept_state(request, ids),
                "context_management": responses_context(request.get("context_management")),
                "path.deployment": azure_deployment(path),
            },
            _PARAMS,
        ),
    )


def _kept_state(request: dict[str, Any], ids: CallIds) -> dict[str, str | None]:
    """The conversation state the request continues, as neutral ids (``providers.state``)."""
    conversation = request.get("conversation")
    if isinstance(conversation, dict):
        conversation = conversation.get("id")
    return {
        "previous_response_id": _state_id(request.get("previous_response_id"), "response", ids),
        "conversation": _state_id(conversation, "conversation", ids),
    }


def _state_id(value: Any, kind: StateKind, ids: CallIds) -> str | None:
    field = "previous_response_id" if kind == "response" else kind
    if value is None:
        return None
    if not isinstance(value, str):
        malformed(field, "a string id")
    return ids.states.named(kind, value, field)


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
    return {
        **request,
        "text.format": (text or {}).get("format"),
        "text.verbosity": (text or {}).get("verbosity"),
        "tools.strict": _per_tool(tools, "strict") or None,
        "tools.defer_loading": _per_tool(tools, "defer_loading") or None,
    }


def _per_tool(tools: list[Any], field: str) -> dict[str, Any]:
    """A function tool field that is not part of its definition, by tool name (``strict``, and
    ``defer_loading``: the tool is loaded only once a tool search finds it)."""
    return {
        tool["name"]: tool[field]
        for tool in tools
        if isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool.get(field) is not None
    }


def _media(content: Any, at: str) -> str | list[dict[str, Any]]:
    """A user message's content or a function call's output: its text, or its text and media parts."""
    return text_or_media(content, at, _content_text, responses_media, RESPONSES_MEDIA, _TEXT_PARTS)


def _content_text(content: Any, at: str) -> str:
    """Message content as text; ``input_text`` and ``output_text`` parts are its text parts."""
    return content_text(content, at, _TEXT_PARTS)


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
        elif kind in SERVER_ITEMS:
            self._results = None
            if self._text is None:
                self._text = ""
            self._calls.append(server_part(item, at, "request", self._ids))
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
        elif role in INSTRUCTION_ROLES:
            late_instruction(role, at)
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
    if kind in _CLIENT_BUILTINS:
        unsupported(
            f"the client-executed built-in tool {label(kind)}",
            "only function tools and provider-run built-in tools can be recorded in this version; "
            "do the work in a function tool",
            at,
        )
    if kind != "function":
        name = tool.get("name")
        return builtin_tool(
            name if isinstance(name, str) else require_str(kind, f"{at}.type"),
            str(kind),
            tool,
            ("type", "name"),
        )
    name = require_str(tool.get("name"), f"{at}.name")
    return tool_definition(name, tool.get("description"), tool.get("parameters"))
