"""Transcript importers: a run recorded elsewhere (Claude Code, a chat JSON) as a Blackbox v2 cassette.

Both are pure functions of the transcript text (no I/O, no clock), so an import is reproducible hash
for hash, and their errors never quote the transcript. See docs/fork-demo-import.md#blackbox-import.
"""

from __future__ import annotations

from .chat_json import import_chat_json
from .claude_code import import_claude_code

__all__ = ["IMPORTERS", "import_chat_json", "import_claude_code"]

#: ``blackbox import --from`` names.
IMPORTERS = ("claude-code", "chat-json")
