"""A response's envelope beyond its text and calls: OpenAI moderation results and omitted wire fields.

Both are optional ``model_output`` fields, written only when a response has them, so a cassette
of a response without them stays byte for byte what it was. ``moderation`` keeps the moderation
result the API sent (Chat Completions and Responses share it) with its field names in camelCase and
its category names, which are data, as sent; a replay converts it back and hands the SDK the same
object. ``omitted`` lists the neutral names of wire fields a response left out where a replay
otherwise sends a default (Gemini's candidate ``index``, the Responses ``logprobs`` of a text part),
so the replayed object has the same fields the live one had.

See docs/cassette-format.md#stops-choices-logprobs-and-moderation.
"""

from __future__ import annotations

import re
from typing import Any, Final, TypeVar

from ..trace.model import FinalAnswer, Omitted, ToolCallsOutput
from .common import json_copy, label, unsupported

__all__ = ["moderation_wire", "with_envelope"]

Output = TypeVar("Output", FinalAnswer, ToolCallsOutput)

#: Moderation fields whose keys are category names (data, kept as sent).
_CATEGORY_MAPS: Final = frozenset({"categories", "category_scores", "category_applied_input_types"})
_SNAKE: Final = re.compile(r"[a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)*")


def with_envelope(output: Output, *, moderation: Any = None, omitted: tuple[Omitted, ...] = ()) -> Output:
    """``output`` with the moderation result and the omitted fields, each only when there is one."""
    if moderation is not None:
        output["moderation"] = _neutral(moderation, "moderation")
    if omitted:
        output["omitted"] = list(omitted)
    return output


def moderation_wire(recorded: Any) -> Any:
    """The moderation object a replay sends for a recorded ``moderation`` field (snake_case keys)."""
    if isinstance(recorded, dict):
        return {
            (wire := _snake(key)): json_copy(value) if wire in _CATEGORY_MAPS else moderation_wire(value)
            for key, value in recorded.items()
        }
    if isinstance(recorded, list):
        return [moderation_wire(item) for item in recorded]
    return recorded


def _neutral(value: Any, at: str) -> Any:
    if isinstance(value, dict):
        neutral: dict[str, Any] = {}
        for key, item in value.items():
            if not _SNAKE.fullmatch(key):
                unsupported(
                    f"a moderation field named {label(key)}",
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
