"""``inspect`` and ``view`` name the response-content extension when a cassette uses it, and only then."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_blackbox.analysis.extensions import extensions_used

NAME = "response content, provider-run tools and citations"
PLAIN_INPUT: Any = {
    "messages": [{"role": "user", "content": "hi"}],
    "tools": [{"name": "f", "description": ""}],
}
SEARCH_TOOL: Any = {"name": "web_search", "description": "", "builtin": "web_search_20250305"}
SERVER_USE: Any = {
    "type": "server_tool_use",
    "toolCallId": "server-0",
    "toolName": "web_search",
    "toolInput": {},
}


@pytest.mark.parametrize(
    ("steps", "named"),
    [
        (
            [
                {"type": "model_input", "payload": PLAIN_INPUT},
                {"type": "model_output", "payload": {"type": "final_answer", "text": "a"}},
            ],
            False,
        ),
        ([{"type": "model_input", "payload": {**PLAIN_INPUT, "tools": [SEARCH_TOOL]}}], True),
        (
            [
                {
                    "type": "model_output",
                    "payload": {"type": "final_answer", "text": "", "content": [SERVER_USE]},
                }
            ],
            True,
        ),
        (
            [
                {
                    "type": "model_input",
                    "payload": {"messages": [{"role": "assistant", "content": [SERVER_USE]}], "tools": []},
                }
            ],
            True,
        ),
    ],
    ids=["plain", "builtin-tool", "output-content", "history-part"],
)
def test_the_extension_is_named_only_when_used(steps: list[Any], named: bool) -> None:
    assert (NAME in [extension.name for extension in extensions_used(steps)]) is named
