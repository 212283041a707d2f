"""OpenAI Responses output items ↔ ordered neutral parts: built-in tool items and cited text.

A built-in tool's item (``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
``image_generation_call``, ``mcp_call``, ``mcp_list_tools``; a tool search's ``tool_search_call`` and
``tool_search_output``, whoever runs it) holds the call and what it returned
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

__all__ = [
    "SERVER_ITEMS",
    "annotations_of",
    "map_server_ids",
    "server_part",
    "wire_annotations",
    "wire_server_item",
]

#: Output items of tools the provider runs itself; each holds its call and its result.
SERVER_ITEMS: Final = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "tool_search_call",
        "tool_search_output",
    }
)
#: The field of a tool search's items that names its call: a provider id, mapped to a ``server-N``.
_CALL_ID: Final = "call_id"


def server_part(item: dict[str, Any], at: str, side: str, ids: CallIds | None) -> dict[str, Any]:
    """The ``server_tool_use`` part for a built-in tool's item; its ids mapped only when ``ids`` is given
    (a response maps ids after every item is checked, with :func:`map_server_ids`).

    A ``tool_search_output`` the agent sends (a client-executed tool search's result) may have no id:
    it gets the next ``server-N``, on the recording and on the replay alike.
    """
    kind = require_str(item.get("type"), f"{at}.type", side)
    if item.get("id") is None and kind == "tool_search_output" and ids is not None:
        provider_id = ids.fresh_server()
    else:
        provider_id = require_str(item.get("id"), f"{at}.id", side)
    fields = {key: json_copy(value) for key, value in item.items() if key not in ("id", "type")}
    if _CALL_ID in fields and not isinstance(fields[_CALL_ID], (str, type(None))):
        malformed(f"{at}.{_CALL_ID}", "a string", side)
    part = server_use(provider_id, kind, fields)
    return part if ids is None else map_server_ids(part, ids)


def map_server_ids(part: dict[str, Any], ids: CallIds) -> dict[str, Any]:
    """A built-in tool part with its provider ids as ``server-N`` ids: the item's own and, for a tool
    search's items, the ``call_id`` that ties its output to its call."""
    part["toolCallId"] = ids.server(part["toolCallId"], part["toolName"])[0]
    call_id = part["toolInput"].get(_CALL_ID)
    if isinstance(call_id, str):
        part["toolInput"][_CALL_ID] = ids.server(call_id, "tool_search")[0]
    return part


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
