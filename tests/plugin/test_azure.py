"""Azure OpenAI in a CI run with no key: an ``AzureOpenAI()`` built at import replays keyless.

The client reads its key, endpoint and API version from the environment when the agent module is
imported, before any session starts; the plugin's placeholder for ``AZURE_OPENAI_API_KEY`` lets it
start in a replay (docs/providers.md#azure-openai).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from pytest_blackbox.testing import FakeProvider
from tests import QUIET

from .conftest import exact, summary

KEY = "azure-keyless-test-0123456789abcdef"

AGENT = '''
"""A client built at import, configured by the environment, the way Azure deployments are."""
import openai

AZURE = openai.AzureOpenAI()


def ask(question):
    completion = AZURE.chat.completions.create(
        model="gpt-4o-prod", messages=[{"role": "user", "content": question}]
    )
    return completion.choices[0].message.content
'''
TESTS = """
import pytest

import agent


@pytest.mark.blackbox
def test_ask():
    assert agent.ask("hi") == "hello from azure"
"""


@pytest.fixture
def fake(bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    """The fake provider as the Azure endpoint, with the API version set, recording and replaying alike."""
    bare_dir.makepyfile(agent=AGENT, test_azure_agent=TESTS)
    clean_env.delitem(__import__("sys").modules, "agent", raising=False)
    clean_env.delenv("AZURE_OPENAI_AD_TOKEN", raising=False)
    with FakeProvider() as provider:
        clean_env.setenv("AZURE_OPENAI_ENDPOINT", provider.base_url)
        clean_env.setenv("OPENAI_API_VERSION", "2024-10-21")
        yield provider


def test_a_ci_run_with_no_azure_key_replays_a_client_built_at_import(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider
) -> None:
    clean_env.setenv("AZURE_OPENAI_API_KEY", KEY)
    fake.queue_openai_text("hello from azure")
    recorded = bare_dir.runpytest(*QUIET, "--record-mode=once")
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines([exact(summary(recorded=1))])
    (request,) = fake.requests
    assert request.path == "/openai/deployments/gpt-4o-prod/chat/completions"
    assert request.headers["api-key"] == KEY
    (cassette,) = (bare_dir.path / "cassettes").rglob("*.json")
    assert KEY not in cassette.read_text(encoding="utf-8")

    clean_env.delenv("AZURE_OPENAI_API_KEY")
    clean_env.setenv("CI", "true")
    replayed = bare_dir.runpytest(*QUIET)
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1))])
    assert len(fake.requests) == 1  # nothing reached the provider
    assert "AZURE_OPENAI_API_KEY" not in os.environ  # the placeholder is taken back


def test_recording_with_the_placeholder_names_the_azure_key_variable(
    bare_dir: pytest.Pytester, fake: FakeProvider
) -> None:
    """With no key set, the client starts on the placeholder; a recording refuses to send it."""
    fake.queue_openai_text("hello from azure")
    result = bare_dir.runpytest(*QUIET, "--record-mode=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*recording needs a real key*its api-key header*set AZURE_OPENAI_API_KEY*"])
    assert fake.requests == []
