"""OpenAI Responses: the fields of a response and of its stream's events (docs/providers.md)."""

from __future__ import annotations

from typing import Final

from ..responses_content import SERVER_ITEMS
from .shapes import DROPPED, WHOLE, Kinds, fields

__all__ = ["EVENTS", "OUTPUT", "REQUEST", "RESPONSE"]

#: Output items by type: a built-in tool's item is given back whole, reasoning is dropped.
OUTPUT: Final = Kinds(
    {
        "message": fields(
            "type role",
            "id status phase",
            content=Kinds(
                {"output_text": fields("type text annotations logprobs"), "refusal": fields("type refusal")},
                refused=frozenset({"reasoning_text"}),
            ),
        ),
        "function_call": fields("type call_id name arguments", "id status", "async caller namespace"),
        "reasoning": DROPPED,
        **dict.fromkeys(SERVER_ITEMS, WHOLE),
    },
    refused=frozenset(
        {
            "function_call_output",
            "computer_call",
            "computer_call_output",
            "program",
            "program_output",
            "tool_search_call",
            "tool_search_output",
            "additional_tools",
            "compaction",
            "local_shell_call",
            "local_shell_call_output",
            "shell_call",
            "shell_call_output",
            "apply_patch_call",
            "apply_patch_call_output",
            "mcp_approval_request",
            "mcp_approval_response",
            "custom_tool_call",
            "custom_tool_call_output",
        }
    ),
)

#: The response. ``status``, ``incomplete_details`` and ``error`` are the module's (it records the
#: stops a replay can give back and refuses the rest); the fields a response echoes from its request
#: and the accounting are dropped (docs/providers.md#what-a-replay-does-not-reproduce).
RESPONSE: Final = fields(
    "object status incomplete_details error moderation",
    "id created_at completed_at model usage tool_usage instructions tools tool_choice temperature top_p "
    "top_logprobs frequency_penalty presence_penalty text reasoning store metadata parallel_tool_calls "
    "max_output_tokens max_tool_calls previous_response_id conversation truncation user service_tier "
    "background prompt prompt_cache_key prompt_cache_retention prompt_cache_options "
    "prompt_cache_diagnostics "
    "safety_identifier billing",
    "access_programs image input_transformations",
    output=OUTPUT,
)

#: Every event's fields: the closing event's ``response`` is checked as the response itself, and
#: every other event repeats a piece of it (an item, a part, a delta of its text), so those are
#: dropped once that response is read (an ``error`` event's fail the call, which is not recorded).
EVENTS: Final = fields(
    "type response",
    "sequence_number item_id output_index content_index summary_index annotation_index item part delta "
    "text refusal arguments logprobs obfuscation annotation code name input output status "
    "partial_image_b64 partial_image_index background output_format quality size command "
    "command_index message param",
)

#: The request's top-level fields: compared (docs/providers.md#openai-responses); dropped on purpose,
#: as they change how the answer travels, is kept, billed or cached, not what it says (``include`` asks
#: for output fields, which are recorded from the response; ``background: true`` is refused by the
#: module); refused: a stored prompt (the module's), image context compression, access programs and
#: background options, which this version does not record.
REQUEST: Final = fields(
    "model input instructions tools max_output_tokens temperature top_p tool_choice parallel_tool_calls "
    "max_tool_calls reasoning top_logprobs truncation moderation context_management "
    "previous_response_id conversation",
    "stream stream_options include metadata user safety_identifier store service_tier prompt_cache_key "
    "prompt_cache_retention prompt_cache_options background",
    "prompt image access_programs background_options",
    text=fields("format verbosity"),
)
