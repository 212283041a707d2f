"""What a cassette uses beyond the original Blackbox v2 format: the one table of extension parts and fields.

Each extension is a documented neutral part type or field (docs/cassette-format.md, "Beyond the
original Blackbox v2"). The original Blackbox (arda-ulas/blackbox) loads and verifies such a
cassette but cannot replay it, so ``blackbox inspect`` and ``blackbox view`` name the ones a cassette
uses. A new extension adds its row here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, get_args

from ..trace.media import MEDIA_PART, message_parts
from ..trace.model import Stop

__all__ = ["EXTENSIONS", "ORIGINAL_CANNOT_REPLAY", "Extension", "extensions_used"]

#: What ``inspect`` and ``view`` say after naming the extensions a cassette uses.
ORIGINAL_CANNOT_REPLAY: Final = "the original Blackbox (arda-ulas/blackbox) cannot replay them"


@dataclass(frozen=True)
class Extension:
    """One extension: its name, where it is documented, and how a cassette shows it."""

    name: str
    #: The anchor of its subsection in docs/cassette-format.md.
    anchor: str
    #: Message part ``type`` values (in a ``model_input``'s messages) that only it writes.
    part_types: frozenset[str] = frozenset()
    #: ``model_output`` payload fields that only it writes.
    output_fields: frozenset[str] = frozenset()
    #: Tool definition fields (in a ``model_input``'s ``tools``) that only it writes.
    tool_fields: frozenset[str] = frozenset()
    #: ``model_output`` ``stop`` values that only it writes (the original knows ``length`` and ``refusal``).
    stops: frozenset[str] = frozenset()

    @property
    def doc(self) -> str:
        return f"docs/cassette-format.md#{self.anchor}"


EXTENSIONS: Final[tuple[Extension, ...]] = (
    Extension("media parts", "media-parts", part_types=frozenset({MEDIA_PART})),
    Extension(
        "response content, provider-run tools and citations",
        "response-content-provider-run-tools-and-citations",
        part_types=frozenset({"server_tool_use", "server_tool_result", "compaction"}),
        output_fields=frozenset({"content"}),
        tool_fields=frozenset({"builtin", "settings"}),
        stops=frozenset({"pause"}),
    ),
    Extension(
        "stops, choices, logprobs and moderation",
        "stops-choices-logprobs-and-moderation",
        output_fields=frozenset({"stopSequence", "moderation", "logprobs", "omitted", "choices"}),
        stops=frozenset(get_args(Stop)) - {"length", "refusal", "pause"},
    ),
    Extension(
        "reasoning from OpenAI-compatible servers",
        "reasoning-from-openai-compatible-servers",
        output_fields=frozenset({"reasoning"}),
    ),
)


def extensions_used(steps: Iterable[Any]) -> list[Extension]:
    """The extensions a trace's steps use, in table order (any JSON: nothing is assumed valid)."""
    part_types: set[Any] = set()
    output_fields: set[str] = set()
    tool_fields: set[str] = set()
    stops: set[Any] = set()
    for step in steps:
        if not isinstance(step, dict):
            continue
        payload = step.get("payload")
        if step.get("type") == "model_input":
            part_types.update(part.get("type") for part in message_parts(payload))
            tools = payload.get("tools") if isinstance(payload, dict) else None
            tool_fields.update(key for tool in tools or [] if isinstance(tool, dict) for key in tool)
        elif step.get("type") == "model_output" and isinstance(payload, dict):
            output_fields.update(payload)
            stops.add(payload.get("stop"))
    return [
        extension
        for extension in EXTENSIONS
        if extension.part_types & part_types
        or extension.output_fields & output_fields
        or extension.tool_fields & tool_fields
        or extension.stops & stops
    ]
