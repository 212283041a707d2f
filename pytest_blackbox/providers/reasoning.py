"""The reasoning text OpenAI-compatible servers send beside a Chat Completions answer.

vLLM, Ollama's ``/v1``, LM Studio, OpenRouter, Groq, Together and DeepSeek put the model's reasoning
on the message, in ``reasoning_content`` or ``reasoning`` (a server may send both), and stream it in
the deltas of the same names before the answer. It is recorded as the ``model_output``'s
``reasoning``, each text under the neutral name of the field it came in (``reasoningContent``,
``reasoning``), so a replay gives it back in the same field, plain or streamed. See
docs/providers.md#openai-compatible-servers.
"""

from __future__ import annotations

from typing import Any, Final

from .common import unsupported
from .sse import pieces

__all__ = ["CHAT_REASONING", "JOINED_DELTAS", "chat_reasoning", "reasoning_deltas", "reasoning_wire"]

#: A Chat message's (and delta's) reasoning fields → their neutral names.
CHAT_REASONING: Final = {"reasoning_content": "reasoningContent", "reasoning": "reasoning"}
#: The delta fields whose pieces a stream joins into the message's text fields.
JOINED_DELTAS: Final = ("content", "refusal", *CHAT_REASONING)


def chat_reasoning(message: dict[str, Any], at: str) -> dict[str, str]:
    """A Chat message's reasoning texts by neutral name; a value other than a text is refused."""
    found: dict[str, str] = {}
    for wire, neutral in CHAT_REASONING.items():
        text = message.get(wire)
        if text is not None and not isinstance(text, str):
            unsupported(
                f"a {wire} that is not a text", "a replay could give back only a text", f"{at}.{wire}"
            )
        if text is not None:
            found[neutral] = text
    return found


def reasoning_wire(recorded: dict[str, str] | None) -> dict[str, str]:
    """The message fields a replay sends for recorded reasoning texts."""
    given = recorded or {}
    return {wire: given[neutral] for wire, neutral in CHAT_REASONING.items() if neutral in given}


def reasoning_deltas(message: dict[str, Any]) -> list[dict[str, str]]:
    """The deltas a replayed stream sends a message's reasoning in, before its answer: each text in
    fixed-size pieces (an empty text in one delta, so the joined message has it too)."""
    return [
        {wire: piece}
        for wire in CHAT_REASONING
        if isinstance(message.get(wire), str)
        for piece in pieces(message[wire]) or [""]
    ]
