"""The session's life cycle: finishing, refusing calls in the wrong order, failed calls, and its errors."""

from __future__ import annotations

import json
import threading
import traceback
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from pytest_blackbox import OfflineRequestError  # user code catches it from the package itself
from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import BlackboxUnsupportedError, BlackboxUsageError, ReplayDivergenceError
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests import TEST_KEYS
from tests.agents.travel import FINAL, MODELS, Run, run_agent, script
from tests.conftest import NetworkGuard, NetworkUsed

FINISHED_REQUEST = "[blackbox] the session has finished (finish() was called); this request was not sent"


def ask(client: anthropic.Anthropic, text: str = "hi") -> Any:
    return client.messages.create(
        model=MODELS["anthropic"], max_tokens=16, messages=[{"role": "user", "content": text}]
    )


def test_finish_takes_a_result_or_an_error_not_both(tmp_path: Path) -> None:
    session = blackbox(mode="record", out=tmp_path / "x.json")
    with pytest.raises(BlackboxUsageError, match=r"^finish\(\) takes a result or an error, not both$"):
        session.finish(result="a", error="b")
    assert not session.finished  # a misuse ends nothing: the run can still be finished properly
    session.discard()


def test_finish_takes_the_final_answer_as_a_string(tmp_path: Path) -> None:
    session = blackbox(mode="record", out=tmp_path / "x.json")
    with pytest.raises(
        BlackboxUsageError, match=r"^finish\(result=…\) takes the final answer as a string, not dict"
    ):
        session.finish(result={"answer": 42})
    report = session.finish(result='{"answer": 42}')
    assert (report.status, (tmp_path / "x.json").exists()) == ("success", True)


def test_after_finish_calls_are_refused_and_never_run(fake_provider: FakeProvider, tmp_path: Path) -> None:
    session = blackbox(mode="record", out=tmp_path / "x.json")
    runs: list[str] = []
    tool = session.tool("get_weather", runs.append)
    report = session.finish(result="done")
    assert (report.mode, report.steps, report.status) == ("record", 1, "success")
    with pytest.raises(BlackboxUsageError, match=r"^finish\(\) was already called on this session$"):
        session.finish()
    with pytest.raises(BlackboxUsageError) as caught:
        tool("Paris")
    assert str(caught.value) == "the session has finished (finish() was called); `get_weather` was not run"
    assert runs == []
    session.start()  # even intercepting again, the session answers nothing after finish()
    try:
        with pytest.raises(anthropic.BadRequestError) as refused:
            ask(anthropic.Anthropic(base_url=fake_provider.base_url, max_retries=0))
    finally:
        session.stop()
    assert refused.value.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": FINISHED_REQUEST},
    }
    assert fake_provider.requests == []


def test_finish_with_a_tool_still_running_writes_nothing(tmp_path: Path) -> None:
    session = blackbox(mode="record", out=tmp_path / "x.json")
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        return "late"

    worker = threading.Thread(target=session.tool("slow", slow))
    worker.start()
    started.wait(10)
    with pytest.raises(BlackboxUsageError) as caught:
        session.finish()
    release.set()
    worker.join()
    assert str(caught.value) == (
        "finish() was called while 1 wrapped call(s) were still running; await every model call and tool "
        "call before finish(). Nothing was written, and later calls on this session are refused."
    )
    assert not (tmp_path / "x.json").exists()


def test_a_model_call_while_a_tool_runs_is_refused(fake_provider: FakeProvider, tmp_path: Path) -> None:
    session = blackbox(mode="record", out=tmp_path / "x.json")
    client = anthropic.Anthropic(base_url=fake_provider.base_url, max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="still running"):
        session.tool("think", lambda: ask(client))()
    with pytest.raises(
        BlackboxUnsupportedError, match=r"^a wrapped tool is still running while a model call starts"
    ):
        session.finish()
    assert fake_provider.requests == []


def test_the_context_manager_finishes_the_run(fake_provider: FakeProvider, tmp_path: Path) -> None:
    script(fake_provider, "anthropic")
    with blackbox(mode="record", out=tmp_path / "ok.json") as session:
        run_agent(("anthropic", False), fake_provider.base_url, session=session, finish=False)
    steps = load_trace(tmp_path / "ok.json")["steps"]
    assert steps[-1]["payload"] == {"event": "run_completed", "status": "success", "result": FINAL}


def test_an_agent_error_is_recorded_masked(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), blackbox(mode="record", out=tmp_path / "err.json"):
        raise RuntimeError(f"gave up with key {TEST_KEYS['ANTHROPIC_API_KEY']}")
    steps = load_trace(tmp_path / "err.json")["steps"]
    assert steps == [
        {
            **steps[0],
            "payload": {
                "event": "run_failed",
                "status": "error",
                "reason": "agent_error",
                "message": "gave up with key [redacted]",
            },
        }
    ]


def test_a_blackbox_error_escaping_the_block_writes_nothing(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    session = blackbox(mode="record", out=tmp_path / "x.json", report_path=report)
    with pytest.raises(BlackboxUnsupportedError), session:
        session.tool("lookup", lambda: {1, 2})()
    assert not (tmp_path / "x.json").exists()
    data = json.loads(report.read_text(encoding="utf-8"))
    assert (data["ok"], data["mode"], data["errorType"]) == (False, "record", "BlackboxUnsupportedError")


def test_the_report_for_the_launcher(
    recorded: tuple[Path, Run, str], fake_provider: FakeProvider, flavor: Any
) -> None:
    path, _, root = recorded
    fake_provider.stop()
    report = path.with_name("report.json")
    run_agent(flavor, root, session_options={"mode": "replay", "cassette": path, "report_path": report})
    assert json.loads(report.read_text(encoding="utf-8")) == {
        "ok": True,
        "mode": "replay",
        "path": str(path),
        "steps": 13,
        "status": "success",
        "replayedSteps": 13,
        "finished": True,
    }


def test_replay_refuses_other_network_requests(
    recorded: tuple[Path, Run, str], fake_provider: FakeProvider
) -> None:
    path, _, _ = recorded
    fake_provider.stop()
    session = blackbox(mode="replay", cassette=path)
    with pytest.raises(OfflineRequestError) as raised, httpx2.Client() as client:
        client.get("https://status.example.com/health?token=abc")
    with pytest.raises(OfflineRequestError) as caught:
        session.finish()
    assert caught.value is raised.value
    assert str(caught.value) == (
        "replay mode answers only model calls (messages.create / chat.completions.create); a request to "
        "GET https://status.example.com/health would need the network. Make it inside a wrapped tool "
        "(a replay returns its recorded result), or allow the host (allowed_hosts)"
    )


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("http://127.0.0.1:9/status", ()),
        ("http://localhost:9/status", ()),
        ("http://[::1]:9/status", ()),
        ("https://status.example.com/health", ("*.example.com",)),
    ],
    ids=["ipv4-loopback", "localhost", "ipv6-loopback", "allowed"],
)
def test_replay_lets_requests_to_loopback_and_allowed_hosts_through(
    recorded: tuple[Path, Run, str],
    fake_provider: FakeProvider,
    network_guard: NetworkGuard,
    url: str,
    allowed: tuple[str, ...],
) -> None:
    """Users run local services in tests; a replay forwards their requests instead of refusing them."""
    path, _, _ = recorded
    fake_provider.stop()
    attempts = network_guard.block()
    session = blackbox(mode="replay", cassette=path, allowed_hosts=list(allowed))
    with pytest.raises(NetworkUsed), httpx2.Client() as client:
        client.get(url)  # sent on: the guard below the session refuses the connection itself
    assert attempts != []
    assert session.error is None
    session.discard()


def test_a_kept_error_is_raised_from_the_callers_line(
    recorded: tuple[Path, Run, str], fake_provider: FakeProvider, flavor: Any
) -> None:
    """No frames from deep inside the session, and no SDK error chained to it."""
    path, _, root = recorded
    fake_provider.stop()
    session = blackbox(mode="replay", cassette=path)
    run = run_agent(flavor, root, session=session, finish=False, catch_errors=True, system="Be brief.")
    assert isinstance(run.agent.caught[0], (anthropic.BadRequestError, openai.BadRequestError))
    with pytest.raises(ReplayDivergenceError) as caught:
        session.finish(result=run.answer)
    frames = [frame.name for frame in traceback.extract_tb(caught.value.__traceback__)]
    assert frames == ["test_a_kept_error_is_raised_from_the_callers_line", "finish"]
    assert caught.value.__suppress_context__ and caught.value.__cause__ is None
