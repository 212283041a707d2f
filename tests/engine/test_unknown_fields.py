"""A request or response field Blackbox does not know is refused, naming its path, plain and
streamed, through the real SDKs against the fake provider, unless the run accepts losing it
(docs/providers.md, "Fields Blackbox does not know").
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest

from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import BlackboxUnsupportedError, DroppedFieldWarning
from pytest_blackbox.testing import Envelope, FakeProvider
from tests.agents.loop import settle
from tests.agents.travel import run_agent, script
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


UNKNOWN_REQUEST: Any = {"extra_body": {"x_new": 1}}
REQUEST_REFUSAL = (
    "the request field request.x_new is not known to Blackbox, so a cassette could neither hold nor "
    "compare it; the request was not sent. To send it unrecorded, accept losing it: "
    'drop_fields=["request.x_new"] (the blackbox marker), blackbox_drop_fields in the ini or '
    "--blackbox-drop-fields=request.x_new"
)


def test_an_unknown_request_field_is_refused_before_it_is_sent(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path
) -> None:
    path = tmp_path / "run.json"
    session = blackbox(mode="record", out=path)
    run = run_agent(
        flavor,
        fake_provider.base_url,
        session=session,
        finish=False,
        catch_errors=True,
        extra=UNKNOWN_REQUEST,
    )
    assert fake_provider.requests == []
    (caught,) = run.agent.caught
    assert f"[blackbox] {REQUEST_REFUSAL}" in str(caught)
    with pytest.raises(BlackboxUnsupportedError) as refused:
        session.finish(result=run.answer)
    assert str(refused.value) == REQUEST_REFUSAL
    assert not path.exists()


def test_drop_fields_sends_an_unknown_request_field_unrecorded_and_the_replay_accepts_it(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, offline: Callable[[], list[str]]
) -> None:
    path = tmp_path / "run.json"
    script(fake_provider, flavor[0])
    accepted = {"drop_fields": ["request.x_new"]}
    with pytest.warns(DroppedFieldWarning) as warned:
        recorded = run_agent(
            flavor,
            fake_provider,
            session_options={"mode": "record", "out": path, **accepted},
            extra=UNKNOWN_REQUEST,
        )
    assert [str(warning.message) for warning in warned] == [
        "record mode: the request field request.x_new was sent but not recorded, as drop_fields accepts "
        "(request.x_new): a replay does not compare it"
    ]
    assert [json.loads(request.body)["x_new"] for request in fake_provider.requests] == [1, 1, 1]
    assert "x_new" not in path.read_text(encoding="utf-8")
    root = fake_provider.base_url
    fake_provider.stop()
    attempts = offline()
    replay = {"mode": "replay", "cassette": path}
    replayed = run_agent(flavor, root, session_options={**replay, **accepted}, extra=UNKNOWN_REQUEST)
    assert replayed.answer == recorded.answer
    refused = run_agent(
        flavor, root, session_options=replay, finish=False, catch_errors=True, extra=UNKNOWN_REQUEST
    )
    with pytest.raises(BlackboxUnsupportedError, match=r"^the request field request\.x_new is not known"):
        refused.session.finish(result=refused.answer)
    assert attempts == []
