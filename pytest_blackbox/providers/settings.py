"""Request settings written in a provider's own vocabulary, kept in the neutral one.

``params`` speaks the format's camelCase vocabulary, not raw provider JSON: a setting whose value
holds provider names (Anthropic's ``context_management`` edits with their ``{"type": "input_tokens",
"value": 50000}`` thresholds, the Responses API's ``context_management`` entries) is recorded with
its names in camelCase, compared strictly, and refused, naming the field, where its shape is one
this version does not know. See docs/cassette-format.md#context-management.
"""

from __future__ import annotations

from typing import Any, Final

from .common import json_copy, list_field, require_object, require_str, unsupported
from .content import camel_key, neutral_fields

__all__ = ["anthropic_context", "responses_context"]

_SHAPE_ADVICE: Final = (
    "context management edits are recorded when their settings are text, numbers, booleans, lists "
    'of names and {"type", "value"} thresholds; this one is not, so it could not be compared'
)


def anthropic_context(value: Any) -> dict[str, Any] | None:
    """Anthropic's ``context_management`` as ``params.contextManagement``: ``{"edits": [edit, …]}``,
    each edit its ``type`` and its settings in camelCase, a threshold ``{"type": T, "value": V}`` as
    ``{camelCase(T): V}`` (``{"inputTokens": 50000}``) and one without a value as ``{camelCase(T): true}``.
    """
    if value is None:
        return None
    at = "context_management"
    config = require_object(value, at)
    for key in config:
        if key != "edits" and config[key] is not None:
            unsupported(f"the context management field {key}", _SHAPE_ADVICE, f"{at}.{key}")
    edits = list_field(config, "edits")
    return {"edits": [_edit(raw, f"{at}.edits[{index}]") for index, raw in enumerate(edits)]}


def _edit(raw: Any, at: str) -> dict[str, Any]:
    edit = require_object(raw, at)
    neutral: dict[str, Any] = {"type": require_str(edit.get("type"), f"{at}.type")}
    for key, value in edit.items():
        if key != "type" and value is not None:
            neutral[camel_key(key, at)] = _setting(value, f"{at}.{key}")
    return neutral


def _setting(value: Any, at: str) -> Any:
    if isinstance(value, dict):
        return _threshold(value, at)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    if isinstance(value, (str, bool, int, float)):
        return json_copy(value)
    unsupported("a context management setting of this shape", _SHAPE_ADVICE, at)


def _threshold(value: dict[str, Any], at: str) -> dict[str, Any]:
    """``{"type": "input_tokens", "value": 50000}`` → ``{"inputTokens": 50000}``."""
    kind, amount = value.get("type"), value.get("value")
    numeric = amount is None or (isinstance(amount, (int, float)) and not isinstance(amount, bool))
    if not isinstance(kind, str) or set(value) - {"type", "value"} or not numeric:
        unsupported("a context management setting of this shape", _SHAPE_ADVICE, at)
    return {camel_key(kind, f"{at}.type"): True if amount is None else json_copy(amount)}


def responses_context(value: Any) -> list[dict[str, Any]] | None:
    """The Responses API's ``context_management`` entries (``{"type": "compaction",
    "compact_threshold": N}``) as ``params.contextManagement``, each entry's names in camelCase."""
    if value is None:
        return None
    entries = list_field({"context_management": value}, "context_management")
    return [
        neutral_fields(require_object(raw, f"context_management[{index}]"), f"context_management[{index}]")
        for index, raw in enumerate(entries)
    ]
