"""What a test's cassette run does, decided from plain values: record, replay, or fail the test
before any model call (no cassette in record mode ``none``, or a recording refused in CI); and what
the summary counts for the error a run ended with.

It reads no file and no pytest object, so the whole table of record modes is unit-tested directly.
See docs/pytest.md#record-modes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import BlackboxUnsupportedError, CassetteError, OfflineRequestError, ReplayDivergenceError
from ..vocabulary import Outcome

__all__ = ["Decision", "decide", "error_outcome"]

Action = Literal["record", "replay", "missing", "refused"]


@dataclass(frozen=True)
class Decision:
    """The decision, and what the lifecycle needs to act on it."""

    action: Action
    #: Whether the run may write a file (a recording, or a ``new_episodes`` replay that may go live):
    #: the cassette's folder must take new files before any model call is paid for.
    writes: bool = False
    #: A ``new_episodes`` replay: it replays a private copy and may re-record it.
    new_episodes: bool = False
    #: For a refusal in CI: the record mode the re-record command should use.
    record_with: str | None = None


def decide(record_mode: str, *, exists: bool, ci: bool, allow_record: bool) -> Decision:
    """The decision for one test.

    ``exists``: the cassette is a file. ``ci``: the ``CI`` variable is set. ``allow_record``:
    ``--blackbox-allow-record``. (``--blackbox-disable`` runs live before anything is decided.)
    Re-recording over a cassette (``all``, ``rewrite``) leaves it in place until the new recording
    replaces it, so a failing test keeps it.
    """
    if not exists and record_mode == "none":
        return Decision("missing")
    records = record_mode in ("all", "rewrite") or not exists
    new_episodes = not records and record_mode == "new_episodes"
    if (records or new_episodes) and ci and not allow_record:
        record_with = "once" if record_mode == "once" or not exists else record_mode
        return Decision("refused", record_with=record_with)
    if records:
        return Decision("record", writes=True)
    return Decision("replay", writes=new_episodes, new_episodes=new_episodes)


def error_outcome(error: BaseException, recording: bool) -> Outcome:
    """What the summary counts for an error; any other error while recording means nothing was written."""
    if isinstance(error, ReplayDivergenceError):
        return "diverged"
    if isinstance(error, BlackboxUnsupportedError):
        return "unsupported"
    if isinstance(error, OfflineRequestError):
        return "refused"
    if recording:
        return "not_written"
    if isinstance(error, CassetteError):
        return "invalid"
    return "failed"
