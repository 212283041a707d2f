"""Streamed answers: recorded from the provider's event stream, replayed as one (or as plain JSON)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests.agents.travel import FINAL, MODELS, run_agent, script
from tests.conftest import NetworkGuard


@pytest.mark.parametrize("replay_streams", [True, False], ids=["replayed-streamed", "replayed-plain"])
def test_a_streamed_run_records_and_replays(
    fake_provider: FakeProvider,
    flavor: tuple[str, bool],
    tmp_path: Path,
    network_guard: NetworkGuard,
    replay_streams: bool,
) -> None:
    script(fake_provider, flavor[0])
    path = tmp_path / "streamed.json"
    plain = tmp_path / "plain.json"
    recorded = run_agent(
        flavor, fake_provider.base_url, stream=True, session_options={"mode": "record", "out": path}
    )
    assert recorded.answer == FINAL
    assert all(r.json["stream"] is True for r in fake_provider.requests)
    script(fake_provider, flavor[0])
    run_agent(flavor, fake_provider.base_url, session_options={"mode": "record", "out": plain})
    assert verify_trace(path).ok
    streamed_steps, plain_steps = load_trace(path)["steps"], load_trace(plain)["steps"]
    assert [(s["type"], s["payload"]) for s in streamed_steps] == [
        (s["type"], s["payload"]) for s in plain_steps
    ]
    root = fake_provider.base_url
    fake_provider.stop()
    attempts = network_guard.block()
    run = run_agent(flavor, root, stream=replay_streams, session_options={"mode": "replay", "cassette": path})
    assert (run.answer, run.box.calls, attempts) == (FINAL, [], [])
    assert run.session.report is not None and run.session.report.replayed_steps == 13


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_the_responses_api_records_and_replays(
    fake_provider: FakeProvider, tmp_path: Path, network_guard: NetworkGuard, stream: bool
) -> None:
    fake_provider.queue_responses_text("Bonjour.")
    path = tmp_path / "responses.json"

    def ask(root: str, mode: dict[str, Any]) -> str:
        session = blackbox(**mode)
        client = openai.OpenAI(base_url=root + "/v1", max_retries=0)
        if stream:
            with client.responses.stream(model=MODELS["openai"], input="Say hello in French.") as events:
                text = events.get_final_response().output_text
        else:
            text = client.responses.create(model=MODELS["openai"], input="Say hello in French.").output_text
        session.finish(result=text)
        return text

    assert ask(fake_provider.base_url, {"mode": "record", "out": path}) == "Bonjour."
    root = fake_provider.base_url
    fake_provider.stop()
    attempts = network_guard.block()
    assert ask(root, {"mode": "replay", "cassette": path}) == "Bonjour."
    assert attempts == []
