"""Refused fields never reach the provider, and API keys never reach a cassette or a message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.engine.ending import _contains_secret
from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import BlackboxUnsupportedError, ReplayDivergenceError, SecretLeakError
from pytest_blackbox.testing.fake_provider import FakeProvider
from pytest_blackbox.trace.canonical import pretty_json
from tests import TEST_KEYS
from tests.agents.travel import WEATHER, ToolBox, run_agent, script

STRICT_TOOL = {
    "name": "lookup",
    "description": "Looks up.",
    "input_schema": {"type": "object"},
    "strict": True,
}
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "anthropic": ({"extra_tools": [STRICT_TOOL]}, "strict: true on a tool is not supported yet"),
    "openai": (
        {"extra": {"functions": [{"name": "f", "parameters": {}}]}},
        "the legacy functions request field is not supported yet",
    ),
}


def test_a_refused_field_never_reaches_the_provider(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path
) -> None:
    sdk = flavor[0]
    agent_options, message = REFUSED[sdk]
    path = tmp_path / "refused.json"
    session = blackbox(mode="record", out=path)
    run = run_agent(
        flavor, fake_provider.base_url, session=session, finish=False, catch_errors=True, **agent_options
    )
    assert fake_provider.requests == []
    (caught,) = run.agent.caught
    assert getattr(caught, "status_code", None) == 400
    assert f"[blackbox] {message}" in str(caught)
    with pytest.raises(BlackboxUnsupportedError, match=message.replace("(", r"\(").replace(")", r"\)")):
        session.finish(result=run.answer)
    assert not path.exists()


def test_an_api_key_in_a_tool_result_refuses_the_cassette(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path
) -> None:
    key = TEST_KEYS[f"{flavor[0].upper()}_API_KEY"]
    script(fake_provider, flavor[0])
    leaky = ToolBox({**WEATHER, "Paris": {"city": "Paris", "debug": f"used key {key}"}})
    path = tmp_path / "leak.json"
    session = blackbox(mode="record", out=path)
    run = run_agent(flavor, fake_provider.base_url, session=session, box=leaky, finish=False)
    with pytest.raises(SecretLeakError) as caught:
        session.finish(result=run.answer)
    assert str(caught.value) == (
        "refusing to write the cassette: it contains your API key "
        f"(the value of {flavor[0].upper()}_API_KEY) in step 3 (tool_result) at result.debug; "
        "keep it out of what the agent sends and what its tools return"
    )
    assert key not in str(caught.value)
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_key_from_the_authorization_header_is_masked_in_messages(
    fake_provider: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key exists only in the client (not the environment); the session learns it from the header."""
    key = "team-gateway-key-7781"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    script(fake_provider, "openai")
    path = tmp_path / "run.json"
    run_agent(("openai", False), fake_provider.base_url, session_options={"mode": "record", "out": path})
    root = fake_provider.base_url
    fake_provider.stop()
    monkeypatch.setenv("OPENAI_API_KEY", "blackbox-offline-placeholder")
    session = blackbox(mode="replay", cassette=path)
    monkeypatch.setenv("OPENAI_API_KEY", key)  # the client sends it; the session never read it from the env
    run = run_agent(
        ("openai", False), root, session=session, finish=False, catch_errors=True, system=f"Use key {key}."
    )
    (caught,) = run.agent.caught
    assert key not in str(caught)
    with pytest.raises(ReplayDivergenceError) as divergence:
        session.finish(result=run.answer)
    assert divergence.value.path == "systemPrompt"
    assert divergence.value.actual == json.dumps("Use key [redacted].")
    assert key not in str(divergence.value)


@pytest.mark.parametrize("secret", ["sk-test-plain-value-0123", "sk-test-\udc80-undecodable-0123"])
def test_a_key_is_found_whether_or_not_the_cassette_text_spells_it_verbatim(secret: str) -> None:
    """The scan looks in the cassette's text first; that text escapes a lone surrogate (an undecodable
    byte of an environment variable), so such a key is looked for in the trace itself."""
    trace: Any = {"steps": [{"payload": {"result": f"token {secret}"}}]}
    text = pretty_json(trace)
    assert (secret in text) is secret.isascii()
    assert _contains_secret(trace, [secret], text)
    clean: Any = {"steps": [{"payload": {"result": "clean"}}]}
    assert not _contains_secret(clean, [secret], pretty_json(clean))
