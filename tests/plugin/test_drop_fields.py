"""A request or response field Blackbox does not know, end to end: the recording fails naming it, and
``--blackbox-drop-fields`` (or the ini key) records without it, with a warning, and the replay needs no
server or key.

The agent talks to an OpenAI-compatible server (the fake provider) through the openai SDK with a key
of its own, the way teams point the SDK at vLLM or Ollama (docs/providers.md#openai-compatible-servers).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from pytest_blackbox.testing import Envelope, FakeProvider
from tests import QUIET

from .conftest import INNER_INI, exact, summary

AGENT = '''
"""A client of a local OpenAI-compatible server."""
import os

import openai


def ask(question):
    client = openai.OpenAI(base_url=os.environ["SERVER_URL"] + "/v1", api_key="local-server-key")
    completion = client.chat.completions.create(
        model="qwen3", messages=[{"role": "user", "content": question}]
    )
    return completion.choices[0].message.content
'''
TESTS = """
import pytest

import agent


@pytest.mark.blackbox
def test_ask():
    assert agent.ask("hi") == "hello"
"""
REFUSAL = (
    "the response field choices[0].message.x_new is not known to Blackbox, so a replay could not give "
    'it back; it was not recorded. To record without it, accept losing it: drop_fields=["choices[].'
    'message.x_new"] (the blackbox marker), blackbox_drop_fields in the ini or '
    "--blackbox-drop-fields=choices[].message.x_new"
)


@pytest.fixture
def server(bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    bare_dir.makepyfile(agent=AGENT, test_server_agent=TESTS)
    clean_env.delitem(sys.modules, "agent", raising=False)
    with FakeProvider() as provider:
        clean_env.setenv("SERVER_URL", provider.base_url)
        yield provider


def test_an_unknown_field_fails_the_recording_naming_it(
    bare_dir: pytest.Pytester, server: FakeProvider
) -> None:
    server.queue_openai_text("hello", envelope=Envelope(message_extras={"x_new": "value"}))
    result = bare_dir.runpytest(*QUIET, "--record-mode=once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            exact(f"blackbox: {REFUSAL}"),
            exact("cassette: cassettes/test_server_agent/test_ask.json (not written: the test failed)"),
            exact(summary(unsupported=1)),
        ]
    )
    assert list(bare_dir.path.rglob("*.json")) == []


def test_drop_fields_records_without_it_and_the_replay_needs_no_server(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, server: FakeProvider
) -> None:
    server.queue_openai_text("hello", envelope=Envelope(message_extras={"x_new": "value"}))
    recorded = bare_dir.runpytest(
        *QUIET, "--record-mode=once", "--blackbox-drop-fields=choices[].message.x_new"
    )
    recorded.assert_outcomes(passed=1, warnings=1)
    recorded.stdout.fnmatch_lines(
        [
            "test_server_agent.py::test_ask",
            "  *: DroppedFieldWarning: "
            + exact(
                "record mode: the response field choices[0].message.x_new was left out of the cassette, "
                "as drop_fields accepts (choices[].message.x_new): a replay does not give it back"
            ),
            exact(summary(recorded=1)),
        ]
    )
    clean_env.setenv("CI", "true")
    replayed = bare_dir.runpytest(*QUIET)
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1))])
    assert len(server.requests) == 1  # nothing reached the server


REQUEST_REFUSAL = (
    "the request field request.x_new is not known to Blackbox, so a cassette could neither hold nor "
    "compare it; the request was not sent. To send it unrecorded, accept losing it: "
    'drop_fields=["request.x_new"] (the blackbox marker), blackbox_drop_fields in the ini or '
    "--blackbox-drop-fields=request.x_new"
)


def test_an_unknown_request_field_is_refused_unless_the_ini_accepts_sending_it_uncompared(
    bare_dir: pytest.Pytester, server: FakeProvider
) -> None:
    bare_dir.makepyfile(agent=AGENT.replace("messages=[", 'extra_body={"x_new": 1}, messages=['))
    refused = bare_dir.runpytest(*QUIET, "--record-mode=once")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines([exact(f"blackbox: {REQUEST_REFUSAL}"), exact(summary(unsupported=1))])
    assert server.requests == []

    bare_dir.makeini(INNER_INI + "blackbox_drop_fields = request.x_new\n")
    server.queue_openai_text("hello")
    recorded = bare_dir.runpytest(*QUIET, "--record-mode=once")
    recorded.assert_outcomes(passed=1, warnings=1)
    recorded.stdout.fnmatch_lines(
        [
            "  *: DroppedFieldWarning: "
            + exact(
                "record mode: the request field request.x_new was sent but not recorded, as drop_fields "
                "accepts (request.x_new): a replay does not compare it"
            ),
            exact(summary(recorded=1)),
        ]
    )
    replayed = bare_dir.runpytest(*QUIET, "--record-mode=none")
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1))])
    assert len(server.requests) == 1  # the recording's; nothing reached the server in the replay
