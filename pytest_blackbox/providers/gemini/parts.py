"""Reading Gemini contents and parts, both directions: what a part is, a function call, the conversation.

A request's history and a response's candidate hold the same parts, so both normalizers read them
here, with one set of refusals. See docs/providers.md#google-gemini-google-genai.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any, Final

from ...trace.canonical import js_stringify
from ...trace.model import Message
from ..common import json_copy, label, malformed, require_object, require_str, unsupported
from ..media import GEMINI_MEDIA

NOT_RECORDED: Final = "it is not recorded in this version, so a replay could not give it back"
#: Part fields that say what a part is; a part holds exactly one of them (media only in requests).
_PART_KINDS: Final = ("text", "functionCall", "functionResponse")
_REQUEST_KINDS: Final = _PART_KINDS + GEMINI_MEDIA
#: Part fields that go with any kind and are not recorded (``thought`` parts themselves are dropped).
_PART_EXTRAS: Final = frozenset({"thought", "thoughtSignature", "thought_signature"})
_CODE_ADVICE: Final = (
    "code execution runs on Google's servers and is not recorded; run code in a wrapped tool"
)
_SERVER_CALL_ADVICE: Final = "server-side tool calls are not recorded; do the work in a wrapped tool"
_PART_ADVICE: Final = {
    "inlineData": "only text output can be recorded in this version",
    "fileData": "only text output can be recorded in this version",
    "executableCode": _CODE_ADVICE,
    "codeExecutionResult": _CODE_ADVICE,
    "toolCall": _SERVER_CALL_ADVICE,
    "toolResponse": _SERVER_CALL_ADVICE,
}
_OTHER_PART_ADVICE: Final = (
    "only text, functionCall and functionResponse parts can be recorded in this version"
)


class Conversation:
    """The neutral messages so far as a running digest: what identifies a call that has no id."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()

    def add(self, message: Message) -> None:
        self._digest.update(js_stringify(message).encode("utf-8") + b"\n")

    def call_key(self, position: int) -> str:
        """The key of the ``position``-th call of the model turn that follows these messages."""
        return f"gemini-call:{self._digest.copy().hexdigest()}:{position}"


def wire_field(value: dict[str, Any], name: str) -> Any:
    """A field by its JSON name, else by its proto name: google-genai passes some objects through
    (function declarations and responses, thinking config) and writes their fields in snake_case."""
    found = value.get(name)
    return found if found is not None else value.get(re.sub(r"([A-Z])", r"_\1", name).lower())


def content_parts(content: dict[str, Any], at: str, side: str) -> Iterator[tuple[str, str, Any]]:
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
