"""OpenAI Responses output items ↔ ordered neutral parts: built-in tool items and cited text.

A built-in tool's item (``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
``image_generation_call``, ``mcp_call``, ``mcp_list_tools``) holds the call and what it returned
together, so it becomes one ``server_tool_use`` part: ``toolName`` the item type, ``toolInput`` its
fields but ``id`` and ``type``, and the item id a ``server-N`` id. An ``output_text`` part's
``annotations`` become the text part's ``citations``. One reading serves the response's ``output``
and the history's ``input``, so a turn a replay gave back normalizes as the recorded one did. See
docs/providers.md#openai-responses.
"""

from __future__ import annotations

from typing import Any, Final

from .common import CallIds, json_copy, label, malformed, require_str
from .content import annotation_objects, neutral_fields, server_use, wire_fields

__all__ = ["SERVER_ITEMS", "annotations_of", "server_part", "wire_annotations", "wire_server_item"]

#: Output items of tools the provider runs itself; each holds its call and its result.
SERVER_ITEMS: Final = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
    }
)


def server_part(item: dict[str, Any], at: str, side: str, ids: CallIds | None) -> dict[str, Any]:
    """The ``server_tool_use`` part for a built-in tool's item; its id mapped only when ``ids`` is given
    (a response maps ids after every item is checked)."""
    kind = require_str(item.get("type"), f"{at}.type", side)
    provider_id = require_str(item.get("id"), f"{at}.id", side)
    fields = {key: json_copy(value) for key, value in item.items() if key not in ("id", "type")}
    server_id = provider_id if ids is None else ids.server(provider_id, kind)[0]
    return server_use(server_id, kind, fields)


def wire_server_item(part: dict[str, Any]) -> dict[str, Any]:
    """The item a replay returns for a recorded built-in tool part; its id is the ``server-N`` id."""
    return {"id": part["toolCallId"], "type": part["toolName"], **part["toolInput"]}


def annotations_of(raw: Any, at: str) -> list[dict[str, Any]] | None:
    """An ``output_text`` part's annotations as neutral citations (camelCase); ``None`` when none."""
    citations = []
    for where, annotation in annotation_objects(raw, at):
        kind = annotation.get("type")
        if not isinstance(kind, str):
            malformed(f"{where}.type", f"a string, not {label(kind)}", "response")
        rest = {key: value for key, value in annotation.items() if key != "type"}
        citations.append({"type": kind, **neutral_fields(rest, where)})
    return citations or None


def wire_annotations(citations: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The ``annotations`` of an ``output_text`` part for its recorded citations."""
    return [
        {"type": c["type"], **wire_fields({k: v for k, v in c.items() if k != "type"})}
        for c in citations or []
    ]
