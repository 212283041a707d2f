"""Transcript importers: turn a run recorded elsewhere into an ordinary Blackbox v2 cassette.

Both importers are pure functions of the transcript text (no I/O, no clock), so an import is
reproducible hash for hash. Their errors are :class:`~pytest_blackbox.errors.TranscriptImportError`
and name a line, a message index or a field, never the transcript's content: transcripts hold
source code, tool output and sometimes secrets.
"""

from __future__ import annotations

from .chat_json import import_chat_json
from .claude_code import import_claude_code

__all__ = ["IMPORTERS", "import_chat_json", "import_claude_code"]

#: ``blackbox import --from`` names.
IMPORTERS = ("claude-code", "chat-json")
