"""A cassette whose tool rounds disagree with their model output, rehashed so its chain is valid: verify
keeps the original Blackbox's verdict (pass) with a warning, and a replay refuses it before the agent
sends anything."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox import CassetteError
from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.cli import main
from pytest_blackbox.engine.options import SessionOptions
from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing import FakeProvider
from pytest_blackbox.trace.io import load_trace, save_trace
from pytest_blackbox.trace.model import Trace
from tests.agents.travel import Run, run_agent
from tests.analysis.conftest import rechain


def _swap_rome_steps(steps: list[Any]) -> None:
    steps[6], steps[7] = steps[7], steps[6]


def _other_id(steps: list[Any]) -> None:
    for index in (6, 7):
        steps[index]["payload"]["toolCallId"] = "call-9"


def _other_name(steps: list[Any]) -> None:
    for index in (6, 7):
        steps[index]["payload"]["toolName"] = "get_time"


EDITS: dict[str, tuple[Callable[[list[Any]], None], str]] = {
    "result-first": (_swap_rome_steps, "step 6: its tool_result call-1 comes before any tool_call call-1"),
    "other-id": (
        _other_id,
        "step 6: its tool_call get_weather has toolCallId call-9, but the model_output at step 5 "
        "announced call-1",
    ),
    "other-name": (
        _other_name,
        "step 6: its tool_call call-1 is named get_time, but the model_output at step 5 "
        "announced get_weather",
    ),
}


def inconsistent(path: Path, edit: Callable[[list[Any]], None]) -> None:
    """The recorded cassette with its second tool round edited and its hash chain computed again."""
    trace: Trace = copy.deepcopy(load_trace(path))
    edit(trace["steps"])
    save_trace(rechain(trace), path)


@pytest.mark.parametrize("flavor", [("anthropic", False), ("openai", True)], indirect=True)
@pytest.mark.parametrize("case", list(EDITS))
def test_replay_refuses_inconsistent_tool_rounds_before_any_request(
    recorded: tuple[Path, Run, str],
    fake_provider: FakeProvider,
    flavor: tuple[str, bool],
    offline: Callable[[], list[str]],
    case: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, _, root = recorded
    edit, problem = EDITS[case]
    inconsistent(path, edit)
    report = verify_trace(path)
    assert report.ok
    assert report.warnings == (f"{problem} (a replay refuses this cassette)",)
    assert main(["verify", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"Warning: {problem} (a replay refuses this cassette)"
    seen = len(fake_provider.requests)
    attempts = offline()
    options = SessionOptions(mode="replay", cassette=path)
    with pytest.raises(CassetteError) as raised, Session(options, exit_net=False) as session:
        run_agent(flavor, root, session=session)
    assert str(raised.value) == (
        f"{problem}; this cassette's tool rounds disagree with its model output, so it cannot be replayed "
        "(record it again)"
    )
    assert raised.value.step_index == 6
    assert attempts == []
    assert len(fake_provider.requests) == seen
