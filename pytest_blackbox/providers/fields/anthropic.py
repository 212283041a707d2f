"""Anthropic Messages: the fields of a response and of its stream's events (docs/providers.md)."""

from __future__ import annotations

from typing import Final

from .shapes import DROPPED, WHOLE, Kinds, fields

__all__ = ["BLOCKS", "EVENTS", "MESSAGE", "REQUEST"]

_RESULT: Final = fields("type tool_use_id content caller is_error")

#: Content blocks by type: text, calls and provider-run tools' results are given back; thinking is
#: dropped (docs/providers.md#what-a-replay-does-not-reproduce); a compaction block is kept whole.
BLOCKS: Final = Kinds(
    {
        "text": fields("type text citations"),
        "tool_use": fields("type id name input caller", refused="toolset_name"),
        "server_tool_use": fields("type id name input caller"),
        "mcp_tool_use": fields("type id name input server_name"),
        **dict.fromkeys(
            (
                "web_search_tool_result",
                "web_fetch_tool_result",
                "code_execution_tool_result",
                "bash_code_execution_tool_result",
                "text_editor_code_execution_tool_result",
                "tool_search_tool_result",
                "mcp_tool_result",
                "advisor_tool_result",
            ),
            _RESULT,
        ),
        "thinking": DROPPED,
        "redacted_thinking": DROPPED,
        "compaction": WHOLE,
    },
    refused=frozenset({"container_upload", "fallback", "mcp_tool_listing"}),
)

#: The message; ``stop_details`` and ``container`` are the module's to record or refuse.
MESSAGE: Final = fields(
    "type role stop_reason stop_sequence stop_details container",
    "id model usage diagnostics context_management",
    "input_transformations",
    content=BLOCKS,
)

#: Stream events by type; each delta adds to the block or message it names.
EVENTS: Final = Kinds(
    {
        "message_start": fields("type", message=MESSAGE),
        "content_block_start": fields("type index", content_block=BLOCKS),
        "content_block_delta": fields(
            "type index",
            delta=Kinds(
                {
                    "text_delta": fields("type text"),
                    "input_json_delta": fields("type partial_json"),
                    "citations_delta": fields("type citation"),
                    "compaction_delta": fields("type content encrypted_content"),
                    "thinking_delta": DROPPED,
                    "signature_delta": DROPPED,
                }
            ),
        ),
        "content_block_stop": fields("type index"),
        "message_delta": fields(
            "type",
            "usage context_management",
            "input_transformations",
            delta=fields("stop_reason stop_sequence stop_details container"),
        ),
        "message_stop": fields("type"),
        "ping": fields("type"),
    }
)

#: The request's top-level fields: compared (docs/providers.md#anthropic-messages); dropped on purpose,
#: as they change how or where the answer is made, billed or cached, not what it says (``stream``, the
#: end-user ``metadata``, capacity and region, prompt caching, cache diagnostics, the protocol version
#: and beta flags Vertex AI and Bedrock carry in the body); refused: a compaction request, server-held
#: threads and fallback models, whose answer the cassette could not hold or compare.
REQUEST: Final = fields(
    "model messages system tools max_tokens temperature top_p top_k tool_choice stop_sequences "
    "output_config thinking context_management mcp_servers container",
    "stream metadata service_tier inference_geo speed cache_control diagnostics anthropic_version "
    "anthropic_beta billing_policy fallback_credit_token",
    "compaction thread fallbacks",
)
