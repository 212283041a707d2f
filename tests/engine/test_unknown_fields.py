"""A response field Blackbox does not know is refused while recording, naming its path, plain and
streamed, through the real SDKs against the fake provider (docs/providers.md, "Response fields Blackbox
does not know").
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anthropic
import pytest

from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import BlackboxUnsupportedError
from pytest_blackbox.testing import Envelope, FakeProvider
from tests.agents.loop import settle
from tests.engine.test_compatible_servers import ask

CALL = {"type": "tool_use", "id": "toolu_01", "name": "lookup", "input": {"q": "a"}, "x_new": 1}


def ask_anthropic(root: str, is_async: bool, stream: bool) -> None:
    async def call() -> None:
        client: Any = (anthropic.AsyncAnthropic if is_async else anthropic.Anthropic)(
            base_url=root, max_retries=0
        )
        messages = [{"role": "user", "content": "Look it up"}]
        create = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=64, messages=messages, stream=stream
        )
        result = await settle(create)
        if stream:
            _ = [event async for event in result] if is_async else list(result)

    asyncio.run(call())


def message(path: str) -> str:
    pattern = path.replace("[0]", "[]")
    return (
        f"the response field {path} is not known to Blackbox, so a replay could not give it back; it "
        f'was not recorded. To record without it, accept losing it: drop_fields=["{pattern}"] (the '
        f"blackbox marker), blackbox_drop_fields in the ini or --blackbox-drop-fields={pattern}"
    )


@pytest.mark.parametrize(
    ("api", "is_async", "stream", "path"),
    [
        ("chat", False, False, "choices[0].message.x_new"),
        ("chat", True, True, "choices[0].delta.x_new"),
        ("anthropic", False, False, "content[0].x_new"),
        ("anthropic", True, True, "content_block_start.content_block.x_new"),
    ],
    ids=["chat-sync", "chat-async-streamed", "anthropic-sync", "anthropic-async-streamed"],
)
def test_an_unknown_field_is_refused_naming_it(
    fake_provider: FakeProvider, tmp_path: Path, api: str, is_async: bool, stream: bool, path: str
) -> None:
    if api == "chat":
        fake_provider.queue_openai_text("Hi!", envelope=Envelope(message_extras={"x_new": "value"}))
    else:
        fake_provider.queue_anthropic_content([CALL], stop_reason="tool_use")
    out = tmp_path / "run.json"
    session = blackbox(mode="record", out=out)
    if api == "chat":
        ask(fake_provider.base_url, is_async, stream)
    else:
        ask_anthropic(fake_provider.anthropic_base_url, is_async, stream)
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.finish(result="done")
    assert str(caught.value) == message(path)
    assert not out.exists()
