"""Media end to end through the plugin: an agent that answers a tool call with a screenshot records
with ``--record-mode=once``, replays offline, and a screenshot one byte different fails the test with
the part's path and both digests.

The inner test's agent talks to the outer test's fake provider, recording and replaying alike, so the
replay is shown to send nothing; sync and async agents are one parametrized scenario.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from pytest_blackbox.testing import FakeProvider
from tests import QUIET

from .conftest import exact, summary

SCREEN = bytes(range(256)) * 16
ANSWER = "The screen shows a login form."
#: The inner conftest: the agent's base URL is the outer fake provider, whatever the mode.
CONFTEST = """
import os

import pytest


@pytest.fixture
def anthropic_options():
    return {"base_url": os.environ["FAKE_PROVIDER_URL"], "api_key": "fake-provider-key"}
"""
#: The agent: ask, answer the ``take_screenshot`` call with a text and an image block, ask again.
#: ``SCREEN_BYTE`` changes the screenshot's first byte.
TEST_FILE = """
import base64
import os

import anthropic
import pytest

SCREEN = bytearray(bytes(range(256)) * 16)
SCREEN[0] = int(os.environ.get("SCREEN_BYTE", "0"))
TOOLS = [{"name": "take_screenshot", "description": "The screen.", "input_schema": {"type": "object"}}]


def result(call_id):
    image = {"type": "base64", "media_type": "image/png", "data": base64.b64encode(bytes(SCREEN)).decode()}
    content = [{"type": "text", "text": "the screen:"}, {"type": "image", "source": image}]
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


@pytest.mark.blackbox
DEF test_screen(anthropic_options):
    client = anthropic.ASYNCAnthropic(**anthropic_options, max_retries=0)
    messages = [{"role": "user", "content": "What is on my screen?"}]
    for _ in range(3):
        reply = AWAIT client.messages.create(model="claude-x", max_tokens=64, messages=messages, tools=TOOLS)
        calls = [block for block in reply.content if block.type == "tool_use"]
        if not calls:
            break
        turn = [block.model_dump(exclude_none=True) for block in reply.content]
        messages.append({"role": "assistant", "content": turn})
        messages.append({"role": "user", "content": [result(call.id) for call in calls]})
    assert reply.content[0].text == "The screen shows a login form."
"""


def digest(first_byte: int) -> str:
    screen = bytearray(SCREEN)
    screen[0] = first_byte
    return hashlib.sha256(screen).hexdigest()


@pytest.fixture(params=["sync", "async"])
def screen_dir(
    request: pytest.FixtureRequest, bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch
) -> Iterator[tuple[pytest.Pytester, FakeProvider]]:
    """The inner suite (its agent sync or async) and the fake provider it reaches."""
    is_async = request.param == "async"
    source = TEST_FILE.replace("DEF ", "async def " if is_async else "def ")
    source = source.replace("AWAIT ", "await " if is_async else "").replace(
        "ASYNC", "Async" if is_async else ""
    )
    bare_dir.makeconftest(CONFTEST)
    bare_dir.makepyfile(test_screen=source)
    with FakeProvider() as fake:
        fake.queue_anthropic_tool_calls([("take_screenshot", {})])
        fake.queue_anthropic_text(ANSWER)
        clean_env.setenv("FAKE_PROVIDER_URL", fake.anthropic_base_url)
        yield bare_dir, fake


def test_a_screenshot_records_replays_offline_and_one_changed_byte_fails_naming_both_digests(
    screen_dir: tuple[pytest.Pytester, FakeProvider],
) -> None:
    pytester, fake = screen_dir
    recorded = pytester.runpytest(*QUIET, "--record-mode=once")
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines([exact(summary(recorded=1))])
    cassette = pytester.path / "cassettes" / "test_screen" / "test_screen.json"
    assert digest(0) in cassette.read_text(encoding="utf-8")
    sent = len(fake.requests)

    replayed = pytester.runpytest(*QUIET)
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=1))])

    pytester._monkeypatch.setenv("SCREEN_BYTE", "1")
    changed = pytester.runpytest(*QUIET)
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(
        [
            exact(line)
            for line in (
                "blackbox: replay diverged at step 2, messages[2].content[0].result[1].sha256",
                f'  recorded: "{digest(0)}"',
                f'  actual:   "{digest(1)}"',
            )
        ],
        consecutive=True,
    )
    changed.stdout.fnmatch_lines([exact(summary(diverged=1))])
    assert len(fake.requests) == sent
