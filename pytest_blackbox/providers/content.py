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
from typing import Any, Final

from ..trace.model import FinalAnswer, Stop, ToolCallRef, ToolCallsOutput, ToolDefinition
from .common import final_answer, json_copy, label, malformed, require_object, tool_calls_output, unsupported

__all__ = [
    "builtin_tool",
    "citations_of",
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
    """Whether the parts are at most one plain text part followed by client tool calls."""
    kinds = [p["type"] for p in parts]
    if any(kind not in ("text", "tool_use") for kind in kinds) or kinds.count("text") > 1:
        return False
    return ("text" not in kinds or kinds[0] == "text") and not any("citations" in p for p in parts)


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


def nested_citations_of(raw: Any, at: str) -> list[dict[str, Any]] | None:
    """OpenAI Chat annotations (``{"type": "url_citation", "url_citation": {…}}``) as neutral citations,
    their inner fields lifted next to ``type``; ``None`` when there are none."""
    if raw is None or raw == []:
        return None
    if not isinstance(raw, list):
        malformed(at, "a list of annotations", "response")
    citations = []
    for index, item in enumerate(raw):
        where = f"{at}[{index}]"
        annotation = require_object(item, where, "response")
        kind = annotation.get("type")
        if not isinstance(kind, str) or set(annotation) != {"type", kind}:
            unsupported(
                f"an annotation of type {label(kind)}",
                "only url_citation-like annotations are recorded",
                where,
            )
        inner = require_object(annotation[kind], f"{where}.{kind}", "response")
        citations.append({"type": kind, **neutral_fields(inner, f"{where}.{kind}")})
    return citations


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
    neutral: dict[str, Any] = {}
    for key, value in wire.items():
        if not _SNAKE.fullmatch(key):
            unsupported(f"the field {label(key)}", "only snake_case fields can be recorded here", at)
        if value is not None:
            neutral[_CAMEL_PIECE.sub(lambda m: m.group(1).upper(), key)] = json_copy(value)
    return neutral


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
