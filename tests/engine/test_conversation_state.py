"""Conversation state the provider keeps: Responses ``previous_response_id`` and ``conversation``, the
Anthropic code execution ``container``, through the real SDKs.

Recorded against the fake provider (sync, async, streamed), replayed with no request reaching it and
no key: the SDK hands the agent the neutral ids, the next request names them back and is compared
with the mapping applied, and naming other state diverges at that field. The cassette holds no
provider id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import BlackboxUnsupportedError
from pytest_blackbox.providers import CallIds
from pytest_blackbox.testing import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests.agents.loop import settle
from tests.engine.conftest import DivergesOffline, record_and_replay

FLAVORS = [(False, False), (True, False), (False, True), (True, True)]
FLAVOR_IDS = ["sync", "async", "sync-streamed", "async-streamed"]
CONVERSATION = "conv_68a0c1f2e4b04a8b9c0d1e2f3a4b5c6d"
CONTAINER = {"id": "container_011CaNRhtVsGiXZx1CgSETLH", "expires_at": "2026-04-24T11:19:38.758845Z"}
#: A code execution turn: the provider-run call, its result and the answer.
CODE_TURN: Any = [
    {
        "type": "server_tool_use",
        "id": "srvtoolu_01Run",
        "name": "bash_code_execution",
        "input": {"command": "ls"},
    },
    {
        "type": "bash_code_execution_tool_result",
        "tool_use_id": "srvtoolu_01Run",
        "content": {
            "type": "bash_code_execution_result",
            "stdout": "a.txt\n",
            "stderr": "",
            "return_code": 0,
        },
    },
    {"type": "text", "text": "One file."},
]
Ask = Callable[[str], list[Any]]


def responses_chain(
    is_async: bool, stream: bool, root: str, *, previous: str | None = None, conversation: Any = None
) -> list[Any]:
    """Two Responses calls, the second continuing the first: by ``previous_response_id`` (the first
    response's id unless ``previous`` names another), or both in ``conversation``."""

    async def create(client: Any, **options: Any) -> Any:
        response = await settle(client.responses.create(model="gpt-5", stream=stream, **options))
        if stream:
            events = [event async for event in response] if is_async else list(response)
            response = next(e.response for e in events if e.type == "response.completed")
        return response

    async def call() -> list[Any]:
        client: Any = (openai.AsyncOpenAI if is_async else openai.OpenAI)(
            base_url=root + "/v1", max_retries=0
        )
        kept = {} if conversation is None else {"conversation": conversation}
        first = await create(client, input="Capital of France?", **kept)
        options = kept or {"previous_response_id": previous or first.id}
        second = await create(client, input="And of Italy?", **options)
        return [(r.id, r.output_text, r.conversation and r.conversation.id) for r in (first, second)]

    return asyncio.run(call())


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
def test_previous_response_id_names_the_neutral_id_a_replay_hands_out(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    is_async: bool,
    stream: bool,
) -> None:
    fake_provider.queue_responses_text("Paris.")
    fake_provider.queue_responses_text("Rome.")
    live, replayed, path = record_and_replay(
        fake_provider, tmp_path, offline, lambda root: responses_chain(is_async, stream, root)
    )
    trace: dict[str, Any] = dict(load_trace(path))
    assert [text for _, text, _ in replayed] == [text for _, text, _ in live] == ["Paris.", "Rome."]
    assert [response_id for response_id, _, _ in replayed] == ["response-1", "response-3"]
    assert trace["steps"][2]["payload"]["params"] == {"previousResponseId": "response-1"}
    assert "resp_" not in str(trace)


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS[:2], ids=FLAVOR_IDS[:2])
def test_a_previous_response_id_of_another_response_diverges_naming_it(
    fake_provider: FakeProvider, diverges_offline: DivergesOffline, is_async: bool, stream: bool
) -> None:
    fake_provider.queue_responses_text("Paris.")
    fake_provider.queue_responses_text("Rome.")
    error = diverges_offline(
        lambda root: responses_chain(is_async, stream, root),
        lambda root: responses_chain(is_async, stream, root, previous="response-3"),
        openai.BadRequestError,
        r"replay diverged at step 2",
    )
    assert (error.path, error.expected, error.actual) == (
        "params.previousResponseId",
        '"response-1"',
        '"response-3"',
    )


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
@pytest.mark.parametrize("form", ["string", "object"])
def test_a_conversation_from_outside_the_run_is_compared_by_its_digest(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    is_async: bool,
    stream: bool,
    form: str,
) -> None:
    conversation: Any = CONVERSATION if form == "string" else {"id": CONVERSATION}
    fake_provider.queue_responses_text("Paris.")
    fake_provider.queue_responses_text("Rome.")
    live, replayed, path = record_and_replay(
        fake_provider,
        tmp_path,
        offline,
        lambda root: responses_chain(is_async, stream, root, conversation=conversation),
    )
    trace: dict[str, Any] = dict(load_trace(path))
    neutral = trace["steps"][0]["payload"]["params"]["conversation"]
    assert neutral.startswith("conversation-outside-")
    assert trace["steps"][1]["payload"]["conversation"] == neutral
    assert [conversation for _, _, conversation in live] == [CONVERSATION] * 2
    assert [(text, conversation) for _, text, conversation in replayed] == [
        ("Paris.", neutral),
        ("Rome.", neutral),
    ]
    assert "conv_" not in str(trace)


def test_another_conversation_diverges_naming_it(
    fake_provider: FakeProvider, diverges_offline: DivergesOffline
) -> None:
    fake_provider.queue_responses_text("Paris.")
    fake_provider.queue_responses_text("Rome.")
    error = diverges_offline(
        lambda root: responses_chain(False, False, root, conversation=CONVERSATION),
        lambda root: responses_chain(False, False, root, conversation="conv_other"),
        openai.BadRequestError,
        r"replay diverged at step 0",
    )
    assert error.path == "params.conversation"


def code_execution(is_async: bool, stream: bool, root: str, container: str | None = None) -> list[Any]:
    """Two Anthropic calls with code execution, the second in the container the first one used."""

    async def create(client: Any, **options: Any) -> Any:
        request = {"model": "claude-sonnet-5", "max_tokens": 256, **options}
        request["tools"] = [{"type": "code_execution_20250825", "name": "code_execution"}]
        if not stream:
            return await settle(client.messages.create(**request))
        manager = client.messages.stream(**request)
        if is_async:
            async with manager as events:
                return await events.get_final_message()
        with manager as events:
            return events.get_final_message()

    async def call() -> list[Any]:
        client: Any = (anthropic.AsyncAnthropic if is_async else anthropic.Anthropic)(
            base_url=root, max_retries=0
        )
        first = await create(client, messages=[{"role": "user", "content": "List the files."}])
        again = [{"role": "user", "content": "Again."}]
        second = await create(client, messages=again, container=container or first.container.id)
        return [(m.container.model_dump(mode="json"), m.content[-1].text) for m in (first, second)]

    return asyncio.run(call())


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
def test_a_container_gets_a_neutral_id_the_next_request_names(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    is_async: bool,
    stream: bool,
) -> None:
    for _ in range(2):
        fake_provider.queue_anthropic_content(CODE_TURN, container=CONTAINER)
    live, replayed, path = record_and_replay(
        fake_provider, tmp_path, offline, lambda root: code_execution(is_async, stream, root)
    )
    trace: dict[str, Any] = dict(load_trace(path))
    neutral = {**CONTAINER, "id": "container-0", "skills": None}
    assert replayed == [(neutral, "One file.")] * 2
    assert [(container["id"], text) for container, text in live] == [(CONTAINER["id"], "One file.")] * 2
    expected = {"id": "container-0", "expiresAt": CONTAINER["expires_at"]}
    assert [trace["steps"][i]["payload"]["container"] for i in (1, 3)] == [expected] * 2
    assert trace["steps"][2]["payload"]["params"]["container"] == "container-0"
    assert "container_" not in str(trace)


def test_another_container_diverges_naming_it(
    fake_provider: FakeProvider, diverges_offline: DivergesOffline
) -> None:
    for _ in range(2):
        fake_provider.queue_anthropic_content(CODE_TURN, container=CONTAINER)
    error = diverges_offline(
        lambda root: code_execution(False, False, root),
        lambda root: code_execution(False, False, root, container="container_011Other"),
        anthropic.BadRequestError,
        r"replay diverged at step 2",
    )
    assert (error.path, error.expected) == ("params.container", '"container-0"')


def test_a_replay_gone_live_refuses_to_send_a_response_id_it_handed_out(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    fake_provider.queue_responses_text("Paris.")
    fake_provider.queue_responses_text("Rome.")
    path = tmp_path / "run.json"
    session = blackbox(mode="record", out=path)
    responses_chain(False, False, fake_provider.base_url)
    session.finish(result="done")
    session = blackbox(mode="replay", cassette=path, on_divergence="record", out=tmp_path / "again.json")

    async def changed() -> None:
        client = openai.AsyncOpenAI(base_url=fake_provider.base_url + "/v1", max_retries=0)
        first = await client.responses.create(model="gpt-5", input="Capital of France?")
        await client.responses.create(model="gpt-5", input="And of Spain?", previous_response_id=first.id)

    with pytest.raises(
        openai.BadRequestError, match=r"previous_response_id response-1 was handed out by the replay"
    ):
        asyncio.run(changed())
    with pytest.raises(BlackboxUnsupportedError, match=r"cannot go live after replaying part of it"):
        session.finish(result="done")


def test_an_unplaced_response_id_is_refused_and_overlap_after_naming_one_is_refused() -> None:
    ids = CallIds()
    ids.states.answered("resp_0123456789abcdef0123")
    with pytest.raises(BlackboxUnsupportedError, match=r"overlapping model calls"):
        ids.states.named("response", "resp_0123456789abcdef0123", "previous_response_id")
    ids.states.place(1)
    assert ids.states.named("response", "resp_0123456789abcdef0123", "previous_response_id") == "response-1"
    with pytest.raises(BlackboxUnsupportedError, match=r"overlapping model calls"):
        ids.states.go_concurrent()
