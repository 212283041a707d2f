"""One-line summaries of steps, as ``inspect`` and ``diff`` print them, worded as the original
Blackbox (arda-ulas/blackbox) words them; text from a cassette is masked and shortened. See
docs/cli-analysis.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

from ..trace.payloads import model_output_text, tool_calls_of
from ..trace.secrets import truncate_masked
from .jsondiff import render_value

__all__ = ["SUMMARY_TEXT_LIMIT", "describe_step", "type_label"]

#: Quoted texts in a summary are cut here (with ``…``), so a timeline line stays one screen line.
SUMMARY_TEXT_LIMIT: Final = 60

_WHITESPACE = re.compile(r"\s+")


def type_label(step_type: Any) -> str:
    """``tool_result`` → ``tool result``: how ``diff`` names a step type."""
    return str(step_type).replace("_", " ")


def _quoted(text: str, secrets: Iterable[str]) -> str:
    one_line = _WHITESPACE.sub(" ", text)
    return f'"{truncate_masked(one_line, SUMMARY_TEXT_LIMIT, secrets)}"'


def _short(text: str, secrets: Iterable[str]) -> str:
    return truncate_masked(_WHITESPACE.sub(" ", text), SUMMARY_TEXT_LIMIT, secrets)


def _name(payload: dict[str, Any], key: str = "toolName") -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else "unknown"


def describe_step(step: Any, secrets: Iterable[str] = ()) -> str:
    """``Model called with 1 message(s)``, ``Tool result: search → ok``, ``Run failed: unknown_tool``…"""
    step = step if isinstance(step, dict) else {}
    kind = step.get("type")
    payload = step.get("payload")
    body: dict[str, Any] = payload if isinstance(payload, dict) else {}
    if kind == "model_input":
        messages = body.get("messages")
        return f"Model called with {len(messages) if isinstance(messages, list) else 0} message(s)"
    if kind == "model_output":
        return _describe_output(body, secrets)
    if kind == "tool_call":
        return f"Tool called: {_short(_name(body), secrets)}"
    if kind == "tool_result":
        name = _short(_name(body), secrets)
        if "error" in body:
            error = body["error"]
            message = error if isinstance(error, str) else render_value(error, secrets)
            return f"Tool result: {name} → ERROR: {_short(message, secrets)}"
        return f"Tool result: {name} → ok"
    if kind == "metadata":
        return _describe_metadata(payload, secrets)
    return f"Unknown step type: {_short(str(kind), secrets)}"


def _describe_output(body: dict[str, Any], secrets: Iterable[str]) -> str:
    shape = body.get("type")
    text = model_output_text(body)
    if shape == "tool_call":
        return f"Model → tool_call: {_short(_name(body), secrets)}"
    if shape == "tool_calls":
        names = ", ".join(call["toolName"] for call in tool_calls_of(body))
        suffix = " (with text)" if text else ""
        return f"Model → tool_calls: {_short(names, secrets)}{suffix}"
    if shape == "final_answer":
        return f"Model → final_answer: {_quoted(text or '', secrets)}"
    return f"Model → output: {render_value(body, secrets, SUMMARY_TEXT_LIMIT)}"


def _describe_metadata(payload: Any, secrets: Iterable[str]) -> str:
    if isinstance(payload, dict):
        event = payload.get("event")
        if event == "run_completed" and isinstance(payload.get("result"), str):
            return f"Run completed: {_quoted(payload['result'], secrets)}"
        if event == "run_failed":
            reason = payload.get("reason")
            return f"Run failed: {_short(reason if isinstance(reason, str) else 'unknown', secrets)}"
    return f"Metadata: {render_value(payload, secrets, SUMMARY_TEXT_LIMIT)}"
