"""CI without a key: clients built at import, in session fixtures and in tests replay with no key set.

The SDK constructors read their key when the client is built, long before the test's session starts;
the plugin gives every missing key variable the offline placeholder before any conftest or test
module is imported. Each replay runs with ``CI`` set and no key in the environment, against a fake
provider that counts what reaches it: nothing may.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_blackbox.testing import FakeProvider
from tests import QUIET

from .conftest import exact, summary

pytest.importorskip("google.genai", reason="google-genai is not installed (pip install google-genai)")

KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-keyless-test-0123456789abcdef",
    "OPENAI_API_KEY": "sk-proj-keyless-test-0123456789abcdefghij",
    "GEMINI_API_KEY": "AIzaSyKeylessTestKey0123456789abcdefghi",
}
#: Variables an SDK would read a key or an address from: none is inherited by the inner runs.
SDK_VARIABLES = (
    *KEYS,
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
)

AGENT = '''
"""Clients built at import, the way many agent modules do."""
import anthropic
import openai
from google import genai

ANTHROPIC = anthropic.Anthropic()
OPENAI = openai.OpenAI()
GEMINI = genai.Client()


def ask_all(claude, gpt, gemini):
    claude_says = claude.messages.create(
        model="claude-haiku-4-5", max_tokens=32, messages=[{"role": "user", "content": "hi"}]
    ).content[0].text
    gpt_says = gpt.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    ).choices[0].message.content
    gemini_says = gemini.models.generate_content(model="gemini-2.5-flash", contents="hi").text
    return claude_says, gpt_says, gemini_says
'''
CONFTEST = """
import anthropic
import openai
import pytest
from google import genai

import agent  # imported with the conftest, before any test runs: its clients are built now


@pytest.fixture(scope="session")
def session_clients():
    return anthropic.Anthropic(), openai.OpenAI(), genai.Client()


@pytest.fixture(scope="module")
def module_clients():
    return anthropic.Anthropic(), openai.OpenAI(), genai.Client()
"""
TESTS = """
import anthropic
import openai
import pytest
from google import genai

import agent

HELLO = ("hello from claude", "hello from gpt", "hello from gemini")


@pytest.mark.blackbox
def test_clients_built_at_import():
    assert agent.ask_all(agent.ANTHROPIC, agent.OPENAI, agent.GEMINI) == HELLO


@pytest.mark.blackbox
def test_clients_from_a_session_fixture(session_clients):
    assert agent.ask_all(*session_clients) == HELLO


@pytest.mark.blackbox
def test_clients_from_a_module_fixture(module_clients):
    assert agent.ask_all(*module_clients) == HELLO


@pytest.mark.blackbox
def test_clients_built_in_the_test():
    assert agent.ask_all(anthropic.Anthropic(), openai.OpenAI(), genai.Client()) == HELLO
"""


def hello(path: str, body: Any) -> tuple[int, Any]:
    """The fake provider's answer: one short text, in the shape of the API the path names."""
    usage = {"input_tokens": 1, "output_tokens": 3}
    if path.endswith("/v1/messages"):
        text = {"type": "text", "text": "hello from claude"}
        message = {"id": "msg_01Keyless", "type": "message", "role": "assistant", "model": body["model"]}
        return 200, {
            **message,
            "content": [text],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
    if path.endswith("/chat/completions"):
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": "hello from gpt"},
            "finish_reason": "stop",
        }
        completion = {
            "id": "chatcmpl-keyless",
            "object": "chat.completion",
            "created": 1,
            "model": body["model"],
        }
        return 200, {**completion, "choices": [choice], "usage": {"prompt_tokens": 1, "completion_tokens": 3}}
    parts = [{"text": "hello from gemini"}]
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    return 200, {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 3},
    }


@pytest.fixture
def fake(bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    """The fake provider every SDK is pointed at, recording and replaying alike, through the environment."""
    for name in SDK_VARIABLES:
        clean_env.delenv(name, raising=False)
    bare_dir.makepyfile(agent=AGENT, test_clients=TESTS)
    bare_dir.makeconftest(CONFTEST)
    clean_env.delitem(__import__("sys").modules, "agent", raising=False)
    with FakeProvider(respond=hello) as provider:
        clean_env.setenv("ANTHROPIC_BASE_URL", provider.anthropic_base_url)
        clean_env.setenv("OPENAI_BASE_URL", provider.openai_base_url)
        clean_env.setenv("GOOGLE_GEMINI_BASE_URL", provider.gemini_base_url)
        yield provider


def test_a_ci_run_with_no_key_replays_clients_built_at_any_time(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider
) -> None:
    """Recorded once with the keys, in one process (recording is not what is checked); replayed with
    none, in one process and under pytest-xdist, whose workers import the conftest and agent anew."""
    for name, key in KEYS.items():
        clean_env.setenv(name, key)
    recorded = bare_dir.runpytest(*QUIET, "--record-mode=once")
    recorded.assert_outcomes(passed=4)
    recorded.stdout.fnmatch_lines([exact(summary(recorded=4))])
    assert len(fake.requests) == 12

    for name in KEYS:
        clean_env.delenv(name)
    clean_env.setenv("CI", "true")
    for xdist in ((), ("-n", "2")):
        replayed = bare_dir.runpytest(*QUIET, *xdist)
        replayed.assert_outcomes(passed=4)
        replayed.stdout.fnmatch_lines([exact(summary(replayed=4))])
        assert len(fake.requests) == 12  # nothing reached the provider
        assert not [
            name for name in (*KEYS, "GOOGLE_API_KEY") if name in os.environ
        ]  # placeholders taken back


def test_live_mode_sets_no_placeholder(bare_dir: pytest.Pytester, fake: FakeProvider) -> None:
    """``--blackbox-disable`` talks to the real provider: a missing key must fail as it would without us."""
    result = bare_dir.runpytest(*QUIET, "--blackbox-disable")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # conftest.py imports agent.py: no key, no client
    result.stderr.fnmatch_lines(["E   openai.OpenAIError: Missing credentials.*"])
    assert fake.requests == []
