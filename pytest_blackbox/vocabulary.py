"""The words several layers share, each defined once and importing nothing, so the engine, the
pytest plugin and the CLI (and their option parsers) name the same values.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal

__all__ = [
    "FAILING",
    "MATCHES",
    "MEDIA_MODES",
    "RECORD_MODES",
    "UNSET",
    "Match",
    "Media",
    "Outcome",
    "RecordMode",
    "field_pattern",
]

#: How a replay compares requests with the recording (docs/engine.md#replay-what-is-compared).
Match = Literal["strict", "sequence"]
MATCHES: Final[tuple[Match, ...]] = ("strict", "sequence")

#: What a cassette keeps of the images, documents, audio and files a request sends: their digest only,
#: or their bytes as well (docs/cassette-format.md#media-parts).
Media = Literal["digest", "inline"]
MEDIA_MODES: Final[tuple[Media, ...]] = ("digest", "inline")

#: The pytest plugin's record modes (docs/pytest.md#record-modes).
RecordMode = Literal["none", "once", "new_episodes", "all", "rewrite"]
RECORD_MODES: Final[tuple[RecordMode, ...]] = ("none", "once", "new_episodes", "all", "rewrite")

#: How a test's cassette run ended; the plugin's summary counts these.
Outcome = Literal[
    "replayed",
    "recorded",
    "unchanged",
    "live",
    "diverged",
    "unsupported",
    "not_written",
    "invalid",
    "unwritable",
    "missing",
    "refused",
    "failed",
    "skipped",
]
#: Outcomes that mean the cassette or the agent is wrong: they fail the run even when pytest counted
#: the test as passing (an xfail, say).
FAILING: Final[tuple[Outcome, ...]] = ("diverged", "unsupported", "invalid")

#: A keyword argument the caller did not give (where ``None`` is a value of its own).
UNSET: Final[Any] = object()

_INDEX: Final = re.compile(r"\[\d+\]")


def field_pattern(path: str) -> str:
    """A request or response field's path with every index written ``[]``: what the ``drop_fields``
    setting names (docs/providers.md#fields-blackbox-does-not-know), as the refusal and the setting
    read it."""
    return _INDEX.sub("[]", path.strip())
