"""A response's envelope beyond its text and calls: moderation results, logprobs, omitted wire fields.

All are optional ``model_output`` fields, written only when a response has them, so a cassette
of a response without them stays byte for byte what it was. ``moderation`` keeps the moderation
result the API sent (Chat Completions and Responses share it) with its field names in camelCase and
its category names, which are data, as sent; a replay converts it back and hands the SDK the same
object. ``logprobs`` keeps the answer text's token log probabilities (both OpenAI APIs share their
shape) the same way. ``omitted`` lists the neutral names of wire fields a response left out where a replay
otherwise sends a default (Gemini's candidate ``index``, the Responses ``logprobs`` of a text part),
so the replayed object has the same fields the live one had. ``reasoning`` is the reasoning text an
OpenAI-compatible server sent beside a Chat answer (``providers.reasoning``).

See docs/cassette-format.md#stops-choices-logprobs-and-moderation.
"""

from __future__ import annotations

import re
from typing import Any, Final, TypeVar

from ..trace.model import FinalAnswer, Omitted, ToolCallsOutput
from .common import json_copy, label, malformed, present, unsupported

__all__ = [
    "Output",
    "chat_logprobs",
    "chat_logprobs_wire",
    "chat_omitted",
    "merge_chat_logprobs",
    "wire_json",
    "with_envelope",
]

Output = TypeVar("Output", FinalAnswer, ToolCallsOutput, FinalAnswer | ToolCallsOutput)

#: Moderation fields whose keys are category names (data, kept as sent).
_CATEGORY_MAPS: Final = frozenset({"categories", "category_scores", "category_applied_input_types"})
_SNAKE: Final = re.compile(r"[a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)*")
_NOT_RECORDED: Final = "it is not recorded, so a replay could not give it back"


def with_envelope(
    output: Output,
    *,
    moderation: Any = None,
    logprobs: Any = None,
    omitted: tuple[Omitted, ...] = (),
    reasoning: dict[str, str] | None = None,
) -> Output:
    """``output`` with the moderation result, the logprobs, the omitted fields and the
    reasoning, each only when there is one (``logprobs``: the wire's list of tokens, at its place in
    the response)."""
    if reasoning:
        output["reasoning"] = reasoning
    if moderation is not None:
        output["moderation"] = _neutral(moderation, "moderation")
    if logprobs is not None:
        output["logprobs"] = _neutral(logprobs, "logprobs")
    if omitted:
        output["omitted"] = list(omitted)
    return output


def wire_json(recorded: Any) -> Any:
    """What a replay sends for a recorded ``moderation`` or ``logprobs`` field (snake_case keys)."""
    if isinstance(recorded, dict):
        return {
            (wire := _snake(key)): json_copy(value) if wire in _CATEGORY_MAPS else wire_json(value)
            for key, value in recorded.items()
        }
    if isinstance(recorded, list):
        return [wire_json(item) for item in recorded]
    return recorded


def _neutral(value: Any, at: str) -> Any:
    if isinstance(value, dict):
        neutral: dict[str, Any] = {}
        for key, item in value.items():
            if not _SNAKE.fullmatch(key):
                unsupported(
                    f"a response field named {label(key)}",
                    "a replay could not give its name back as it came",
                    at,
                )
            where = f"{at}.{key}"
            neutral[_camel(key)] = json_copy(item) if key in _CATEGORY_MAPS else _neutral(item, where)
        return neutral
    if isinstance(value, list):
        return [_neutral(item, f"{at}[{index}]") for index, item in enumerate(value)]
    return json_copy(value)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _snake(key: str) -> str:
    return re.sub(r"[A-Z]", lambda match: "_" + match.group().lower(), key)


# -- Chat Completions ``null`` fields ------------------------------------------------------------


def chat_omitted(finish: Any, arguments: list[Any]) -> tuple[Omitted, ...]:
    """The Chat fields a choice sent as ``null`` that a replay otherwise fills: its ``finish_reason``
    (servers that never name one), its calls' ``arguments`` (all of them, or none: refused)."""
    omitted: tuple[Omitted, ...] = ("finishReason",) if finish is None else ()
    nulls = [value is None for value in arguments]
    if any(nulls) and not all(nulls):
        unsupported(
            "tool calls of which only some have null arguments",
            "a replay gives null arguments back to every call of an answer or to none",
            "choices[0].message.tool_calls[].function.arguments",
        )
    return omitted + (("callArguments",) if any(nulls) else ())


# -- Chat Completions logprobs: ``choices[0].logprobs`` is ``{"content": [...], "refusal": [...]}`` ----


def chat_logprobs(choice: dict[str, Any]) -> Any:
    """The content tokens' logprobs of a Chat choice (``None`` when it has none); a refusal's are refused."""
    logprobs = choice.get("logprobs")
    if logprobs is None:
        return None
    if not isinstance(logprobs, dict):
        malformed("choices[0].logprobs", "a JSON object or null", "response")
    if present(logprobs.get("refusal")):
        unsupported("logprobs of a refusal", _NOT_RECORDED, "choices[0].logprobs.refusal")
    return logprobs.get("content")


def chat_logprobs_wire(recorded: list[Any] | None) -> dict[str, Any] | None:
    """A replayed Chat choice's ``logprobs`` for the recorded tokens."""
    return None if recorded is None else {"content": wire_json(recorded), "refusal": None}


def merge_chat_logprobs(merged: dict[str, Any] | None, delta: Any) -> dict[str, Any] | None:
    """``merged`` with a streamed chunk's logprobs appended, as the SDK's stream helper joins them."""
    if not isinstance(delta, dict):
        return merged
    merged = merged or {"content": None, "refusal": None}
    for key in ("content", "refusal"):
        if isinstance(delta.get(key), list):
            merged[key] = (merged[key] or []) + delta[key]
    return merged
