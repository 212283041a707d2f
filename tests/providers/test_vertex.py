"""Gemini and Claude on Vertex AI through the real clients: recorded, replayed with no Google credentials.

``genai.Client(vertexai=True)`` and ``AnthropicVertex`` record against the fake provider with an access
token of the test's own; the replay runs with only the offline placeholder credentials the plugin
provides (``GOOGLE_APPLICATION_CREDENTIALS``), the fake provider stopped and the network blocked
(docs/providers.md#gemini-on-vertex-ai, docs/providers.md#anthropic-on-vertex-ai).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anthropic
import pytest
from google.genai import errors

from pytest_blackbox import ReplayDivergenceError, blackbox
from pytest_blackbox.engine import GOOGLE_PLACEHOLDER_CREDENTIALS, set_placeholder_keys
from pytest_blackbox.errors import BlackboxUsageError
from pytest_blackbox.testing import FakeProvider
from tests.agents.loop import VERTEX_PROJECT, VERTEX_REGION
from tests.agents.travel import FINAL, SYSTEM
from tests.agents.vertex import CLAUDE, FLAVOR_IDS, FLAVORS, ROADS, TOKEN
from tests.conftest import NetworkGuard


@pytest.fixture
def placeholder_env(clean_env: pytest.MonkeyPatch) -> Callable[[], None]:
    """No Google credentials in the environment; calling it gives what an offline run gets."""

    def offline() -> None:
        env: dict[str, str] = {}
        for name in set_placeholder_keys(env):
            clean_env.setenv(name, env[name])

    return offline


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
@pytest.mark.parametrize("road", list(ROADS))
def test_vertex_records_and_replays_with_no_google_credentials(
    road: str,
    is_async: bool,
    stream: bool,
    fake_provider: FakeProvider,
    placeholder_env: Callable[[], None],
    network_guard: NetworkGuard,
    tmp_path: Path,
) -> None:
    run, script, prefix = ROADS[road]
    script(fake_provider)
    path = tmp_path / "vertex.json"
    root = fake_provider.base_url
    recording = blackbox(mode="record", out=path)
    answer = run(root, recording, is_async=is_async, stream=stream, token=TOKEN, system=SYSTEM)
    recording.finish(result=answer)
    assert answer == FINAL
    assert len(fake_provider.requests) == 3
    for request in fake_provider.requests:
        assert request.path.startswith(prefix + "/models/")
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
    written = path.read_text(encoding="utf-8")
    assert TOKEN not in written
    model = json.loads(written)["steps"][0]["payload"]["model"]
    assert model == (CLAUDE if road == "claude" else "gemini-2.5-flash")

    # The replay: no Google credentials but the placeholder, the provider gone, every connection refused.
    sent = len(fake_provider.requests)
    fake_provider.stop()
    placeholder_env()
    attempts = network_guard.block()
    replay = blackbox(mode="replay", cassette=path)
    replay.finish(result=run(root, replay, is_async=is_async, stream=stream, token=None, system=SYSTEM))

    changed = blackbox(mode="replay", cassette=path)
    with pytest.raises((anthropic.APIError, errors.APIError)):  # the diverging call gets a refusal
        run(root, changed, is_async=is_async, stream=stream, token=None, system="Be chatty.")
    with pytest.raises(ReplayDivergenceError) as divergence:
        changed.finish(result=answer)
    assert divergence.value.path == "systemPrompt"
    assert attempts == [] and len(fake_provider.requests) == sent


@pytest.mark.parametrize("road", list(ROADS))
def test_recording_with_the_placeholder_credentials_asks_for_real_ones(
    road: str, fake_provider: FakeProvider, placeholder_env: Callable[[], None], tmp_path: Path
) -> None:
    """Loaded from the placeholder file (Claude's client refreshes it, offline), the token is refused."""
    run, script, _ = ROADS[road]
    script(fake_provider)
    placeholder_env()
    session = blackbox(mode="record", out=tmp_path / "vertex.json")
    with pytest.raises((anthropic.APIError, errors.APIError, BlackboxUsageError)):
        run(fake_provider.base_url, session, is_async=False, stream=False, token=None, system=SYSTEM)
    with pytest.raises(BlackboxUsageError) as caught:
        session.finish(result="none")
    assert str(caught.value).startswith(
        "recording needs a real key: this request carries the offline placeholder key "
        "(blackbox-offline-placeholder) in its authorization header, so it was not sent; provide Google "
        "credentials (set GOOGLE_APPLICATION_CREDENTIALS to a credentials file"
    )
    assert fake_provider.requests == []
    assert not (tmp_path / "vertex.json").exists()


def test_an_offline_run_gets_placeholder_google_credentials_unless_it_has_its_own(tmp_path: Path) -> None:
    env: dict[str, str] = {}
    assert "GOOGLE_APPLICATION_CREDENTIALS" in set_placeholder_keys(env)
    assert env["GOOGLE_APPLICATION_CREDENTIALS"] == GOOGLE_PLACEHOLDER_CREDENTIALS
    info = json.loads(Path(GOOGLE_PLACEHOLDER_CREDENTIALS).read_text(encoding="utf-8"))
    assert info["type"] == "authorized_user" and info["token"] == "blackbox-offline-placeholder"
    own = str(tmp_path / "adc.json")
    assert "GOOGLE_APPLICATION_CREDENTIALS" not in set_placeholder_keys(
        {"GOOGLE_APPLICATION_CREDENTIALS": own}
    )


def test_claude_on_vertex_counting_tokens_is_a_side_call(
    fake_provider: FakeProvider, clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    session = blackbox(mode="record", out=tmp_path / "vertex.json")
    client = anthropic.AnthropicVertex(
        region=VERTEX_REGION,
        project_id=VERTEX_PROJECT,
        access_token=TOKEN,
        base_url=fake_provider.base_url + "/v1",
        max_retries=0,
    )
    with pytest.raises(anthropic.APIConnectionError):
        client.messages.count_tokens(model=CLAUDE, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(Exception, match=r"is the SDK side call messages\.count_tokens, not a model call"):
        session.finish(result="none")
    assert fake_provider.requests == []
