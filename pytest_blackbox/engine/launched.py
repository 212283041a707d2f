"""The child side of the ``blackbox`` launcher: one session per process, set up by the CLI only, and
the JSON status report the launcher reads.

See docs/engine.md#the-launcher-blackbox-record-and-blackbox-replay.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import BlackboxError, BlackboxUsageError
from ..vocabulary import UNSET

__all__ = ["LAUNCHED_VAR", "check_options", "first_session", "launched", "remember", "report_refusal"]

#: Set by the ``blackbox`` launcher in the child's environment: the CLI owns the session's settings.
LAUNCHED_VAR = "BLACKBOX_LAUNCHED"
_CLI_OWNED = (
    "mode",
    "cassette",
    "out",
    "trace_id",
    "match",
    "fork_at",
    "fork_set",
    "continue_with",
    "script",
    "report_path",
)


class _Launched:
    """The one session of a process started by the launcher (held weakly: the user owns it)."""

    count = 0
    session: weakref.ref[Any] | None = None


def launched() -> bool:
    """Whether this process was started by the launcher."""
    return os.environ.get(LAUNCHED_VAR) == "1"


def write_report(path: Path, data: dict[str, Any]) -> None:
    """Write the launcher's JSON status report atomically (the launcher may read it at any moment)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def check_options(options: Mapping[str, Any]) -> None:
    """Under the launcher, one session per process, configured by the CLI only."""
    if not launched():
        return
    overridden = sorted(k for k in _CLI_OWNED if options.get(k) not in (None, UNSET))
    if overridden:
        raise BlackboxUsageError(
            f"blackbox() options {', '.join(overridden)} override the CLI's settings; under `blackbox record/"
            "replay/fork` the command line decides them, so remove them from the code"
        )
    _Launched.count += 1
    if _Launched.count > 1:
        raise BlackboxUsageError(
            "a second blackbox() session was created in a process started by the blackbox CLI; the CLI runs "
            "one session per command and reports on it"
        )


def remember(session: object) -> None:
    """Under the launcher, remember the process's session: a later refused one reports through it."""
    if launched():
        _Launched.session = weakref.ref(session)


def first_session() -> Any:
    """The session :func:`remember` kept, while it lives; else ``None``."""
    return _Launched.session() if _Launched.session is not None else None


def report_refusal(error: BlackboxError) -> None:
    """Under the launcher, a refused session with no first session to tell still reaches the report."""
    path = os.environ.get("BLACKBOX_REPORT")
    if launched() and path:
        write_report(Path(path), {"ok": False, "error": str(error), "errorType": type(error).__name__})
