"""Anthropic content blocks ↔ ordered neutral parts: text with citations, tool calls, server tools.

One reading for a response's ``content`` and an assistant turn in the history, so a turn a replay
gave back normalizes exactly as the recorded one did; one writing for the blocks a replay returns.
Provider-run tools (``server_tool_use`` and the ``…_tool_result`` block answering it, the MCP
connector's ``mcp_tool_use`` / ``mcp_tool_result``) become ``server_tool_use`` / ``server_tool_result``
parts under ``server-N`` ids; a ``compaction`` block a ``compaction``
part with its fields in camelCase. See docs/providers.md#anthropic-messages.
"""

from __future__ import annotations

from typing import Any, Final

from .common import CallIds, json_copy, label, require_object, require_str, unsupported
from .content import citations_of, neutral_fields, server_result, server_use, text_part, wire_fields

__all__ = ["DROPPED", "Block", "block_of", "neutral_parts", "wire_block"]

#: Blocks a replay cannot return (thinking), left out in both directions.
DROPPED: Final = frozenset({"thinking", "redacted_thinking"})
_RESULT_SUFFIX: Final = "_tool_result"
#: A provider-run tool whose result block is not named ``<tool name>_tool_result``.
_RESULT_TYPES: Final = {
    "tool_search_tool_regex": "tool_search_tool_result",
    "tool_search_tool_bm25": "tool_search_tool_result",
}
_MCP_SERVER: Final = "server_name"
_BLOCKS_ADVICE: Final = (
    "only text, tool_use, server tool, MCP connector and compaction blocks can be recorded in this version"
)

#: One block read but not yet given neutral ids: (part with the provider id, provider id).
Block = tuple[dict[str, Any], str | None]


def block_of(block: dict[str, Any], at: str, side: str) -> Block | None:
    """The neutral part for one block, its id still the provider's; ``None`` for a block left out.

    Nothing is mapped here, so a response refused by a later block assigns no neutral id.
    """
    kind = block.get("type")
    if isinstance(kind, str) and kind in DROPPED:
        return None
    if kind == "text":
        text = require_str(block.get("text"), f"{at}.text", side)
        citations = citations_of(block.get("citations"), f"{at}.citations", side)
        return (text_part(text, citations), None) if text or citations else None
    if kind == "compaction":
        fields = {key: value for key, value in block.items() if key not in ("type", "cache_control")}
        return {"type": "compaction", "content": neutral_fields(fields, at)}, None
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        return _use(block, kind, at, side)
    if isinstance(kind, str) and kind.endswith(_RESULT_SUFFIX):
        provider_id = require_str(block.get("tool_use_id"), f"{at}.tool_use_id", side)
        return {**server_result("", "", _result(block, kind, at)), "resultType": kind}, provider_id
    unsupported(f"{label(kind)} blocks", _BLOCKS_ADVICE, at)


#: A tool call's ``caller`` when the model called the tool itself: the default, so not recorded, and a
#: cassette of such calls stays what the original Blackbox (arda-ulas/blackbox) writes.
_DIRECT: Final = {"type": "direct"}


def _use(block: dict[str, Any], kind: str, at: str, side: str) -> Block:
    if kind != "tool_use":
        _known_fields(block, kind, ("type", "id", "name", "input", _MCP_SERVER, "cache_control"), at)
    name = require_str(block.get("name"), f"{at}.name", side)
    provider_id = require_str(block.get("id"), f"{at}.id", side)
    tool_input = json_copy({} if block.get("input") is None else block["input"])
    if kind == "tool_use":
        part = {"type": "tool_use", "toolCallId": "", "toolName": name, "toolInput": tool_input}
        if block.get("caller") not in (None, _DIRECT):  # the default caller: as the original Blackbox
            part["caller"] = neutral_fields(
                require_object(block["caller"], f"{at}.caller", side), f"{at}.caller"
            )
        return part, provider_id
    if kind == "mcp_tool_use":
        server = require_str(block.get(_MCP_SERVER), f"{at}.{_MCP_SERVER}", side)
        return server_use("", f"{server}/{name}", tool_input), provider_id
    return server_use("", name, tool_input), provider_id


def _result(block: dict[str, Any], kind: str, at: str) -> Any:
    if kind == "mcp_tool_result":
        return {"isError": block.get("is_error") is True, "content": json_copy(block.get("content"))}
    _known_fields(block, kind, ("type", "tool_use_id", "content", "cache_control"), at)
    return json_copy(block.get("content"))


def _known_fields(block: dict[str, Any], kind: str, known: tuple[str, ...], at: str) -> None:
    """Refuse a field of a provider-run tool's block that is not recorded (``null`` means absent)."""
    for field, value in block.items():
        if field not in known and value is not None:
            unsupported(
                f"the field {label(field)} of a {label(kind)} block",
                "it is not recorded in this version, so a replay could not give it back",
                f"{at}.{field}",
            )


def neutral_parts(blocks: list[Block], ids: CallIds, at: str) -> list[dict[str, Any]]:
    """The parts with neutral ids: ``call-N`` for the agent's calls, ``server-N`` for provider-run ones.

    A result block must answer a provider-run call and be the block type that call's tool returns,
    so a replay writes it back as it was.
    """
    parts: list[dict[str, Any]] = []
    for position, (part, provider_id) in enumerate(blocks):
        if provider_id is None:
            parts.append(part)
        elif part["type"] == "tool_use":
            caller = part.get("caller")
            if isinstance(caller, dict) and isinstance(caller.get("toolId"), str):
                part["caller"] = {**caller, "toolId": ids.server(caller["toolId"])[0]}
            parts.append({**part, "toolCallId": ids.neutral(provider_id, part["toolName"])})
        elif part["type"] == "server_tool_use":
            server_id, _ = ids.server(provider_id, part["toolName"])
            parts.append({**part, "toolCallId": server_id})
        else:
            server_id, name = ids.server(provider_id)
            kind = part.pop("resultType")
            if kind != _result_type(name):
                unsupported(
                    f"a {label(kind)} block answering the tool {label(name)}",
                    "a replay writes the block type that tool returns",
                    f"{at}[{position}]",
                )
            parts.append({**part, "toolCallId": server_id, "toolName": name})
    return parts


def _result_type(name: str) -> str:
    if "/" in name:
        return "mcp_tool_result"
    return _RESULT_TYPES.get(name, f"{name}{_RESULT_SUFFIX}")


def wire_block(part: dict[str, Any]) -> dict[str, Any]:
    """The content block a replay returns for one neutral part."""
    kind = part["type"]
    if kind == "text":
        citations = [wire_fields(citation) for citation in part.get("citations") or []]
        return {"type": "text", "text": part["text"], "citations": citations or None}
    if kind == "compaction":
        return {"type": "compaction", **wire_fields(part["content"])}
    if kind == "tool_use":
        block = {
            "type": "tool_use",
            "id": part["toolCallId"],
            "name": part["toolName"],
            "input": part["toolInput"],
        }
        if "caller" in part:
            block["caller"] = wire_fields(part["caller"])
        return block
    name = part["toolName"]
    if kind == "server_tool_use":
        if "/" in name:
            server, tool = name.split("/", 1)
            return {
                "type": "mcp_tool_use",
                "id": part["toolCallId"],
                "name": tool,
                _MCP_SERVER: server,
                "input": part["toolInput"],
            }
        return {"type": "server_tool_use", "id": part["toolCallId"], "name": name, "input": part["toolInput"]}
    result_type = _result_type(name)
    if result_type == "mcp_tool_result":
        result = require_object(part["result"], "an MCP tool result", "recorded")
        return {
            "type": result_type,
            "tool_use_id": part["toolCallId"],
            "is_error": result.get("isError") is True,
            "content": result.get("content"),
        }
    return {"type": result_type, "tool_use_id": part["toolCallId"], "content": part["result"]}
