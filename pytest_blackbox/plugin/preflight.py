"""What a test's cassette run must pass before any model call is paid for: a cassette path of its
own that is a file, the record-mode decision acted on (no cassette under ``none``, a recording
refused in CI), a folder that takes new files when the run may write, and a cassette that passes
``blackbox verify`` when it replays. Each check that fails gives the outcome and the block the test
fails with. See docs/pytest.md#record-modes.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..engine import environment_keys, load_verified
from ..trace.model import Trace
from ..vocabulary import Outcome
from . import messages
from .config import Settings, rerecord_command
from .decision import Decision, decide
from .report import shown_path

__all__ = ["Ready", "Refusal", "in_ci", "preflight"]

_FALSE_VALUES = ("", "0", "false", "no")


@dataclass(frozen=True)
class Refusal:
    """The test fails before its run starts: what the summary counts, and the block it shows."""

    outcome: Outcome
    message: str


@dataclass(frozen=True)
class Ready:
    """The run may start: its decision, the checked cassette of a replay, and whether a
    ``new_episodes`` replay must stay strict and write nothing (its folder takes no new files)."""

    decision: Decision
    trace: Trace | None = None
    read_only: bool = False


def in_ci() -> bool:
    """The ``CI`` variable, set by every CI service, means no test may reach a real model."""
    return os.environ.get("CI", "").strip().lower() not in _FALSE_VALUES


def preflight(item: pytest.Item, settings: Settings, shared_with: str | None) -> Ready | Refusal:
    """Every check, in order; ``shared_with`` names another test whose derived cassette path is this one's."""
    cassette = settings.cassette
    shown = shown_path(item, cassette)
    if shared_with is not None:
        return Refusal("invalid", messages.shared(item.nodeid, shared_with, shown))
    if cassette.exists() and not cassette.is_file():
        return Refusal("invalid", messages.not_a_file(shown))
    decision = _decision(item, settings, shown)
    if isinstance(decision, Refusal):
        return decision
    read_only = False
    if decision.writes:
        reason = _unwritable(cassette.parent)
        if reason is not None and not decision.new_episodes:
            folder = shown_path(item, cassette.parent)
            return Refusal("unwritable", messages.unwritable(shown, folder, reason))
        # a new_episodes replay needs no write when the run matches: it then replays as ``none``
        # does (a new episode could not be kept: it diverges)
        read_only = reason is not None
    if decision.action != "replay":
        return Ready(decision, read_only=read_only)
    trace = _verified(item, cassette, shown)
    return trace if isinstance(trace, Refusal) else Ready(decision, trace, read_only)


def _decision(item: pytest.Item, settings: Settings, shown: str) -> Decision | Refusal:
    """Record or replay (``decision.decide``), or why the test fails instead."""
    decision = decide(
        settings.record_mode,
        exists=settings.cassette.is_file(),
        ci=in_ci(),
        allow_record=settings.allow_record,
    )
    if decision.action == "missing":
        legacy = settings.legacy_cassette
        shown_legacy = shown_path(item, legacy) if legacy is not None and legacy.is_file() else None
        command = rerecord_command(item, "once")
        return Refusal("missing", messages.missing(shown, command, shown_legacy))
    if decision.action == "refused":
        command = rerecord_command(item, decision.record_with or settings.record_mode)
        return Refusal("refused", messages.ci_refusal(shown, settings.record_mode, command))
    return decision


def _unwritable(folder: Path) -> str | None:
    """Why ``folder`` takes no new files (``None``: it does), probed with a file created and removed."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".blackbox-probe-", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def _verified(item: pytest.Item, cassette: Path, shown: str) -> Trace | Refusal:
    """The cassette's trace, read and checked once, if it passes ``blackbox verify``; otherwise the
    refusal saying which invariant failed."""
    keys = list(environment_keys(os.environ).values())
    report, trace = load_verified(cassette, api_keys=keys)
    if trace is None:
        command = rerecord_command(item, "all")
        return Refusal("invalid", messages.verify_failed(report, str(cassette), shown, command))
    return trace
