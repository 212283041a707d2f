"""``on_divergence="record"`` (new episodes): a replay that diverges goes live and re-records from there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.cli import main as cli_main
from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import BlackboxUsageError
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.io import load_trace, save_trace
from tests.agents.travel import DEFAULT_TURNS, FINAL, WEATHER, ToolBox, run_agent, script

PROMPTS = ("Weather in Paris?", "And in Rome, with the local time?")
TWO_QUESTIONS = [
    ([("get_weather", {"city": "Paris"})], None),
    ([], "Paris is clear at 21°C."),
    ([("get_weather", {"city": "Rome"}), ("get_time", {"city": "Rome"})], None),
    ([], "Rome is 24.5°C; it is 14:05."),
]


def record(fake: FakeProvider, flavor: tuple[str, bool], path: Path, turns: Any, **agent: Any) -> None:
    script(fake, flavor[0], turns)
    run_agent(flavor, fake.base_url, session_options={"mode": "record", "out": path}, **agent)


def go_live(
    fake: FakeProvider, flavor: tuple[str, bool], old: Path, tmp_path: Path, **agent: Any
) -> tuple[Path, Any]:
    """Replay a copy of ``old`` with new episodes; returns (new cassette, run)."""
    new = tmp_path / "new.json"
    shutil.copyfile(old, new)
    options = {"mode": "replay", "cassette": new, "on_divergence": "record"}
    return new, run_agent(flavor, fake.base_url, session_options=options, **agent)


def diff_json(old: Path, new: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert cli_main(["diff", str(old), str(new), "--json"]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def assert_prefix_kept(old: Path, new: Path, cut: int) -> list[Any]:
    before, after = load_trace(old), load_trace(new)
    assert after["id"] == before["id"]
    assert after["steps"][:cut] == before["steps"][:cut]
    assert after["steps"][cut]["id"] == f"{before['id']}:{cut}"
    assert after["steps"][cut]["hash"] != before["steps"][cut]["hash"]
    assert verify_trace(new).ok
    return after["steps"]


def test_a_changed_second_prompt_goes_live_there(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.json"
    record(fake_provider, flavor, old, TWO_QUESTIONS, prompts=PROMPTS)
    script(fake_provider, flavor[0], TWO_QUESTIONS[2:])
    changed = (PROMPTS[0], "And in Rome? Include the local time.")
    new, run = go_live(fake_provider, flavor, old, tmp_path, prompts=changed)
    assert run.session.went_live_at == 6
    assert run.box.calls == [("get_weather", "Rome"), ("get_time", "Rome")]
    assert len(fake_provider.requests) == 6
    steps = assert_prefix_kept(old, new, 6)
    assert steps[6]["payload"]["messages"][4] == {"role": "user", "content": changed[1]}
    assert [s["type"] for s in steps[6:]] == [
        "model_input",
        "model_output",
        *["tool_call", "tool_result"] * 2,
        "model_input",
        "model_output",
        "metadata",
    ]
    assert steps[7]["payload"]["calls"][0]["toolCallId"] == "call-1"
    diff = diff_json(old, new, capsys)
    assert (diff["firstDivergenceIndex"], diff["childStep"]["id"]) == (6, f"{load_trace(old)['id']}:6")


def test_a_tool_round_divergence_goes_live_inside_the_round(
    fake_provider: FakeProvider, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flavor = ("anthropic", False)
    old = tmp_path / "old.json"
    record(fake_provider, flavor, old, DEFAULT_TURNS)
    script(fake_provider, "anthropic", DEFAULT_TURNS[2:])
    box = ToolBox({**WEATHER, "Roma": {"city": "Roma", "tempC": 25}})
    new, run = go_live(
        fake_provider,
        flavor,
        old,
        tmp_path,
        box=box,
        retarget={"get_weather": {"Rome": "Roma"}, "get_time": {"Rome": "Roma"}},
    )
    assert run.session.went_live_at == 6
    assert box.calls == [("get_weather", "Roma"), ("get_time", "Roma")]
    steps = assert_prefix_kept(old, new, 6)
    assert [(s["type"], s["payload"].get("toolInput")) for s in steps[6:10:2]] == [
        ("tool_call", {"city": "Roma"}),
        ("tool_call", {"city": "Roma"}),
    ]
    assert [s["payload"]["toolCallId"] for s in steps[6:10]] == ["call-1", "call-1", "call-2", "call-2"]
    assert steps[-1]["payload"] == {"event": "run_completed", "status": "success", "result": FINAL}
    assert diff_json(old, new, capsys)["firstDivergenceIndex"] == 6


def test_new_episodes_write_array_index_keys_first(fake_provider: FakeProvider, tmp_path: Path) -> None:
    flavor = ("anthropic", False)
    old = tmp_path / "old.json"
    record(fake_provider, flavor, old, DEFAULT_TURNS)
    script(fake_provider, "anthropic", DEFAULT_TURNS[2:])
    box = ToolBox({**WEATHER, "Roma": {"city": "Roma", "10": 1, "2": 0}})
    new, run = go_live(
        fake_provider, flavor, old, tmp_path, box=box, retarget={"get_weather": {"Rome": "Roma"}}
    )
    assert run.session.went_live_at == 6
    steps = json.loads(new.read_text(encoding="utf-8"))["steps"]
    assert steps[7]["type"] == "tool_result"
    assert list(steps[7]["payload"]["result"]) == ["2", "10", "city"]
    assert verify_trace(new).ok


def test_a_later_tool_of_a_round_keeps_the_answered_ones(fake_provider: FakeProvider, tmp_path: Path) -> None:
    """get_weather(Rome) was answered from the cassette before get_time diverged: its steps are kept."""
    flavor = ("anthropic", False)
    old = tmp_path / "old.json"
    record(fake_provider, flavor, old, DEFAULT_TURNS)
    script(fake_provider, "anthropic", DEFAULT_TURNS[2:])
    new, run = go_live(fake_provider, flavor, old, tmp_path, retarget={"get_time": {"Rome": "Milan"}})
    assert run.box.calls == [("get_time", "Milan")]
    before, after = load_trace(old)["steps"], load_trace(new)["steps"]
    assert run.session.went_live_at == 6
    assert [s["payload"] for s in after[6:8]] == [s["payload"] for s in before[6:8]]
    assert after[8]["payload"] == {
        "toolCallId": "call-2",
        "toolName": "get_time",
        "toolInput": {"city": "Milan"},
    }
    assert verify_trace(new).ok


def test_an_early_end_goes_live_at_the_end_of_run(
    fake_provider: FakeProvider, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flavor = ("openai", True)
    old = tmp_path / "old.json"
    record(fake_provider, flavor, old, DEFAULT_TURNS)
    forked = load_trace(old)  # a fork's own fields are not hashed: the cassette stays valid
    save_trace({**forked, "parentId": "parent", "forkedFromStepId": "parent:3"}, old)
    new, run = go_live(fake_provider, flavor, old, tmp_path, max_model_calls=2)
    rewritten = load_trace(new)
    assert (rewritten["parentId"], rewritten["forkedFromStepId"]) == ("parent", "parent:3")
    assert run.session.went_live_at == 10
    assert run.box.calls == []
    steps = assert_prefix_kept(old, new, 10)
    assert len(steps) == 11
    assert steps[10]["payload"] == {"event": "run_completed", "status": "success", "result": "stopped early"}
    assert diff_json(old, new, capsys)["firstDivergenceIndex"] == 10


def test_an_extra_model_call_goes_live_after_the_recorded_ones(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    flavor = ("openai", False)
    old = tmp_path / "old.json"
    record(fake_provider, flavor, old, DEFAULT_TURNS)
    script(fake_provider, "openai", [([], "You're welcome.")])
    new, run = go_live(
        fake_provider,
        flavor,
        old,
        tmp_path,
        prompts=("What's the weather in Paris, and the weather and local time in Rome?", "Thanks!"),
    )
    assert run.answer == "You're welcome."
    assert run.session.went_live_at == 12
    steps = assert_prefix_kept(old, new, 12)
    assert [s["type"] for s in steps[12:]] == ["model_input", "model_output", "metadata"]


def test_on_divergence_is_validated() -> None:
    with pytest.raises(BlackboxUsageError, match=r'^on_divergence must be "fail" or "record"; got "retry"$'):
        blackbox(mode="replay", cassette="x.json", on_divergence="retry")


def test_a_freshly_scripted_fake_answers_the_live_tail_with_its_own_answers(
    flavor: tuple[str, bool], tmp_path: Path
) -> None:
    """A test's fixture scripts the whole conversation on a new fake every run. A replay gone live
    never asked it for the calls answered from the cassette: the fake skips the answers the
    conversation already holds, so the re-recorded tail gets the answers scripted for it."""
    old = tmp_path / "old.json"
    with FakeProvider() as fake:
        record(fake, flavor, old, TWO_QUESTIONS, prompts=PROMPTS)
    changed = (PROMPTS[0], "And in Rome? Include the local time.")
    with FakeProvider() as fake:
        script(fake, flavor[0], TWO_QUESTIONS)  # the whole script again, as a fixture queues it
        new, run = go_live(fake, flavor, old, tmp_path, prompts=changed)
        assert (run.session.went_live_at, run.answer) == (6, "Rome is 24.5°C; it is 14:05.")
        assert (len(fake.requests), fake.pending) == (2, 0)
    steps = assert_prefix_kept(old, new, 6)
    assert steps[7]["payload"]["calls"] == [
        {"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Rome"}},
        {"toolCallId": "call-2", "toolName": "get_time", "toolInput": {"city": "Rome"}},
    ]
