"""Record a real SDK agent through the fake provider, then replay it offline: both SDKs, sync and async."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.cli import main as cli_main
from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import ReplayDivergenceError
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests.agents.travel import FINAL, SYSTEM, WEATHER, Run, ToolBox, run_agent, script, tool_specs
from tests.conftest import NetworkGuard

STEP_TYPES = [
    "model_input",
    "model_output",
    "tool_call",
    "tool_result",
    "model_input",
    "model_output",
    "tool_call",
    "tool_result",
    "tool_call",
    "tool_result",
    "model_input",
    "model_output",
    "metadata",
]


def replay(path: Path, flavor: tuple[str, bool], root: str, **options: Any) -> Run:
    match = options.pop("match", None)
    session_options = {"mode": "replay", "cassette": path, "match": match}
    return run_agent(flavor, root, session_options=session_options, **options)


def test_record_writes_a_verifying_cassette(recorded: tuple[Path, Run, str]) -> None:
    path, run, _ = recorded
    trace = load_trace(path)
    assert [step["type"] for step in trace["steps"]] == STEP_TYPES
    assert verify_trace(path).ok
    assert run.answer == FINAL
    assert run.box.calls == [("get_weather", "Paris"), ("get_weather", "Rome"), ("get_time", "Rome")]
    assert trace["steps"][5]["payload"] == {
        "type": "tool_calls",
        "calls": [
            {"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Rome"}},
            {"toolCallId": "call-2", "toolName": "get_time", "toolInput": {"city": "Rome"}},
        ],
        "text": "Checking Rome.",
    }
    assert [s["payload"]["toolCallId"] for s in trace["steps"][6:10]] == ["call-1"] * 2 + ["call-2"] * 2
    assert trace["steps"][-1]["payload"] == {"event": "run_completed", "status": "success", "result": FINAL}
    assert run.session.report is not None and run.session.report.steps == 13


def test_a_recording_writes_array_index_keys_first(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path
) -> None:
    """JavaScript enumerates keys like "2" and "10" first, ascending: the file holds them that way."""
    script(fake_provider, flavor[0])
    box = ToolBox({**WEATHER, "Paris": {"team": "A", "2": 0, "10": 1}})
    path = tmp_path / "order.json"
    run_agent(flavor, fake_provider.base_url, box=box, session_options={"mode": "record", "out": path})
    steps = json.loads(path.read_text(encoding="utf-8"))["steps"]
    assert steps[3]["type"] == "tool_result"
    assert list(steps[3]["payload"]["result"]) == ["2", "10", "team"]
    assert verify_trace(path).ok


def test_replay_offline_gives_the_same_answer_and_runs_nothing(
    recorded: tuple[Path, Run, str],
    fake_provider: FakeProvider,
    flavor: tuple[str, bool],
    network_guard: NetworkGuard,
) -> None:
    path, _, root = recorded
    seen = len(fake_provider.requests)
    fake_provider.stop()
    attempts = network_guard.block()
    run = replay(path, flavor, root)
    assert run.answer == FINAL
    assert run.box.calls == []
    assert attempts == []
    assert len(fake_provider.requests) == seen == 3
    report = run.session.report
    assert report is not None
    assert (report.mode, report.steps, report.status, report.replayed_steps) == ("replay", 13, "success", 13)


def test_two_recordings_of_one_run_have_no_semantic_difference(
    recorded: tuple[Path, Run, str],
    fake_provider: FakeProvider,
    flavor: tuple[str, bool],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first, _, _ = recorded
    script(fake_provider, flavor[0])
    second = tmp_path / "again.json"
    run_agent(flavor, fake_provider.base_url, session_options={"mode": "record", "out": second})
    assert cli_main(["diff", str(first), str(second), "--semantic", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["hasDivergence"] is False
    assert data["sharedPrefixLength"] == 13


# -- divergences ---------------------------------------------------------------------------------

CHANGES: dict[str, tuple[dict[str, Any], int, str, str, str]] = {
    "system prompt": ({"system": "Be brief."}, 0, "systemPrompt", json.dumps(SYSTEM), '"Be brief."'),
    "tool schema": (
        {"tool_specs": "city description"},
        0,
        "tools[1].inputSchema.properties.city.description",
        '"City name"',
        '"The city"',
    ),
    "message order": (
        {"reverse_results": True},
        10,
        "messages[4].content[0].result",
        json.dumps(json.dumps({"city": "Rome", "tempC": 24.5})),
        json.dumps(json.dumps({"city": "Rome", "time": "14:05"})),
    ),
}


def changed_agent(change: str) -> dict[str, Any]:
    options = dict(CHANGES[change][0])
    if options.get("tool_specs") == "city description":
        specs = tool_specs()
        specs[1]["schema"]["properties"]["city"]["description"] = "The city"
        options["tool_specs"] = specs
    return options


@pytest.mark.parametrize("catch", [False, True], ids=["agent-raises", "agent-catches"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_a_changed_agent_diverges_at_the_exact_path(
    recorded: tuple[Path, Run, str],
    fake_provider: FakeProvider,
    flavor: tuple[str, bool],
    change: str,
    catch: bool,
) -> None:
    path, _, root = recorded
    fake_provider.stop()
    _, step, where, expected, actual = CHANGES[change]
    session = blackbox(mode="replay", cassette=path)
    agent_options = changed_agent(change)
    if catch:
        run = run_agent(flavor, root, session=session, finish=False, catch_errors=True, **agent_options)
        assert len(run.agent.caught) == 1
        assert f"[blackbox] replay diverged at step {step}, {where}" in str(run.agent.caught[0])
        assert run.box.calls == []
    else:
        with pytest.raises((anthropic.BadRequestError, openai.BadRequestError), match=r"\[blackbox\]"):
            run_agent(flavor, root, session=session, finish=False, **agent_options)
    with pytest.raises(ReplayDivergenceError) as caught:
        session.finish(result="anything")
    error = caught.value
    assert (error.step_index, error.path) == (step, where)
    assert (error.expected, error.actual) == (expected, actual)
    assert str(error).startswith(f"replay diverged at step {step}, {where}\n  recorded: {expected}\n")


def test_a_changed_tool_value_diverges_in_the_next_request(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path
) -> None:
    """Unwrapped tools still run in replay: a different value reaches the next request."""
    script(fake_provider, flavor[0])
    path = tmp_path / "unwrapped.json"
    run_agent(flavor, fake_provider.base_url, wrap=False, session_options={"mode": "record", "out": path})
    assert [s["type"] for s in load_trace(path)["steps"]] == ["model_input", "model_output"] * 3 + [
        "metadata"
    ]
    root = fake_provider.base_url
    fake_provider.stop()
    changed = ToolBox({"Paris": {"city": "Paris", "tempC": 22}, "Rome": {"city": "Rome", "tempC": 24.5}})
    session = blackbox(mode="replay", cassette=path)
    run = run_agent(flavor, root, session=session, box=changed, wrap=False, finish=False, catch_errors=True)
    assert run.box.calls == [("get_weather", "Paris")]
    with pytest.raises(ReplayDivergenceError) as caught:
        session.finish(result=run.answer)
    error = caught.value
    assert (error.step_index, error.path) == (2, "messages[2].content[0].result")
    assert error.expected == json.dumps(json.dumps({"city": "Paris", "tempC": 21.0, "sky": "clear"}))
    assert error.actual == json.dumps(json.dumps({"city": "Paris", "tempC": 22}))


def test_sequence_match_replays_a_changed_prompt(
    recorded: tuple[Path, Run, str], fake_provider: FakeProvider, flavor: tuple[str, bool]
) -> None:
    path, _, root = recorded
    fake_provider.stop()
    run = replay(path, flavor, root, match="sequence", system="Be brief.")
    assert run.answer == FINAL
    assert run.session.report is not None and run.session.report.replayed_steps == 13


# -- how the run ends ----------------------------------------------------------------------------


def test_an_agent_that_stops_early_diverges_at_end_of_run(
    recorded: tuple[Path, Run, str], fake_provider: FakeProvider, flavor: tuple[str, bool]
) -> None:
    path, _, root = recorded
    fake_provider.stop()
    session = blackbox(mode="replay", cassette=path)
    run = run_agent(flavor, root, session=session, finish=False, max_model_calls=2)
    assert run.answer == "stopped early"
    with pytest.raises(ReplayDivergenceError) as caught:
        session.finish(result=run.answer)
    error = caught.value
    assert (error.step_index, error.path) == (10, "end of run")
    assert (error.expected, error.actual) == ("1 more model call(s)", "the agent finished")


def test_a_different_answer_diverges_at_outcome(
    recorded: tuple[Path, Run, str], fake_provider: FakeProvider, flavor: tuple[str, bool]
) -> None:
    path, _, root = recorded
    fake_provider.stop()
    session = blackbox(mode="replay", cassette=path)
    run = run_agent(flavor, root, session=session, finish=False)
    with pytest.raises(ReplayDivergenceError) as caught:
        session.finish(result=run.answer.upper())
    error = caught.value
    assert (error.step_index, error.path) == (12, "outcome")
    assert error.expected == f"success, result {json.dumps(FINAL, ensure_ascii=False)}"
    assert error.actual == f"success, result {json.dumps(FINAL.upper(), ensure_ascii=False)}"
    assert error.hint is not None and error.hint.startswith("Every model call matched")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_openai_through_a_legacy_httpx_client_records_and_replays(
    fake_provider: FakeProvider, is_async: bool, tmp_path: Path, network_guard: NetworkGuard
) -> None:
    flavor = ("openai", is_async)
    script(fake_provider, "openai")
    path = tmp_path / "httpx.json"
    run_agent(
        flavor, fake_provider.base_url, http_client="httpx", session_options={"mode": "record", "out": path}
    )
    assert [s["type"] for s in load_trace(path)["steps"]] == STEP_TYPES
    assert verify_trace(path).ok
    root = fake_provider.base_url
    fake_provider.stop()
    attempts = network_guard.block()
    run = replay(path, flavor, root, http_client="httpx")
    assert (run.answer, run.box.calls, attempts) == (FINAL, [], [])
