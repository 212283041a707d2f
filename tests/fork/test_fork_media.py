"""``fork --live`` on a cassette that keeps only the digests of its images.

A live fork re-runs the agent: up to the fork point its requests are compared with the cassette (by
digest), and past it the agent's own requests go to the provider as the agent built them. So the
bytes a live continuation sends are the agent's, never rebuilt from the cassette, and a digest-only
cassette forks live: the live request carries the real bytes of every image in its history (the one
in the first message, and the screenshot the replacement result now names).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anthropic
import pytest

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.testing import FakeProvider
from tests.agents.loop import settle

from .forkhelp import read_json, ticks

pytestmark = pytest.mark.usefixtures("provider_keys")

LOGO = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
SCREENS = {"login": b"\x89PNG login form" * 64, "error": b"\x89PNG error dialog" * 64}
TOOL: Any = {
    "name": "take_screenshot",
    "description": "Which screen is showing.",
    "input_schema": {"type": "object", "properties": {}},
}
#: The step of the screenshot tool's recorded result: model_input, model_output, tool_call, tool_result.
FORK_AT = 3


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def image(data: bytes) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(data)}}


def take_screenshot() -> dict[str, str]:
    return {"screen": "login"}


def run(base_url: str, is_async: bool, tools: Mapping[str, Callable[[], Any]]) -> str:
    """The agent: the logo with the question; each screenshot call's result names a screen, whose
    bytes the agent itself puts into the tool result."""

    async def loop() -> str:
        client = (anthropic.AsyncAnthropic if is_async else anthropic.Anthropic)(
            base_url=base_url, max_retries=0
        )
        messages: list[Any] = [
            {"role": "user", "content": [{"type": "text", "text": "What is on screen?"}, image(LOGO)]}
        ]
        for _ in range(3):
            reply = await settle(
                client.messages.create(model="claude-x", max_tokens=64, messages=messages, tools=[TOOL])
            )
            calls = [block for block in reply.content if block.type == "tool_use"]
            if not calls:
                return str(reply.content[0].text)
            messages.append(
                {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]}
            )
            results = []
            for call in calls:
                shown = await settle(tools["take_screenshot"]())
                content = [{"type": "text", "text": "the screen:"}, image(SCREENS[shown["screen"]])]
                results.append({"type": "tool_result", "tool_use_id": call.id, "content": content})
            messages.append({"role": "user", "content": results})
        return "gave up"

    return asyncio.run(loop())


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_digest_cassette_forks_live_and_the_live_request_carries_the_real_bytes(
    fake_provider: FakeProvider, tmp_path: Path, is_async: bool
) -> None:
    parent = tmp_path / "run.json"
    fake_provider.queue_anthropic_tool_calls([("take_screenshot", {})])
    fake_provider.queue_anthropic_text("A login form.")
    session = blackbox(mode="record", out=parent, clock=ticks(1_700_000_000_000))
    session.finish(
        result=run(fake_provider.base_url, is_async, session.tools({"take_screenshot": take_screenshot}))
    )
    text = parent.read_text(encoding="utf-8")
    assert b64(LOGO) not in text and b64(SCREENS["login"]) not in text  # digests only
    assert read_json(parent)["steps"][FORK_AT]["payload"]["result"] == {"screen": "login"}

    sent = len(fake_provider.requests)
    fake_provider.queue_anthropic_text("An error dialog.")
    child = tmp_path / "child.json"
    fork = blackbox(
        mode="fork",
        cassette=parent,
        out=child,
        fork_at=FORK_AT,
        fork_set={"screen": "error"},
        continue_with="live",
        clock=ticks(1_800_000_000_000),
    )
    answer = run(fake_provider.base_url, is_async, fork.tools({"take_screenshot": take_screenshot}))
    fork.finish(result=answer)

    assert answer == "An error dialog."
    assert len(fake_provider.requests) == sent + 1
    live = json.loads(fake_provider.requests[-1].body)
    assert live["messages"][0]["content"][1]["source"]["data"] == b64(LOGO)
    assert live["messages"][2]["content"][0]["content"][1]["source"]["data"] == b64(SCREENS["error"])
    steps = read_json(child)["steps"]
    screenshot = steps[FORK_AT + 1]["payload"]["messages"][2]["content"][0]["result"][1]
    assert screenshot["sha256"] == hashlib.sha256(SCREENS["error"]).hexdigest()
    assert "data" not in screenshot
    assert verify_trace(child).ok
