"""Vertex AI in a CI run with no Google credentials: clients built at import replay keyless.

``genai.Client(vertexai=True)`` and ``AnthropicVertex`` are built when the agent module is imported,
before any session starts; they find Google's application default credentials when they first
sign. The plugin points ``GOOGLE_APPLICATION_CREDENTIALS`` at placeholder credentials before
conftests load, so a replay signs with the placeholder and never reaches Google
(docs/providers.md#gemini-on-vertex-ai).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_blackbox.testing import FakeProvider
from tests import QUIET

from .conftest import exact, summary

TOKEN = "ya29.vertex-plugin-token-0123456789abcdef"

AGENT = '''
"""Clients built at import, signed by Google's application default credentials (or a given token)."""
import os

import anthropic
from google import genai
from google.genai import types

URL = os.environ["FAKE_VERTEX_URL"]
GEMINI = genai.Client(
    vertexai=True, project="blackbox-suite", location="us-central1",
    http_options=types.HttpOptions(base_url=URL),
)
CLAUDE = anthropic.AnthropicVertex(
    region="us-east5", project_id="blackbox-suite", base_url=URL + "/v1", max_retries=0,
    access_token=os.environ.get("AGENT_VERTEX_TOKEN"),
)


def ask(question):
    gemini = GEMINI.models.generate_content(model="gemini-2.5-flash", contents=question).text
    messages = [{"role": "user", "content": question}]
    claude = CLAUDE.messages.create(model="claude-sonnet-4-5@20250929", max_tokens=64, messages=messages)
    return gemini + " / " + claude.content[0].text
'''
TESTS = """
import pytest

import agent


@pytest.mark.blackbox
def test_ask():
    assert agent.ask("hi") == "hello from gemini / hello from claude"
"""


@pytest.fixture
def fake(bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    """The fake provider as the Vertex AI endpoint, its two answers queued."""
    bare_dir.makepyfile(agent=AGENT, test_vertex_agent=TESTS)
    clean_env.delitem(__import__("sys").modules, "agent", raising=False)
    with FakeProvider() as provider:
        clean_env.setenv("FAKE_VERTEX_URL", provider.base_url)
        provider.queue_gemini_text("hello from gemini")
        provider.queue_anthropic_text("hello from claude")
        yield provider


def test_a_ci_run_with_no_google_credentials_replays_clients_built_at_import(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider, tmp_path: Path
) -> None:
    credentials = tmp_path / "adc.json"
    user = {"client_id": "suite", "client_secret": "suite", "refresh_token": "suite-refresh-token"}
    credentials.write_text(
        json.dumps({"type": "authorized_user", **user, "token": TOKEN, "expiry": "2999-01-01T00:00:00Z"}),
        encoding="utf-8",
    )
    clean_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(credentials))
    clean_env.setenv("AGENT_VERTEX_TOKEN", TOKEN)
    recorded = bare_dir.runpytest(*QUIET, "--record-mode=once")
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines([exact(summary(recorded=1))])
    assert [request.headers["authorization"] for request in fake.requests] == [f"Bearer {TOKEN}"] * 2
    (cassette,) = (bare_dir.path / "cassettes").rglob("*.json")
    assert TOKEN not in cassette.read_text(encoding="utf-8")

    clean_env.delenv("GOOGLE_APPLICATION_CREDENTIALS")
    clean_env.delenv("AGENT_VERTEX_TOKEN")
    clean_env.setenv("CI", "true")
    replayed = bare_dir.runpytest(*QUIET)
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1))])
    assert len(fake.requests) == 2  # nothing reached the provider
    assert "GOOGLE_APPLICATION_CREDENTIALS" not in os.environ  # the placeholder is taken back


def test_recording_with_the_placeholder_asks_for_google_credentials(
    bare_dir: pytest.Pytester, fake: FakeProvider
) -> None:
    """With no credentials set, the clients start on the placeholder; a recording refuses to send it."""
    result = bare_dir.runpytest(*QUIET, "--record-mode=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*recording needs a real key*its authorization header*provide Google credentials (set GOOGLE_*"]
    )
    assert fake.requests == []
