"""OpenAI Chat Completions: the fields of a completion and of its stream's chunks (docs/providers.md).

OpenAI-compatible servers (vLLM, Ollama, LM Studio, OpenRouter, Groq, Together, DeepSeek, Mistral)
answer in this shape with fields of their own: the message's reasoning (``reasoning_content``,
``reasoning``) is given back (``providers.reasoning``); the other extras they are known to send are
listed as dropped or refused.
"""

from __future__ import annotations

from typing import Final

from ..reasoning import CHAT_REASONING
from .shapes import Kinds, fields

__all__ = ["CHUNK", "COMPLETION", "REQUEST"]

#: What servers other than OpenAI add to a response or a choice beside the usage and ids: timings
#: and token counts (Groq ``x_groq``, Ollama and vLLM ``prompt_logprobs``/``kv_transfer_params``,
#: Mistral and vLLM's matched ``stop_reason``, OpenRouter's ``provider`` and ``native_finish_reason``).
_COMPAT_DROPPED: Final = "x_groq prompt_logprobs prompt_token_ids kv_transfer_params provider"
_COMPAT_CHOICE: Final = "stop_reason native_finish_reason token_ids"

_REASONING: Final = " ".join(CHAT_REASONING)
_FUNCTION: Final = fields("name arguments")
_TOOL_CALLS: Final = Kinds({"function": fields("id type", function=_FUNCTION)}, refused=frozenset({"custom"}))
#: ``audio`` and ``function_call`` are the module's to refuse (a replay could not give them back).
MESSAGE: Final = fields(
    f"role content refusal annotations audio function_call {_REASONING}",
    refused="reasoning_details",
    tool_calls=_TOOL_CALLS,
)

COMPLETION: Final = fields(
    "object moderation",
    f"id created model usage system_fingerprint service_tier metadata {_COMPAT_DROPPED}",
    choices=fields("index finish_reason logprobs", _COMPAT_CHOICE, message=MESSAGE),
)

CHUNK: Final = fields(
    "object moderation",
    f"id created model usage system_fingerprint service_tier obfuscation {_COMPAT_DROPPED}",
    choices=fields(
        "index finish_reason logprobs",
        _COMPAT_CHOICE,
        delta=fields(
            f"role content refusal annotations audio function_call {_REASONING}",
            refused="reasoning_details",
            tool_calls=fields("index id type", function=_FUNCTION),
        ),
    ),
)

#: The request's top-level fields: compared (docs/providers.md#openai-chat-completions); dropped on
#: purpose, as they change how the answer travels, is kept, billed or cached, not what it says
#: (``stream``, ``store``, end-user ids, capacity, prompt caching); refused by the module with advice of
#: its own (audio output, the legacy functions API).
REQUEST: Final = fields(
    "model messages tools max_tokens max_completion_tokens temperature top_p tool_choice response_format "
    "stop parallel_tool_calls seed reasoning_effort presence_penalty frequency_penalty logit_bias logprobs "
    "top_logprobs verbosity prediction modalities web_search_options moderation n",
    "stream stream_options metadata user safety_identifier store service_tier prompt_cache_key "
    "prompt_cache_retention prompt_cache_options",
    "audio functions function_call",
)
