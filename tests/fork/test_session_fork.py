"""The session fork of a recorded agent: replay the prefix, swap one tool result, run on.

The fleet-triage vectors are the reference: forking ``triage-incident`` at step 5 with
``live-reading.json`` and the ``urgent-replies.json`` script must give ``triage-hypothesis`` (steps
0–5 byte for byte, the rest by type and payload). The travel agent (``tests/agents/travel.py``),
recorded against the fake provider, covers the rest: siblings of the fork point's round, scripted
tool calls, a live continuation, and every error a fork meets while it runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from pytest_blackbox.analysis.diff import diff_traces
from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.engine.ending import RunReport
from pytest_blackbox.engine.fork import THINKING_MESSAGE, SessionFork, _check_fork_step
from pytest_blackbox.engine.session import Session, blackbox
from pytest_blackbox.errors import BlackboxUnsupportedError, ForkError, ReplayDivergenceError
from pytest_blackbox.providers import CallIds
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.canonical import canonical_json
from pytest_blackbox.trace.io import load_trace, parse_json
from tests.agents import triage
from tests.agents.travel import ToolBox, run_agent
from tests.machine import scaled

from .forkhelp import (
    FLAVOR_IDS,
    FLAVORS,
    ReversingAgent,
    read_json,
    record_travel,
    ticks,
    tool_results,
    write_script,
)

MARK = "◼ blackbox"
HEATWAVE = {"city": "Rome", "tempC": 40.5, "sky": "heatwave"}
HEAT_ANSWER = "Rome is in a heatwave."


pytestmark = pytest.mark.usefixtures("provider_keys")


@pytest.fixture(params=FLAVORS, ids=FLAVOR_IDS)
def fork_flavor(request: pytest.FixtureRequest) -> tuple[str, bool]:
    result: tuple[str, bool] = request.param
    return result


def fork_session(tmp_path: Path, parent: Path, at: int, replacement: Any, **options: Any) -> Session:
    """A fork session writing ``child.json``; a list ``script`` is written to a file first."""
    entries = options.pop("script", None)
    if isinstance(entries, list):
        options["script"] = write_script(tmp_path / "replies.json", entries)
        options.setdefault("continue_with", "script")
    return blackbox(
        mode="fork",
        cassette=parent,
        out=tmp_path / "child.json",
        fork_at=at,
        fork_set=replacement,
        clock=ticks(1_800_000_000_000),
        **options,
    )


# -- the fleet-triage vectors --------------------------------------------------------------------


def fork_triage(tmp_path: Path, match: str) -> tuple[RunReport, list[str], str]:
    out = tmp_path / "triage-hypothesis.json"
    reading = parse_json(triage.LIVE_READING.read_text(encoding="utf-8"))
    bb = blackbox(
        mode="fork",
        cassette=triage.INCIDENT,
        out=out,
        fork_at=5,
        fork_set=reading,
        continue_with="script",
        script=triage.URGENT_REPLIES,
        match=match,
        clock=ticks(1_790_676_900_000),
    )
    ran: list[str] = []
    client = anthropic.Anthropic(base_url=triage.CLOSED_URL, max_retries=0)
    answer = triage.run(client, bb.tools(triage.tools(ran)))
    return bb.finish(result=answer), ran, answer


def assert_is_the_hypothesis(out: Path) -> None:
    """Steps 0–5 byte for byte (ids, hashes, the parent's timestamps); later steps by type and payload."""
    text = out.read_bytes().decode("utf-8")
    expected_text = triage.HYPOTHESIS.read_bytes().decode("utf-8")
    cut = expected_text.index('    {\n      "id": "triage-hypothesis:6"')
    assert text[:cut] == expected_text[:cut]
    child, expected = json.loads(text), json.loads(expected_text)
    assert list(child) == ["version", "id", "createdAt", "steps", "parentId", "forkedFromStepId"]
    assert (child["id"], child["createdAt"]) == ("triage-hypothesis", 1790672700350)
    assert (child["parentId"], child["forkedFromStepId"]) == ("triage-incident", "triage-incident:5")
    assert [s["id"] for s in child["steps"][:6]] == [f"triage-incident:{i}" for i in range(5)] + [
        "triage-hypothesis:5"
    ]
    assert child["steps"][5]["timestamp"] == 1790672703500
    assert [(s["type"], canonical_json(s["payload"])) for s in child["steps"]] == [
        (s["type"], canonical_json(s["payload"])) for s in expected["steps"]
    ]
    assert verify_trace(out).ok
    diff = diff_traces(load_trace(triage.INCIDENT), load_trace(out))
    assert (diff.first_divergence_index, diff.shared_prefix_length) == (5, 5)


@pytest.mark.parametrize("match", ["strict", "sequence"])
def test_triage_fork_reproduces_the_hypothesis(tmp_path: Path, match: str) -> None:
    report, ran, answer = fork_triage(tmp_path, match)
    out = tmp_path / "triage-hypothesis.json"
    assert report == RunReport("fork", str(out), 13, "success")
    assert ran == ["open_work_order"]  # lookup_dtc is answered from the cassette; get_telemetry is the fork
    assert answer.startswith("Urgent: take VAN-14 off the road now.")
    assert_is_the_hypothesis(out)


def test_triage_fork_through_the_cli(tmp_path: Path) -> None:
    """``blackbox fork … -- python triage.py``: offline (a placeholder key), one outcome line."""
    (tmp_path / "triage-incident.json").write_bytes(triage.INCIDENT.read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLACKBOX_")}
    env.pop("ANTHROPIC_API_KEY", None)
    argv = [
        *("fork", "triage-incident.json", "--at", "5"),
        *("--set", f"@{triage.LIVE_READING}", "--out", "triage-hypothesis.json"),
        *("--script", str(triage.URGENT_REPLIES), "--", sys.executable, triage.__file__),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "pytest_blackbox.cli", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"{MARK} · fork  wrote triage-hypothesis.json (13 steps, success); steps 0–4 are copied from "
        "triage-incident.json, step 5 is your new result"
    )
    assert done.stdout.startswith("answer: Urgent: take VAN-14 off the road now.")
    assert_is_the_hypothesis(tmp_path / "triage-hypothesis.json")


def test_strict_prefix_diverges_where_sequence_forks(tmp_path: Path, fake_provider: FakeProvider) -> None:
    """``--match`` applies to the prefix: a changed system prompt diverges strictly, forks in sequence."""
    flavor = ("anthropic", False)
    parent = tmp_path / "run.json"
    record_travel(fake_provider, flavor, parent)
    replies = [{"type": "final_answer", "text": HEAT_ANSWER}]
    bb = fork_session(tmp_path, parent, 7, HEATWAVE, script=replies)
    with pytest.raises(anthropic.BadRequestError):
        run_agent(flavor, fake_provider, session=bb, finish=False, system="Answer in French.")
    with pytest.raises(ReplayDivergenceError) as caught:
        bb.finish()
    assert str(caught.value).splitlines()[0] == "replay diverged at step 0, systemPrompt"
    assert not (tmp_path / "child.json").exists()
    bb.stop()

    bb = fork_session(tmp_path, parent, 7, HEATWAVE, script=replies, match="sequence")
    answer = run_agent(flavor, fake_provider, session=bb, finish=False, system="Answer in French.").answer
    assert bb.finish(result=answer).status == "success"
    child = read_json(tmp_path / "child.json")
    assert child["steps"][:7] == read_json(parent)["steps"][:7]  # the prefix is copied as recorded


# -- the travel agent: the fork point's round, scripts, live -------------------------------------


def test_fork_at_a_tool_result_continued_with_a_script(
    tmp_path: Path, fake_provider: FakeProvider, fork_flavor: tuple[str, bool]
) -> None:
    parent_path = tmp_path / "run.json"
    parent = record_travel(fake_provider, fork_flavor, parent_path)
    sent = len(fake_provider.requests)
    bb = fork_session(
        tmp_path, parent_path, 7, HEATWAVE, script=[{"type": "final_answer", "text": HEAT_ANSWER}]
    )
    run = run_agent(fork_flavor, fake_provider, session=bb, finish=False)
    answer, box = run.answer, run.box
    report = bb.finish(result=answer)

    assert answer == HEAT_ANSWER
    assert len(fake_provider.requests) == sent  # nothing was sent: a scripted fork is offline
    assert box.calls == [("get_time", "Rome")]  # the sibling recorded after step 7 ran for real
    assert report == RunReport("fork", str(tmp_path / "child.json"), 13, "success")
    child = read_json(tmp_path / "child.json")
    assert (child["id"], child["createdAt"]) == ("child", parent["createdAt"])
    assert (child["parentId"], child["forkedFromStepId"]) == ("run", "run:7")
    assert child["steps"][:7] == parent["steps"][:7]
    step = child["steps"][7]
    assert (step["id"], step["type"], step["timestamp"]) == (
        "child:7",
        "tool_result",
        parent["steps"][7]["timestamp"],
    )
    assert step["payload"] == {"toolCallId": "call-1", "toolName": "get_weather", "result": HEATWAVE}
    assert step["prevHash"] == parent["steps"][6]["hash"]
    assert [(s["type"], s["payload"]) for s in child["steps"][8:10]] == [
        ("tool_call", {"toolCallId": "call-2", "toolName": "get_time", "toolInput": {"city": "Rome"}}),
        (
            "tool_result",
            {"toolCallId": "call-2", "toolName": "get_time", "result": {"city": "Rome", "time": "14:05"}},
        ),
    ]
    sent_back = {part["toolCallId"]: part["result"] for part in tool_results(child["steps"][10])}
    assert json.loads(sent_back["call-1"]) == HEATWAVE  # the agent received the replacement
    assert child["steps"][11]["payload"] == {"type": "final_answer", "text": HEAT_ANSWER}
    assert child["steps"][12]["payload"] == {
        "event": "run_completed",
        "status": "success",
        "result": HEAT_ANSWER,
    }
    assert verify_trace(tmp_path / "child.json").ok


def test_a_fork_writes_array_index_keys_first(tmp_path: Path, fake_provider: FakeProvider) -> None:
    flavor = ("anthropic", False)
    parent_path = tmp_path / "run.json"
    record_travel(fake_provider, flavor, parent_path)
    replacement = {"sky": "heatwave", "2024": "record", "2": 0}
    bb = fork_session(
        tmp_path, parent_path, 7, replacement, script=[{"type": "final_answer", "text": HEAT_ANSWER}]
    )
    answer = run_agent(flavor, fake_provider, session=bb, finish=False).answer
    bb.finish(result=answer)
    child = read_json(tmp_path / "child.json")
    assert list(child["steps"][7]["payload"]["result"]) == ["2", "2024", "sky"]
    assert verify_trace(tmp_path / "child.json").ok


def test_a_sibling_recorded_before_the_fork_point_is_served_from_the_cassette(
    tmp_path: Path, fake_provider: FakeProvider, fork_flavor: tuple[str, bool]
) -> None:
    """Fork at get_time (step 9) while get_weather (steps 6–7) runs after it: it is still answered."""
    parent_path = tmp_path / "run.json"
    parent = record_travel(fake_provider, fork_flavor, parent_path)
    bb = fork_session(
        tmp_path,
        parent_path,
        9,
        {"city": "Rome", "time": "03:00"},
        script=[{"type": "final_answer", "text": "It is 3 am in Rome."}],
    )
    run = run_agent(fork_flavor, fake_provider, session=bb, finish=False, agent_class=ReversingAgent)
    answer, box = run.answer, run.box
    bb.finish(result=answer)
    assert box.calls == []  # get_weather(Rome) came from the cassette, after the fork point
    child = read_json(tmp_path / "child.json")
    assert child["steps"][:9] == parent["steps"][:9]
    assert child["steps"][9]["payload"] == {
        "toolCallId": "call-2",
        "toolName": "get_time",
        "result": {"city": "Rome", "time": "03:00"},
    }
    assert [s["type"] for s in child["steps"][10:]] == ["model_input", "model_output", "metadata"]


def test_a_scripted_tool_call_gets_a_fresh_id_and_runs_for_real(
    tmp_path: Path, fake_provider: FakeProvider, fork_flavor: tuple[str, bool]
) -> None:
    parent_path = tmp_path / "run.json"
    parent = record_travel(fake_provider, fork_flavor, parent_path)
    replies = [
        {
            "type": "tool_calls",
            "calls": [{"toolName": "get_time", "toolInput": {"city": "Oslo"}}],
            "text": "Oslo?",
        },
        {"type": "final_answer", "text": "It is 14:05 in Oslo."},
    ]
    bb = fork_session(tmp_path, parent_path, 3, {"city": "Paris", "tempC": -3, "sky": "snow"}, script=replies)
    run = run_agent(fork_flavor, fake_provider, session=bb, finish=False)
    answer, box = run.answer, run.box
    report = bb.finish(result=answer)
    assert (answer, report.steps, box.calls) == ("It is 14:05 in Oslo.", 11, [("get_time", "Oslo")])
    child = read_json(tmp_path / "child.json")
    assert child["steps"][:3] == parent["steps"][:3]
    call = {"toolCallId": "call-1", "toolName": "get_time", "toolInput": {"city": "Oslo"}}
    assert [(s["type"], s["payload"]) for s in child["steps"][5:8]] == [
        ("model_output", {"type": "tool_calls", "calls": [call], "text": "Oslo?"}),
        ("tool_call", call),
        (
            "tool_result",
            {"toolCallId": "call-1", "toolName": "get_time", "result": {"city": "Oslo", "time": "14:05"}},
        ),
    ]
    assert [part["toolCallId"] for part in tool_results(child["steps"][8])] == ["call-0", "call-1"]


def test_a_recorded_error_is_replaced_by_the_result(tmp_path: Path, fake_provider: FakeProvider) -> None:
    flavor = ("anthropic", False)
    parent_path = tmp_path / "run.json"
    parent = record_travel(fake_provider, flavor, parent_path, ToolBox(weather={"Paris": {"city": "Paris"}}))
    assert parent["steps"][7]["payload"] == {
        "toolCallId": "call-1",
        "toolName": "get_weather",
        "error": "'Rome'",
    }
    bb = fork_session(
        tmp_path, parent_path, 7, HEATWAVE, script=[{"type": "final_answer", "text": HEAT_ANSWER}]
    )
    answer = run_agent(flavor, fake_provider, session=bb, finish=False).answer
    bb.finish(result=answer)
    step = read_json(tmp_path / "child.json")["steps"][7]
    assert step["payload"] == {"toolCallId": "call-1", "toolName": "get_weather", "result": HEATWAVE}


def test_a_live_fork_sends_only_the_calls_after_the_fork_point(
    tmp_path: Path, fake_provider: FakeProvider, fork_flavor: tuple[str, bool]
) -> None:
    parent_path = tmp_path / "run.json"
    parent = record_travel(fake_provider, fork_flavor, parent_path)
    sent = len(fake_provider.requests)
    if fork_flavor[0] == "anthropic":
        fake_provider.queue_anthropic_text("Live: Rome is in a heatwave.")
    else:
        fake_provider.queue_openai_text("Live: Rome is in a heatwave.")
    bb = fork_session(tmp_path, parent_path, 7, HEATWAVE, continue_with="live")
    run = run_agent(fork_flavor, fake_provider, session=bb, finish=False)
    answer, box = run.answer, run.box
    bb.finish(result=answer)
    assert answer == "Live: Rome is in a heatwave."
    assert len(fake_provider.requests) == sent + 1
    child = read_json(tmp_path / "child.json")
    assert child["steps"][:7] == parent["steps"][:7]
    assert child["steps"][11]["payload"] == {"type": "final_answer", "text": "Live: Rome is in a heatwave."}
    assert box.calls == [("get_time", "Rome")]


def test_fork_live_refuses_extended_thinking(tmp_path: Path, fake_provider: FakeProvider) -> None:
    flavor = ("anthropic", False)
    parent_path = tmp_path / "run.json"
    record_travel(fake_provider, flavor, parent_path)
    sent = len(fake_provider.requests)
    bb = fork_session(tmp_path, parent_path, 7, HEATWAVE, continue_with="live")
    with pytest.raises(anthropic.BadRequestError) as sdk_error:
        run_agent(
            flavor,
            fake_provider,
            session=bb,
            finish=False,
            extra={"thinking": {"type": "enabled", "budget_tokens": 1024}},
        )
    assert f"[blackbox] {THINKING_MESSAGE}" in str(sdk_error.value)
    with pytest.raises(BlackboxUnsupportedError) as caught:
        bb.finish()
    print(caught.value)
    assert str(caught.value) == THINKING_MESSAGE
    assert len(fake_provider.requests) == sent
    assert not (tmp_path / "child.json").exists()


# -- errors while the fork runs -----------------------------------------------------------------


def test_the_run_ends_before_the_fork_point(tmp_path: Path, fake_provider: FakeProvider) -> None:
    flavor = ("anthropic", False)
    parent_path = tmp_path / "run.json"
    record_travel(fake_provider, flavor, parent_path)
    bb = fork_session(tmp_path, parent_path, 7, HEATWAVE, script=[])
    answer = run_agent(flavor, fake_provider, session=bb, finish=False, max_model_calls=1).answer
    with pytest.raises(ForkError) as caught:
        bb.finish(result=answer)
    print(caught.value)
    assert str(caught.value) == (
        "the run ended before reaching the fork point (step 7); the agent never invoked the tool whose "
        "result step 7 records"
    )
    assert not (tmp_path / "child.json").exists()


def test_a_prefix_tool_the_agent_skips(tmp_path: Path, fake_provider: FakeProvider) -> None:
    """get_weather(Rome) is recorded before the fork point at get_time: the agent must run it."""
    flavor = ("anthropic", False)
    parent_path = tmp_path / "run.json"
    record_travel(fake_provider, flavor, parent_path)
    bb = fork_session(
        tmp_path, parent_path, 9, {"time": "03:00"}, script=[{"type": "final_answer", "text": "x"}]
    )
    box = ToolBox()
    wrapped = bb.tools(box.functions(False))

    def get_weather(city: str) -> Any:  # Rome's call bypasses the session: it never sees it run
        return box.get_weather(city) if city == "Rome" else wrapped["get_weather"](city)

    with pytest.raises(anthropic.BadRequestError):
        run_agent(
            flavor, fake_provider, session=bb, finish=False, tools={**wrapped, "get_weather": get_weather}
        )
    with pytest.raises(ReplayDivergenceError) as caught:
        bb.finish()
    print(caught.value)
    assert str(caught.value) == (
        "replay diverged at step 6, tool get_weather\n"
        "  recorded: the agent runs get_weather (call-1) before the fork point, as recorded\n"
        "  actual:   the agent moved on without running it"
    )
    assert not (tmp_path / "child.json").exists()


def test_the_script_runs_out(tmp_path: Path, fake_provider: FakeProvider) -> None:
    flavor = ("openai", False)
    parent_path = tmp_path / "run.json"
    record_travel(fake_provider, flavor, parent_path)
    bb = fork_session(tmp_path, parent_path, 7, HEATWAVE, script=[])
    with pytest.raises(openai.BadRequestError) as sdk_error:
        run_agent(flavor, fake_provider, session=bb, finish=False)
    message = (
        "the fork script ran out after 0 response(s); add more model outputs to it or continue with --live"
    )
    assert f"[blackbox] {message}" in str(sdk_error.value)
    with pytest.raises(ForkError) as caught:
        bb.finish()
    print(caught.value)
    assert str(caught.value) == message
    assert not (tmp_path / "child.json").exists()


# -- the pieces ---------------------------------------------------------------------------------


def test_scripted_calls_continue_the_ids_and_default_their_input() -> None:
    fork = SessionFork(
        parent=load_trace(triage.INCIDENT),
        at=5,
        replacement={},
        continue_with="script",
        script=[{"type": "tool_calls", "calls": [{"toolName": "a"}, {"toolName": "b", "toolInput": [1]}]}],
        child_id="child",
        match="strict",
    )
    ids = CallIds()
    ids.register_identity(["call-0", "call-1"])
    assert fork.next_output(ids) == {
        "type": "tool_calls",
        "calls": [
            {"toolCallId": "call-2", "toolName": "a", "toolInput": {}},
            {"toolCallId": "call-3", "toolName": "b", "toolInput": [1]},
        ],
    }
    with pytest.raises(ForkError, match=r"^the fork script ran out after 1 response\(s\);"):
        fork.next_output(ids)


def test_a_fork_step_without_a_result_is_refused() -> None:
    """The schema already refuses such a file; the check stands on its own for a trace built in code."""
    steps = read_json(triage.INCIDENT)["steps"]
    steps[5]["payload"] = {"toolCallId": "call-1", "toolName": "get_telemetry"}
    with pytest.raises(ForkError) as caught:
        _check_fork_step(steps, 5)
    print(caught.value)
    assert str(caught.value) == "step 5 has no recorded result to replace"
