"""The ordered content of a response, provider-run tools and citations, as neutral parts.

A response that is not simply "text, then tool calls" (several text blocks, text after a call, a
provider-run tool and its result, text with citations) keeps its parts in order in the model
output's optional ``content`` list; ``text`` and ``calls`` stay what every reader expects. Provider
ids of provider-run tools become ``server-N`` (:meth:`CallIds.server`), and a citation's fields are
written in camelCase, so a cassette stays neutral. See
docs/cassette-format.md#response-content-provider-run-tools-and-citations.
"""

from __future__ import annotations

import re
from typing import Any, Final, NoReturn

from ..trace.model import FinalAnswer, Stop, ToolCallRef, ToolCallsOutput, ToolDefinition
from .common import (
    final_answer,
    join_text_blocks,
    json_copy,
    label,
    malformed,
    require_object,
    tool_calls_output,
    unsupported,
)

__all__ = [
    "INSTRUCTION_ROLES",
    "REFUSAL_HISTORY_ADVICE",
    "TEXT_ADVICE",
    "annotation_objects",
    "builtin_tool",
    "camel_key",
    "citations_of",
    "content_text",
    "late_instruction",
    "nested_citations_of",
    "nested_wire",
    "neutral_fields",
    "ordered_output",
    "server_result",
    "server_use",
    "text_part",
    "wire_fields",
]

_SNAKE: Final = re.compile(r"[a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)*")
_CAMEL_PIECE: Final = re.compile(r"_([a-z])")
_UPPER: Final = re.compile(r"[A-Z]")
_PLAIN_TEXT: Final = frozenset({"type", "text"})
_PLAIN_CALL: Final = frozenset({"type", "toolCallId", "toolName", "toolInput"})
#: Why content other than text is refused where only text is read.
TEXT_ADVICE: Final = "only text content can be recorded in this version"
#: Why a refusal sent back in the history is refused.
REFUSAL_HISTORY_ADVICE: Final = "a refusal in the history would be recorded as ordinary text"
#: The OpenAI roles that make the system prompt, read from the leading messages only.
INSTRUCTION_ROLES: Final = ("system", "developer")


def late_instruction(role: str, at: str) -> NoReturn:
    """Refuses a system or developer message after the first turn: only leading ones are the prompt."""
    unsupported(
        f"a {role} message after the conversation starts", "put system and developer messages first", at
    )


def content_text(content: Any, at: str, text_types: tuple[str, ...] = ()) -> str:
    """Message content as text: text parts joined with a blank line, nothing else accepted.

    ``text_types`` are the protocol's own names of a text part (the Responses API's ``input_text``),
    read as ``text``; a refusal part is refused by name, as it would come back as ordinary text.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        malformed(at, "a string or a list of content parts")
    for index, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") == "refusal":
            unsupported("a refusal part in the history", REFUSAL_HISTORY_ADVICE, f"{at}[{index}]")
    texts = [
        {"type": "text", "text": part.get("text")}
        if isinstance(part, dict) and part.get("type") in text_types
        else part
        for part in content
    ]
    return join_text_blocks(texts, at, TEXT_ADVICE)


def text_part(text: str, citations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A ``text`` part; ``citations`` only when the text has some."""
    part: dict[str, Any] = {"type": "text", "text": text}
    if citations:
        part["citations"] = citations
    return part


def server_use(call_id: str, name: str, tool_input: Any) -> dict[str, Any]:
    """A provider-run tool call, under its neutral ``server-N`` id."""
    return {"type": "server_tool_use", "toolCallId": call_id, "toolName": name, "toolInput": tool_input}


def server_result(call_id: str, name: str, result: Any) -> dict[str, Any]:
    """What a provider-run tool returned, under the id of the call it answers."""
    return {"type": "server_tool_result", "toolCallId": call_id, "toolName": name, "result": result}


def ordered_output(parts: list[dict[str, Any]], stop: Stop | None) -> FinalAnswer | ToolCallsOutput:
    """The ``model_output`` for a response's parts in order (empty text parts already left out).

    ``text`` joins the text parts and ``calls`` holds the ``tool_use`` parts, as every reader expects;
    ``content`` keeps the order only when a replay could not rebuild it from those two: several
    text parts, text after a call, citations or a provider-run tool.
    """
    calls: list[ToolCallRef] = [
        {"toolCallId": p["toolCallId"], "toolName": p["toolName"], "toolInput": p["toolInput"]}
        for p in parts
        if p["type"] == "tool_use"
    ]
    text = "".join(p["text"] for p in parts if p["type"] == "text")
    if calls:
        output = tool_calls_output(calls, text, "length" if stop == "length" else None)
        if not _simple(parts):
            output["content"] = parts
        return output
    answer = final_answer(text, stop)
    if not _simple(parts):
        answer["content"] = parts
    return answer


def _simple(parts: list[dict[str, Any]]) -> bool:
    """Whether the parts are at most one plain text part followed by plain client tool calls."""
    kinds = [p["type"] for p in parts]
    plain = all(set(p) <= (_PLAIN_TEXT if p["type"] == "text" else _PLAIN_CALL) for p in parts)
    if not plain or any(kind not in ("text", "tool_use") for kind in kinds) or kinds.count("text") > 1:
        return False
    return "text" not in kinds or kinds[0] == "text"


# -- citations ---------------------------------------------------------------------------------


def citations_of(raw: Any, at: str, side: str = "response") -> list[dict[str, Any]] | None:
    """A provider's citations as neutral objects (camelCase keys); ``None`` when there are none."""
    if raw is None or raw == []:
        return None
    if not isinstance(raw, list):
        malformed(at, "a list of citations", side)
    return [
        neutral_fields(require_object(item, f"{at}[{i}]", side), f"{at}[{i}]") for i, item in enumerate(raw)
    ]


def annotation_objects(raw: Any, at: str) -> list[tuple[str, dict[str, Any]]]:
    """A response's annotations (OpenAI Chat or Responses), each with where it stands; none for ``None``."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        malformed(at, "a list of annotations", "response")
    return [(f"{at}[{i}]", require_object(item, f"{at}[{i}]", "response")) for i, item in enumerate(raw)]


def nested_citations_of(raw: Any, at: str) -> list[dict[str, Any]] | None:
    """OpenAI Chat annotations (``{"type": "url_citation", "url_citation": {…}}``) as neutral citations,
    their inner fields lifted next to ``type``; ``None`` when there are none."""
    citations = []
    for where, annotation in annotation_objects(raw, at):
        kind = annotation.get("type")
        if not isinstance(kind, str) or set(annotation) != {"type", kind}:
            unsupported(
                f"an annotation of type {label(kind)}",
                "only url_citation-like annotations are recorded",
                where,
            )
        inner = require_object(annotation[kind], f"{where}.{kind}", "response")
        citations.append({"type": kind, **neutral_fields(inner, f"{where}.{kind}")})
    return citations or None


def nested_wire(citations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The OpenAI Chat annotations neutral citations (:func:`nested_citations_of`) were made from."""
    return [
        {
            "type": citation["type"],
            citation["type"]: wire_fields({k: v for k, v in citation.items() if k != "type"}),
        }
        for citation in citations
    ]


def neutral_fields(wire: dict[str, Any], at: str) -> dict[str, Any]:
    """A provider object with snake_case keys as a neutral one with camelCase keys (values copied).

    ``null`` values are left out: the APIs send them for absent fields, and a replay gives them
    back as ``null`` again (:func:`wire_fields` cannot tell the difference, nor can the SDK).
    """
    keys = {key: camel_key(key, at) for key in wire}
    return {keys[key]: json_copy(value) for key, value in wire.items() if value is not None}


def camel_key(key: str, at: str) -> str:
    """A provider's snake_case name in the neutral camelCase (``cited_text`` → ``citedText``); any
    other spelling is refused, since :func:`wire_fields` could not give it back."""
    if not _SNAKE.fullmatch(key):
        unsupported(f"the field {label(key)}", "only snake_case fields can be recorded here", at)
    return _CAMEL_PIECE.sub(lambda m: m.group(1).upper(), key)


def wire_fields(neutral: dict[str, Any]) -> dict[str, Any]:
    """The provider object a neutral one (:func:`neutral_fields`) was made from."""
    return {_UPPER.sub(lambda m: "_" + m.group(0).lower(), key): value for key, value in neutral.items()}


# -- typed tool definitions --------------------------------------------------------------------


def builtin_tool(name: str, kind: str, tool: dict[str, Any], skip: tuple[str, ...]) -> ToolDefinition:
    """A provider-defined tool (``web_search_20250305``, ``memory_20250818``, Responses ``web_search``):
    its provider type in ``builtin`` and its other fields, compared in full, in ``settings``.

    Fields in ``skip`` (its name and type, and what does not change the answer) and ``null`` values
    (how the SDKs write an unset option) are left out.
    """
    definition: ToolDefinition = {"name": name, "description": "", "builtin": kind}
    settings = {key: json_copy(value) for key, value in tool.items() if key not in skip and value is not None}
    if settings:
        definition["settings"] = settings
    return definition
