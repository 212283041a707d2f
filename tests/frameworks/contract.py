"""What every framework suite proves the same way: a recorded run replays offline without running a
tool, and a changed instruction fails strictly at ``systemPrompt``.

Each suite hands these its agent as a ``Run``: given the server root, the session, the tools and the
instructions, run the framework's agent once and return its answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_blackbox import ReplayDivergenceError, Session
from pytest_blackbox.testing import FakeProvider
from tests.conftest import NetworkGuard

from .conftest import CHANGED_INSTRUCTIONS, INSTRUCTIONS, TravelTools

Run = Callable[[str, Session, TravelTools, str], str]
Sessions = Callable[..., Session]


@dataclass
class Recording:
    """A recorded cassette, and the root URL the fake provider had (it is stopped: a replay has none)."""

    path: Path
    root: str


def record(
    fake: FakeProvider, path: Path, sessions: Sessions, run: Run
) -> tuple[Recording, str, TravelTools]:
    """Record one run against the fake, then stop it; the answer and the tools that ran come back too."""
    tools = TravelTools()
    bb = sessions(mode="record", out=path)
    answer = run(fake.base_url, bb, tools, INSTRUCTIONS)
    bb.finish(result=answer)
    assert fake.pending == 0
    root = fake.base_url
    fake.stop()
    return Recording(path, root), answer, tools


def replays_offline(
    recorded: Recording, network_guard: NetworkGuard, sessions: Sessions, run: Run, *, final: str, steps: int
) -> None:
    """The same answer, no tool run, no connection attempted, every step replayed."""
    attempts = network_guard.block()
    tools = TravelTools()
    bb = sessions(mode="replay", cassette=recorded.path)
    answer = run(recorded.root, bb, tools, INSTRUCTIONS)
    report = bb.finish(result=answer)
    assert answer == final
    assert tools.calls == []
    assert attempts == []
    assert (report.mode, report.status, report.replayed_steps, report.steps) == (
        "replay",
        "success",
        steps,
        steps,
    )


def fails_strictly(
    recorded: Recording,
    network_guard: NetworkGuard,
    sessions: Sessions,
    run: Run,
    rejected_as: type[BaseException],
) -> None:
    """The framework raises ``rejected_as`` for the 400 that carries the divergence; ``finish()`` the
    divergence itself, naming ``systemPrompt`` with both values."""
    network_guard.block()
    tools = TravelTools()
    bb = sessions(mode="replay", cassette=recorded.path)
    with pytest.raises(rejected_as) as rejected:
        run(recorded.root, bb, tools, CHANGED_INSTRUCTIONS)
    assert "[blackbox] replay diverged at step 0, systemPrompt" in str(rejected.value)
    error = bb.error
    assert isinstance(error, ReplayDivergenceError)
    assert (error.step_index, error.path) == (0, "systemPrompt")
    assert (error.expected, error.actual) == (json.dumps(INSTRUCTIONS), json.dumps(CHANGED_INSTRUCTIONS))
    assert tools.calls == []
    with pytest.raises(ReplayDivergenceError) as finished:
        bb.finish()
    assert finished.value is error
