"""Reading Gemini contents and parts, both directions: what a part is, a function call, the conversation.

A request's history and a response's candidate hold the same parts, so both normalizers read them
here, with one set of refusals. See docs/providers.md#google-gemini-google-genai.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from typing import Any, Final

from ...trace.canonical import js_stringify
from ...trace.model import Message
from ..common import (
    CallIds,
    json_copy,
    label,
    malformed,
    require_object,
    require_str,
    unsupported,
)
from ..content import server_result, server_use, text_part
from ..media import GEMINI_MEDIA
from ..replayed import read_output

NOT_RECORDED: Final = "it is not recorded in this version, so a replay could not give it back"
#: The parts of the codeExecution tool: the code the model ran and what it printed (model turns only).
CODE_PARTS: Final = ("executableCode", "codeExecutionResult")
#: The tool name the code parts are recorded under (the name of the tool that enables them).
CODE_TOOL: Final = "codeExecution"
_CODE_FIELDS: Final = {"executableCode": ("language", "code"), "codeExecutionResult": ("outcome", "output")}
#: Part fields that say what a part is; a part holds exactly one of them (media only in requests).
_PART_KINDS: Final = ("text", "functionCall", "functionResponse", *CODE_PARTS)
_REQUEST_KINDS: Final = _PART_KINDS + GEMINI_MEDIA
#: Part fields that go with any kind and are not recorded (``thought`` parts themselves are dropped).
_PART_EXTRAS: Final = frozenset({"thought", "thoughtSignature", "thought_signature"})
_SERVER_CALL_ADVICE: Final = "server-side tool calls are not recorded; do the work in a wrapped tool"
_PART_ADVICE: Final = {
    "inlineData": "only text output can be recorded in this version",
    "fileData": "only text output can be recorded in this version",
    "toolCall": _SERVER_CALL_ADVICE,
    "toolResponse": _SERVER_CALL_ADVICE,
}
_OTHER_PART_ADVICE: Final = (
    "only text, functionCall, functionResponse, media and code execution parts can be recorded in this "
    "version"
)


def _proto_name(name: str) -> str:
    return re.sub(r"([A-Z])", r"_\1", name).lower()


#: A part's kind by its proto (snake_case) name, which the Gemini API reads as it reads the JSON name:
#: LiteLLM writes a history's calls and results as ``function_call`` and ``function_response``.
_JSON_NAMES: Final = {_proto_name(kind): kind for kind in (*_REQUEST_KINDS, *_PART_ADVICE)}


class Conversation:
    """The neutral messages so far as a running digest: what identifies a call that has no id."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()

    def add(self, message: Message) -> None:
        self._digest.update(js_stringify(message).encode("utf-8") + b"\n")

    def call_key(self, position: int) -> str:
        """The key of the ``position``-th call of the model turn that follows these messages."""
        return f"gemini-call:{self._digest.copy().hexdigest()}:{position}"

    def code_key(self, position: int) -> str:
        """The key of the ``position``-th code execution of the model turn that follows these messages."""
        return f"gemini-code:{self._digest.copy().hexdigest()}:{position}"


def bind_calls(ids: CallIds, conversation: Conversation, outputs: list[Any]) -> None:
    """Bind the calls of each choice of an answer to their place after ``conversation``, for a
    history without ids. Where several candidates call at one place (``candidateCount > 1``), the
    first one's call holds it."""
    claimed: set[str] = set()
    for output in outputs:
        for position, call in enumerate(read_output(output).calls):
            key = conversation.call_key(position)
            if key not in claimed:
                claimed.add(key)
                ids.bind(key, call["toolCallId"], call["toolName"])


class CodeIds:
    """The ``server-N`` ids of one model turn's code execution parts.

    A part with an ``id`` (Gemini 3) is known by it; one without (Gemini 2.x) by its place in the
    conversation, as a function call without one, and a result without an id answers the code just
    before it. ``answer`` hands out new ids and binds the places (a response, recorded or replayed);
    otherwise the places are looked up (a request's history). ``with_id`` and ``without_id`` say
    which the turn's parts had: a turn of both is refused, since a replay sends ids to all or none.
    """

    def __init__(self, ids: CallIds, conversation: Conversation | None, *, answer: bool) -> None:
        self._ids, self._conversation, self._answer = ids, conversation, answer
        self._position = 0
        self._open: str | None = None
        self.with_id = self.without_id = False

    def use(self, wire_id: str | None, replayed: str | None = None) -> str:
        """The id of an ``executableCode`` part (``replayed``: the id a replay gives it)."""
        self._open = self._take(wire_id, replayed)
        return self._open

    def result(self, wire_id: str | None, replayed: str | None = None) -> str:
        """The id of a ``codeExecutionResult`` part: its own, else that of the code before it."""
        open_, self._open = self._open, None
        if wire_id is None and open_ is not None:
            self.without_id = True
            return open_
        return self._take(wire_id, replayed)

    def _take(self, wire_id: str | None, replayed: str | None) -> str:
        if wire_id is not None:
            self.with_id = True
            return self._ids.server(wire_id, CODE_TOOL)[0]
        self.without_id = True
        if self._conversation is None:
            return replayed or self._ids.fresh_server()
        key = self._conversation.code_key(self._position)
        self._position += 1
        if not self._answer:  # the place was bound by the answer (its keys never look like an id)
            return self._ids.get(key) or self._ids.server(key, CODE_TOOL)[0]
        server_id = replayed or self._ids.fresh_server()
        self._ids.bind(key, server_id, CODE_TOOL)
        return server_id


def wire_field(value: dict[str, Any], name: str) -> Any:
    """A field by its JSON name, else by its proto name: google-genai passes some objects through
    (function declarations and responses, thinking config) and writes their fields in snake_case."""
    found = value.get(name)
    return found if found is not None else value.get(_proto_name(name))


def content_parts(content: dict[str, Any], at: str, side: str) -> Iterator[tuple[str, str, Any]]:
    """``(where, kind, value)`` for each part that is recorded; thought parts are dropped."""
    parts = content.get("parts")
    if parts is not None and not isinstance(parts, list):
        malformed(f"{at}.parts", "a list", side)
    for position, raw in enumerate(parts or []):
        where = f"{at}.parts[{position}]"
        part = _json_named(require_object(raw, where, side), where, side)
        kind = _part_kind(part, where, side)
        if kind is not None:
            value = part[kind]
            yield where, kind, require_str(value, f"{where}.text", side) if kind == "text" else value


def _json_named(part: dict[str, Any], at: str, side: str) -> dict[str, Any]:
    """The part with each kind under its JSON name; a kind given under both names is malformed."""
    named = {_JSON_NAMES.get(key, key): value for key, value in part.items()}
    if len(named) < len(part):
        malformed(at, "a part naming its kind once", side)
    return named


def _part_kind(part: dict[str, Any], at: str, side: str) -> str | None:
    known = _REQUEST_KINDS if side == "request" else _PART_KINDS
    for key, value in part.items():
        if value is not None and key not in known and key not in _PART_EXTRAS:
            unsupported(f"{label(key)} parts", _PART_ADVICE.get(key, _OTHER_PART_ADVICE), f"{at}.{key}")
    if part.get("thought") is True:
        return None
    kinds = [key for key in known if part.get(key) is not None]
    if len(kinds) > 1:
        malformed(at, f"a part with one of {', '.join(known)}", side)
    return kinds[0] if kinds else None


#: A part read in order: ``("text", str)``, ``("functionCall", (id, name, args))`` or a code part's
#: ``(kind, (id, fields))``.
Item = tuple[str, Any]


def read_item(where: str, kind: str, value: Any, side: str) -> Item:
    """A model turn's part, read (and checked) before any id is given out."""
    if kind == "functionCall":
        return kind, function_call(value, f"{where}.functionCall", side)
    if kind in CODE_PARTS:
        return kind, code_part(kind, value, f"{where}.{kind}", side)
    return kind, value


def turn_parts(
    items: list[Item], code: CodeIds, call_id: Callable[[int, str | None, str], str], at: str
) -> list[dict[str, Any]]:
    """A model turn's neutral parts in order: adjacent text joined, code execution as provider-run
    ``codeExecution`` call and result, function calls as ``tool_use`` (``call_id(position, id, name)``)."""
    with_ids = {value[0] is not None for kind, value in items if kind in CODE_PARTS}
    if len(with_ids) > 1:
        unsupported(
            "code execution parts with and without an id in one turn",
            "a replay gives ids to all of them or to none",
            at,
        )
    parts: list[dict[str, Any]] = []
    calls = 0
    for kind, value in items:
        if kind == "text":
            if parts and parts[-1]["type"] == "text":
                parts[-1]["text"] += value
            elif value:
                parts.append(text_part(value))
        elif kind == "functionCall":
            provider_id, name, args = value
            neutral = call_id(calls, provider_id, name)
            parts.append({"type": "tool_use", "toolCallId": neutral, "toolName": name, "toolInput": args})
            calls += 1
        elif kind == "executableCode":
            parts.append(server_use(code.use(value[0]), CODE_TOOL, value[1]))
        else:
            parts.append(server_result(code.result(value[0]), CODE_TOOL, value[1]))
    return parts


def code_part(kind: str, value: Any, at: str, side: str) -> tuple[str | None, dict[str, Any]]:
    """``(provider id or None, fields)`` of an ``executableCode`` (``language``, ``code``) or
    ``codeExecutionResult`` (``outcome``, ``output``) part; any other field is refused, naming it."""
    part = require_object(value, at, side)
    known = _CODE_FIELDS[kind]
    for key, field in part.items():
        if key not in known and key != "id" and field is not None:
            unsupported(f"the field {label(key)} of the {kind} part", NOT_RECORDED, f"{at}.{key}")
    provider_id = part.get("id") or None
    if provider_id is not None:
        require_str(provider_id, f"{at}.id", side)
    return provider_id, {key: json_copy(part[key]) for key in known if part.get(key) is not None}


def function_call(value: Any, at: str, side: str) -> tuple[str | None, str, Any]:
    """``(provider id or None, name, args)``; streamed partial arguments are refused."""
    call = require_object(value, at, side)
    for key in ("partialArgs", "willContinue"):
        if wire_field(call, key) is not None:
            unsupported("streamed function-call arguments", NOT_RECORDED, f"{at}.{key}")
    name = require_str(call.get("name"), f"{at}.name", side)
    provider_id = call.get("id") or None
    if provider_id is not None:
        require_str(provider_id, f"{at}.id", side)
    args = call.get("args")
    if args is not None and not isinstance(args, dict):
        malformed(f"{at}.args", "a JSON object", side)
    return provider_id, name, json_copy(args or {})
