"""The hostile-audit probes of the original Blackbox 0.2.2 (arda-ulas/blackbox), ported finding by finding.

Each test name starts with the audit's finding number. The probes run the real SDKs against the fake
provider (recording) and cassettes (replaying); the launcher and the exit safety net run in real
processes. The refused-field table (#2, #4) is covered field by field in ``tests/providers``; here are
the end-to-end checks that a refusal also holds while replaying, and the exceptions that still record.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.cli import main
from pytest_blackbox.cli.launcher import child_env
from pytest_blackbox.engine import GOOGLE_PLACEHOLDER_CREDENTIALS
from pytest_blackbox.engine.options import SESSION_ENV_VARS
from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import (
    BlackboxUnsupportedError,
    BlackboxUsageError,
    ReplayDivergenceError,
)
from pytest_blackbox.testing.fake_provider import FakeProvider, ScriptedResponse
from pytest_blackbox.trace.io import load_trace
from tests import VECTORS
from tests.agents import PROGRAM
from tests.agents.lookup import DEFAULT_TURNS, FINAL, Lookup, record, run_agent, script, tool_specs
from tests.conftest import NetworkGuard
from tests.machine import scaled

from .conftest import SDKS, files_in, final_body, hanging_answer

OUTCOME_HINT = (
    "Every model call matched, but the agent ended the run differently: the result or error it passed to "
    "finish() is not the recorded one."
)
TOOL_INPUT_HINT = "The agent called the tool with different arguments than it did when recording."
IN_FLIGHT = (
    "finish() was called while 1 wrapped call(s) were still running; await every model call and tool call "
    "before finish(). Nothing was written, and later calls on this session are refused."
)
FINISHED_MODEL = "[blackbox] the session has finished (finish() was called); this request was not sent"
FINISHED_TOOL = "the session has finished (finish() was called); `lookup` was not run"
STEP_TYPES = ["model_input", "model_output", "tool_call", "tool_result", "model_input", "model_output"]


def replayed(path: Path, sdk: str, root: str, **options: Any) -> Any:
    """A replay session over ``path`` with the agent run against it (not finished)."""
    match = options.pop("match", "strict")
    return run_agent(blackbox(mode="replay", cassette=path, match=match), sdk, root, **options)


# -- #1: the outcome is compared -----------------------------------------------------------------


@pytest.mark.parametrize("sdk", SDKS)
def test_1_a_different_result_at_finish_diverges_at_outcome(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str
) -> None:
    path = tmp_path / "run.json"
    script(fake_provider, sdk, [([], "A")])
    recorded = run_agent(blackbox(mode="record", out=path), sdk, fake_provider.base_url)
    recorded.session.finish(result="A")
    root = fake_provider.base_url
    fake_provider.stop()

    other = replayed(path, sdk, root)
    with pytest.raises(ReplayDivergenceError) as caught:
        other.session.finish(result="B")
    assert (caught.value.step_index, caught.value.path) == (2, "outcome")
    assert str(caught.value) == "\n".join(
        [
            "replay diverged at step 2, outcome",
            '  recorded: success, result "A"',
            '  actual:   success, result "B"',
            OUTCOME_HINT,
        ]
    )

    failed = replayed(path, sdk, root)
    with pytest.raises(ReplayDivergenceError) as caught:
        failed.session.finish(error=RuntimeError("boom"))
    assert caught.value.actual == 'error (agent_error): "boom"'

    same = replayed(path, sdk, root)
    report = same.session.finish(result="A")
    assert (report.mode, report.steps, report.status, report.replayed_steps) == ("replay", 3, "success", 3)


# -- #3: both match modes consume every recorded step --------------------------------------------


@pytest.fixture(params=SDKS)
def cassette(
    request: pytest.FixtureRequest, fake_provider: FakeProvider, tmp_path: Path
) -> tuple[Path, str, str]:
    """The default run recorded: (cassette, sdk, the fake's root URL, now closed)."""
    sdk: str = request.param
    path = tmp_path / "run.json"
    record(fake_provider, sdk, path)
    root = fake_provider.base_url
    fake_provider.stop()
    return path, sdk, root


@pytest.mark.parametrize("match", ["strict", "sequence"])
def test_3_no_calls_then_finish_is_end_of_run(cassette: tuple[Path, str, str], match: str) -> None:
    path, _, _ = cassette
    session = blackbox(mode="replay", cassette=path, match=match)
    with pytest.raises(ReplayDivergenceError) as caught:
        session.finish()
    assert str(caught.value) == "\n".join(
        [
            "replay diverged at step 0, end of run",
            "  recorded: 2 more model call(s)",
            "  actual:   the agent finished",
        ]
    )


@pytest.mark.parametrize("match", ["strict", "sequence"])
@pytest.mark.parametrize("where", ["next model call", "finish"])
def test_3_a_skipped_tool_is_the_agent_moving_on(
    cassette: tuple[Path, str, str], match: str, where: str
) -> None:
    path, sdk, root = cassette
    options: dict[str, Any] = {"skip_tools": True, "catch_errors": True}
    if where == "finish":
        options["max_model_calls"] = 1
    run = replayed(path, sdk, root, match=match, **options)
    with pytest.raises(ReplayDivergenceError) as caught:
        run.session.finish(result=run.answer)
    assert str(caught.value) == "\n".join(
        [
            "replay diverged at step 2, tool lookup",
            "  recorded: the agent runs lookup (call-0)",
            "  actual:   the agent moved on without running it",
        ]
    )
    if where == "next model call":
        (refused,) = run.agent.caught
        assert getattr(refused, "status_code", None) == 400
        assert "[blackbox] replay diverged at step 2, tool lookup" in str(refused)


# -- #10: the launcher owns every BLACKBOX_* variable --------------------------------------------


def stale_variables(tmp_path: Path) -> dict[str, str]:
    """A value for every session variable, each of which would break or redirect the run if read."""
    return {
        "BLACKBOX_MODE": "fork",
        "BLACKBOX_CASSETTE": str(tmp_path / "stale-cassette.json"),
        "BLACKBOX_OUT": str(tmp_path / "stale-out.json"),
        "BLACKBOX_TRACE_ID": "stale-id",
        "BLACKBOX_FORK_AT": "07",
        "BLACKBOX_FORK_SET": "{not json",
        "BLACKBOX_CONTINUE": "later",
        "BLACKBOX_SCRIPT": str(tmp_path / "stale-script.json"),
        "BLACKBOX_MATCH": "fuzzy",
        "BLACKBOX_REPORT": str(tmp_path / "stale-report.json"),
    }


def test_10_child_env_clears_every_stale_session_variable(tmp_path: Path) -> None:
    stale = stale_variables(tmp_path)
    assert sorted(stale) == sorted(SESSION_ENV_VARS)
    env = child_env({"BLACKBOX_MODE": "replay"}, offline=True, base={**stale, "HOME": "/home/me"})
    assert env == {
        "HOME": "/home/me",
        "BLACKBOX_MODE": "replay",
        "BLACKBOX_LAUNCHED": "1",
        "ANTHROPIC_API_KEY": "blackbox-offline-placeholder",
        "OPENAI_API_KEY": "blackbox-offline-placeholder",
        "GEMINI_API_KEY": "blackbox-offline-placeholder",
        "AZURE_OPENAI_API_KEY": "blackbox-offline-placeholder",
        "GOOGLE_APPLICATION_CREDENTIALS": GOOGLE_PLACEHOLDER_CREDENTIALS,
    }


def launch(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_blackbox.cli", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=scaled(120), check=False)


def program_env(sdk: str, root: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLACKBOX_")}
    env.update(
        AGENT_CONVERSATION="lookup", AGENT_SDK=sdk, AGENT_BASE_URL=root, PYTHONWARNINGS="ignore", **extra
    )
    return env


@pytest.mark.parametrize("sdk", SDKS)
def test_10_stale_variables_in_the_launchers_environment_are_ignored(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str
) -> None:
    script(fake_provider, sdk)
    out = tmp_path / "run.json"
    stale = stale_variables(tmp_path)
    env = program_env(sdk, fake_provider.base_url, ANTHROPIC_API_KEY="test-key", OPENAI_API_KEY="test-key")
    command = ["--", sys.executable, str(PROGRAM), "finish"]
    recorded = launch(["record", "--out", str(out), *command], {**env, **stale})
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stderr.splitlines()[-1] == f"◼ blackbox · record  wrote {out} (7 steps, success)"
    assert load_trace(out)["id"] == "run"
    sent = len(fake_provider.requests)
    fake_provider.stop()

    stale["BLACKBOX_MODE"] = "record"
    replay = launch(["replay", str(out), *command], {**env, **stale})
    assert replay.returncode == 0, replay.stderr
    assert replay.stderr.splitlines()[-1] == (
        f"◼ blackbox · replay  ✓ PASS  replayed 7 steps from {out} with no network calls (success)"
    )
    assert len(fake_provider.requests) == sent
    assert files_in(tmp_path) == ["run.json"]


# -- #6: calls running at finish, calls after finish, exit with a call running --------------------


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("running", ["tool", "model call"])
def test_6_finish_with_a_call_running_writes_nothing_and_refuses_later_tools(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str, running: str
) -> None:
    out = tmp_path / "run.json"
    session = blackbox(mode="record", out=out)
    started, release = threading.Event(), threading.Event()
    if running == "tool":

        def slow(city: str) -> Any:
            started.set()
            release.wait(30)
            return {"city": city}

        worker = threading.Thread(target=session.tool("lookup", slow), args=("Paris",))
    else:
        fake_provider.queue(hanging_answer(sdk, started.set, release))
        worker = threading.Thread(target=run_agent, args=(session, sdk, fake_provider.base_url))
    worker.start()
    assert started.wait(30)
    try:
        with pytest.raises(BlackboxUsageError) as caught:
            session.finish(result="done")
    finally:
        release.set()
        worker.join(30)
    assert str(caught.value) == IN_FLIGHT
    late = Lookup()
    with pytest.raises(BlackboxUsageError) as refused:
        session.tool("lookup", late)("Rome")
    assert str(refused.value) == FINISHED_TOOL
    assert late.runs == []
    assert files_in(tmp_path) == []


@pytest.mark.parametrize("sdk", SDKS)
def test_6_a_tool_called_after_finish_is_refused_and_never_runs(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str
) -> None:
    out = tmp_path / "run.json"
    run = record(fake_provider, sdk, out)
    written = out.read_bytes()
    late = Lookup()
    with pytest.raises(BlackboxUsageError) as refused:
        run.session.tool("lookup", late)(city="Rome")
    assert str(refused.value) == FINISHED_TOOL
    assert late.runs == []
    assert out.read_bytes() == written


@pytest.mark.parametrize("mode", ["record", "replay"])
def test_6_a_model_call_after_finish_is_refused_and_never_sent(
    cassette: tuple[Path, str, str], fake_provider: FakeProvider, network_guard: NetworkGuard, mode: str
) -> None:
    """Reference §6.4: after ``finish()`` a model call gets the 400 and is never sent, in every mode."""
    path, sdk, root = cassette
    network_guard.block()
    if mode == "record":
        session = blackbox(mode="record", out=path.with_name("again.json"))
        session.finish()
    else:
        session = replayed(path, sdk, root).session
        session.finish(result=FINAL)
    after = run_agent(session, sdk, root, catch_errors=True)
    assert network_guard.attempts == []
    (error,) = after.agent.caught
    assert getattr(error, "status_code", None) == 400
    assert FINISHED_MODEL in str(error)
    assert after.lookup.runs == []


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("scenario", ["tool-in-flight", "model-in-flight"])
def test_6_an_exit_with_a_call_running_ends_with_calls_in_flight(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str, scenario: str
) -> None:
    script(fake_provider, sdk)
    ready, release = tmp_path / "ready", threading.Event()
    if scenario == "model-in-flight":
        fake_provider.queue(hanging_answer(sdk, lambda: ready.write_text("ready"), release))
    out = tmp_path / "run.json"
    env = program_env(
        sdk,
        fake_provider.base_url,
        ANTHROPIC_API_KEY="test-key",
        OPENAI_API_KEY="test-key",
        BLACKBOX_MODE="record",
        BLACKBOX_OUT=str(out),
        AGENT_READY=str(ready),
    )
    try:
        proc = subprocess.run(
            [sys.executable, str(PROGRAM), scenario],
            env=env,
            capture_output=True,
            text=True,
            timeout=scaled(120),
        )
    finally:
        release.set()
    assert proc.returncode == 0, proc.stderr
    assert verify_trace(out).ok
    steps = load_trace(out)["steps"]
    assert [step["type"] for step in steps] == [*STEP_TYPES, "metadata"]
    assert steps[-1]["payload"] == {
        "event": "run_failed",
        "status": "error",
        "reason": "calls_in_flight",
        "exitCode": 0,
        "inFlight": 1,
    }


# -- #7: an import keeps a trailing unanswered user message --------------------------------------


def claude_line(kind: str, second: int, content: Any, message_id: str | None = None) -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if message_id is not None:
        message["id"] = message_id
    return json.dumps({"type": kind, "timestamp": f"2026-01-01T00:00:{second:02d}.000Z", "message": message})


@pytest.mark.parametrize("text", ["Are you done?", ""])
def test_7_import_keeps_a_trailing_unanswered_user_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    transcript = tmp_path / "session.jsonl"
    lines = [
        claude_line("user", 0, "Look."),
        claude_line("assistant", 1, [{"type": "text", "text": "Nothing to do."}], "m1"),
        claude_line("user", 5, text),
    ]
    transcript.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "session.json"
    assert main(["import", "--from", "claude-code", "--in", str(transcript), "--out", str(out)]) == 0
    assert "Status:  incomplete" in capsys.readouterr().out.splitlines()
    steps = load_trace(out)["steps"]
    assert [step["type"] for step in steps] == ["model_input", "model_output", "model_input"]
    assert steps[-1]["payload"]["messages"][-1] == {"role": "user", "content": text}
    assert verify_trace(out).ok


# -- #5: a fork never writes over its parent -----------------------------------------------------


def _same_path(parent: Path) -> Path:
    return parent


def _dotted(parent: Path) -> Path:
    return parent.parent / "sub" / ".." / parent.name


def _symlink(parent: Path) -> Path:
    link = parent.with_name("link.json")
    link.symlink_to(parent)
    return link


def _hard_link(parent: Path) -> Path:
    link = parent.with_name("hard.json")
    os.link(parent, link)
    return link


#: Every way to name the parent file again: the path itself, through ``..``, a symlink, a hard link.
SPELLINGS = [_same_path, _dotted, _symlink, _hard_link]


@pytest.mark.parametrize(
    "spelling", [_same_path, _dotted, _symlink, _hard_link], ids=lambda f: f.__name__[1:]
)
def test_5_fork_refuses_to_write_over_its_parent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: Any
) -> None:
    assert main(["demo", "--scenario", "success", "--out-dir", str(tmp_path)]) == 0
    parent = tmp_path / "example-trace.json"
    (tmp_path / "sub").mkdir()
    before = parent.read_bytes()
    capsys.readouterr()
    out = spelling(parent)
    assert main(["fork", "--trace", str(parent), "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (
        "",
        f"blackbox fork: Refusing to overwrite the parent trace at {parent}. Pass an explicit --out.\n",
    )
    assert parent.read_bytes() == before


def test_5_the_default_fork_output_linked_to_the_parent_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--scenario", "success", "--out-dir", str(tmp_path)]) == 0
    parent = tmp_path / "example-trace.json"
    os.link(parent, tmp_path / "example-trace-fork.json")
    before = parent.read_bytes()
    assert main(["fork", "--trace", str(parent)]) == 1
    assert "Refusing to overwrite the parent trace" in capsys.readouterr().err
    assert parent.read_bytes() == before


# -- #2 / #4: refused fields hold in replay too; the exceptions that still record ----------------

#: A field of the refused table for each provider: (agent options that send it, the message's start).
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "anthropic": ({"tool_fields": {"strict": True}}, "strict: true on a tool is not supported yet"),
    "openai": (
        {"extra": {"functions": [{"name": "f", "parameters": {}}]}},
        "the legacy functions request field is not supported yet",
    ),
}


def test_2_a_refused_field_is_refused_while_replaying_not_a_divergence(
    cassette: tuple[Path, str, str],
) -> None:
    path, sdk, root = cassette
    options, message = REFUSED[sdk]
    run = replayed(path, sdk, root, catch_errors=True, **options)
    with pytest.raises(BlackboxUnsupportedError) as caught:
        run.session.finish(result=run.answer)
    assert str(caught.value).startswith(message)
    assert "[blackbox] " + message in str(run.agent.caught[0])


def round_trip(
    fake: FakeProvider, tmp_path: Path, sdk: str, turns: Any, **options: Any
) -> tuple[Any, Any, Path]:
    """Record with ``options``, then replay (strict) with the same ones: (recorded, replayed, cassette)."""
    path = tmp_path / f"{sdk}.json"
    first = record(fake, sdk, path, turns=turns, **options)
    assert verify_trace(path).ok, verify_trace(path)
    root = fake.base_url
    fake.stop()
    second = replayed(path, sdk, root, **options)
    second.session.finish(result=second.answer)
    return first, second, path


@pytest.mark.parametrize("sdk", SDKS)
def test_4_strict_false_records_like_leaving_it_out(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    record(fake_provider, sdk, plain / "run.json")
    _, replay, path = round_trip(fake_provider, tmp_path, sdk, DEFAULT_TURNS, tool_fields={"strict": False})
    assert replay.answer == FINAL
    steps, plain_steps = load_trace(path)["steps"], load_trace(plain / "run.json")["steps"]
    assert [s["payload"] for s in steps if s["type"] == "model_input"] == [
        s["payload"] for s in plain_steps if s["type"] == "model_input"
    ]


@pytest.mark.parametrize("sdk", SDKS)
def test_4_an_empty_final_answer_replays_as_an_empty_string(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str
) -> None:
    first, second, path = round_trip(fake_provider, tmp_path, sdk, [([], "")])
    assert (first.answer, second.answer) == ("", "")
    assert load_trace(path)["steps"][1]["payload"] == {"type": "final_answer", "text": ""}


def test_4_a_json_encoded_string_argument_keeps_its_encoding(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    encoded = json.dumps(json.dumps({"city": "Paris"}))
    body = final_body("openai", "")
    body["choices"][0]["finish_reason"] = "tool_calls"
    body["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [
            {"id": "call_Zx81", "type": "function", "function": {"name": "lookup", "arguments": encoded}}
        ],
    }
    fake_provider.queue(ScriptedResponse(200, body))
    first, second, _ = round_trip(fake_provider, tmp_path, "openai", [([], FINAL)])
    assert first.agent.seen_arguments == second.agent.seen_arguments == [encoded]
    assert second.answer == FINAL


USAGE_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "usage": {"type": "number"}},
    "required": ["city"],
}


@pytest.mark.parametrize("sdk", SDKS)
def test_4_a_tool_schema_with_a_property_named_usage_records_and_verifies(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str
) -> None:
    _, replay, path = round_trip(
        fake_provider, tmp_path, sdk, DEFAULT_TURNS, tool_specs=tool_specs(USAGE_SCHEMA)
    )
    assert replay.answer == FINAL
    assert load_trace(path)["steps"][0]["payload"]["tools"][0]["inputSchema"] == USAGE_SCHEMA


STRUCTURED_OUTPUT: dict[str, dict[str, Any]] = {
    "anthropic": {"output_config": {"format": {"type": "json_schema", "schema": USAGE_SCHEMA}}},
    "openai": {
        "response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": USAGE_SCHEMA}}
    },
}
PARAM_NAME = {"anthropic": "outputConfig", "openai": "responseFormat"}


@pytest.mark.parametrize("sdk", SDKS)
def test_4_a_structured_output_schema_with_a_property_named_usage_records_and_verifies(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str
) -> None:
    """Reference §17 #2/#4: the structured-output schema is the user's data, like a tool's input schema."""
    extra = STRUCTURED_OUTPUT[sdk]
    _, replay, path = round_trip(fake_provider, tmp_path, sdk, DEFAULT_TURNS, extra=extra)
    assert replay.answer == FINAL
    assert load_trace(path)["steps"][0]["payload"]["params"][PARAM_NAME[sdk]] == next(iter(extra.values()))


# -- #10 variants: values JSON cannot keep -------------------------------------------------------

WHEN = dt.datetime(2026, 1, 1, 9, 0)


@pytest.mark.parametrize("sdk", SDKS)
def test_10_a_datetime_argument_is_stored_as_json_and_a_changed_one_diverges(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str
) -> None:
    path = tmp_path / "run.json"
    record(fake_provider, sdk, path, tool_extra={"when": WHEN})
    assert load_trace(path)["steps"][2]["payload"]["toolInput"] == {
        "city": "Paris",
        "when": "2026-01-01T09:00:00",
    }
    root = fake_provider.base_url
    fake_provider.stop()
    same = replayed(path, sdk, root, tool_extra={"when": WHEN})
    same.session.finish(result=same.answer)

    later = {"when": WHEN + dt.timedelta(days=1)}
    changed = replayed(path, sdk, root, tool_extra=later, catch_errors=True)
    with pytest.raises(ReplayDivergenceError) as caught:
        changed.session.finish(result=changed.answer)
    assert str(caught.value) == "\n".join(
        [
            "replay diverged at step 2, tool lookup input",
            '  recorded: {"city":"Paris","when":"2026-01-01T09:00:00"}',
            '  actual:   {"city":"Paris","when":"2026-01-02T09:00:00"}',
            TOOL_INPUT_HINT,
        ]
    )
    loose = replayed(path, sdk, root, tool_extra=later, match="sequence")
    assert loose.session.finish(result=loose.answer).status == "success"


SET_MESSAGE = (
    "a set in the {where} of tool lookup is not supported: it would not come back from the cassette as the "
    "same value; convert it to JSON data (dict, list, str, int, float, bool, None) first"
)


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize("where", ["arguments", "result"])
def test_10_a_set_fails_the_run_before_or_after_the_tool(
    fake_provider: FakeProvider, tmp_path: Path, sdk: str, where: str
) -> None:
    script(fake_provider, sdk)
    out = tmp_path / "run.json"
    session = blackbox(mode="record", out=out)
    if where == "arguments":
        run = run_agent(session, sdk, fake_provider.base_url, tool_extra={"tags": {"a"}}, catch_errors=True)
        assert run.lookup.runs == []
    else:
        lookup = Lookup(result={"a", "b"})
        run = run_agent(session, sdk, fake_provider.base_url, lookup=lookup, catch_errors=True)
        assert lookup.runs == [{"city": "Paris"}]
    assert [str(e) for e in run.agent.tool_errors] == [SET_MESSAGE.format(where=where)]
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.finish(result=run.answer)
    assert str(caught.value) == SET_MESSAGE.format(where=where)
    assert files_in(tmp_path) == []


# -- #5 (session fork): `blackbox fork <cassette> --at N … -- <command>` ---------------------------

VECTOR = VECTORS / "fixtures" / "traces"


@pytest.mark.parametrize(
    "spelling", [_same_path, _dotted, _symlink, _hard_link], ids=lambda f: f.__name__[1:]
)
def test_5_the_session_fork_refuses_to_write_over_its_parent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: Any
) -> None:
    parent = tmp_path / "parent.json"
    parent.write_bytes((VECTOR / "success-tool-use.v2.json").read_bytes())
    (tmp_path / "sub").mkdir()
    script_file = tmp_path / "replies.json"
    script_file.write_text('[{"type": "final_answer", "text": "Done."}]', encoding="utf-8")
    before = parent.read_bytes()
    out = spelling(parent)
    argv = ["fork", str(parent), "--at", "3", "--set", "{}", "--out", str(out), "--script", str(script_file)]
    assert main([*argv, "--", sys.executable, "-c", "raise SystemExit(7)"]) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (
        "",
        f"blackbox fork: fork refuses to write its output over the cassette it forks: {out} is the same file "
        f"as {parent}; choose another out path\n",
    )
    assert parent.read_bytes() == before
