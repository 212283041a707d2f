"""A response's envelope comes back as it was: OpenAI moderation results (the request's ``moderation``
compared strictly), a Responses text part without ``logprobs``, a Gemini candidate without ``index``.

Each is recorded through the real SDK against the fake provider and replayed offline; what the SDK
hands the agent on the replay must equal what it handed it while recording.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pydantic
import pytest
from google import genai
from google.genai import types

from pytest_blackbox.testing import Envelope, FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests.agents.loop import settle
from tests.engine.conftest import DivergesOffline, record_and_replay

MODEL = "gpt-5"
FLAVORS = [(False, False), (True, False), (False, True), (True, True)]
FLAVOR_IDS = ["sync", "async", "sync-streamed", "async-streamed"]


def moderation_result(flagged: bool) -> dict[str, Any]:
    """One moderation result, as both OpenAI APIs document it."""
    return {
        "categories": {"violence": flagged, "self-harm": False},
        "category_applied_input_types": {"violence": ["text"], "self-harm": ["text"]},
        "category_scores": {"violence": 0.95 if flagged else 0.0001, "self-harm": 0.0004},
        "flagged": flagged,
        "model": "omni-moderation-latest",
        "type": "moderation_result",
    }


#: Chat Completions wraps each side's results in a list; the Responses API sends one result per side.
CHAT_MODERATION = {
    side: {
        "type": "moderation_results",
        "model": "omni-moderation-latest",
        "results": [moderation_result(flagged)],
    }
    for side, flagged in (("input", True), ("output", False))
}
RESPONSES_MODERATION = {"input": moderation_result(True), "output": moderation_result(False)}
REQUESTED = {"model": "omni-moderation-latest"}


def ask_openai(
    api: str, is_async: bool, stream: bool, root: str, moderation: Any = REQUESTED
) -> tuple[str, Any, Any]:
    """One OpenAI call: (the text, the moderation object the SDK handed over, the text part's logprobs)."""

    async def call() -> tuple[str, Any, Any]:
        client: Any = (openai.AsyncOpenAI if is_async else openai.OpenAI)(
            base_url=root + "/v1", max_retries=0
        )
        extra = {"moderation": moderation}
        if api == "chat":
            messages = [{"role": "user", "content": "I want to kill them."}]
            result = await settle(
                client.chat.completions.create(
                    model=MODEL, messages=messages, stream=stream, extra_body=extra
                )
            )
            if not stream:
                return result.choices[0].message.content, result.moderation, None
            chunks = [chunk async for chunk in result] if is_async else list(result)
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            return text, [c.moderation for c in chunks if c.moderation is not None], None
        response = await settle(
            client.responses.create(
                model=MODEL, input="I want to kill them.", stream=stream, extra_body=extra
            )
        )
        if stream:
            events = [event async for event in response] if is_async else list(response)
            response = next(e.response for e in events if e.type == "response.completed")
        return response.output_text, response.moderation, response.output[0].content[0].logprobs

    return asyncio.run(call())


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_moderation_result_is_recorded_and_given_back(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    api: str,
    is_async: bool,
    stream: bool,
) -> None:
    if api == "chat":
        fake_provider.queue_openai_text(
            "I can't help with that.", envelope=Envelope(moderation=CHAT_MODERATION)
        )
    else:
        fake_provider.queue_responses_text(
            "I can't help with that.", envelope=Envelope(moderation=RESPONSES_MODERATION)
        )
    live, replayed, path = record_and_replay(
        fake_provider, tmp_path, offline, lambda root: ask_openai(api, is_async, stream, root)
    )
    expected = CHAT_MODERATION if api == "chat" else RESPONSES_MODERATION
    if stream and api == "chat":  # a streamed Chat answer sends it in a chunk of its own
        assert [m.model_dump() for m in live[1]] == [expected]
    else:
        assert live[1].model_dump() == expected
    assert replayed == live
    steps = load_trace(path)["steps"]
    assert steps[0]["payload"]["params"] == {"moderation": REQUESTED}
    neutral = steps[1]["payload"]["moderation"]["input"]
    assert "categoryScores" in (neutral["results"][0] if api == "chat" else neutral)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_different_moderation_request_diverges(
    fake_provider: FakeProvider, diverges_offline: DivergesOffline, api: str
) -> None:
    fake_provider.queue_openai_text("Paris.") if api == "chat" else fake_provider.queue_responses_text(
        "Paris."
    )
    error = diverges_offline(
        lambda root: ask_openai(api, False, False, root),
        lambda root: ask_openai(api, False, False, root, moderation={"model": "omni-moderation-2024-09-26"}),
        openai.BadRequestError,
        r"\[blackbox\] replay diverged at step 0",
        result="anything",
    )
    assert (error.path, error.expected, error.actual) == (
        "params.moderation.model",
        '"omni-moderation-latest"',
        '"omni-moderation-2024-09-26"',
    )


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
@pytest.mark.parametrize("text_logprobs", [True, False], ids=["logprobs-empty", "logprobs-left-out"])
def test_a_responses_text_part_keeps_its_logprobs_field(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    is_async: bool,
    stream: bool,
    text_logprobs: bool,
) -> None:
    fake_provider.queue_responses_text("Paris.", envelope=Envelope(text_logprobs=text_logprobs))
    live, replayed, path = record_and_replay(
        fake_provider, tmp_path, offline, lambda root: ask_openai("responses", is_async, stream, root)
    )
    assert (live[0], live[2]) == ("Paris.", [] if text_logprobs else None)
    assert replayed == live
    omitted = load_trace(path)["steps"][1]["payload"].get("omitted")
    assert omitted == (None if text_logprobs else ["textLogprobs"])


async def gemini_pieces(root: str, is_async: bool, stream: bool, **request: Any) -> list[Any]:
    """One google-genai call, plain or streamed, sync or async: the responses (chunks) it gave."""
    client = genai.Client(http_options=types.HttpOptions(base_url=root))
    models: Any = client.aio.models if is_async else client.models
    request = {"model": "gemini-2.5-flash", **request}
    if stream:
        chunks = models.generate_content_stream(**request)
        return [c async for c in await chunks] if is_async else list(chunks)
    return [await settle(models.generate_content(**request))]


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
@pytest.mark.parametrize("candidate_index", [True, False], ids=["index-0", "index-left-out"])
def test_a_gemini_candidate_keeps_its_index_field(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    monkeypatch: pytest.MonkeyPatch,
    is_async: bool,
    stream: bool,
    candidate_index: bool,
) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "AIzaSyEnvelopeTestKey0123456789abcdefgh")
    fake_provider.queue_gemini_text("Paris.", envelope=Envelope(candidate_index=candidate_index))

    def ask(root: str) -> list[Any]:
        async def call() -> list[Any]:
            pieces = await gemini_pieces(root, is_async, stream, contents="Capital of France?")
            return [
                (c.text, c.candidates[0].index, "index" in c.candidates[0].model_fields_set) for c in pieces
            ]

        return asyncio.run(call())

    live, replayed, path = record_and_replay(fake_provider, tmp_path, offline, ask)
    assert "".join(text for text, _, _ in live) == "Paris."
    assert {(index, present) for _, index, present in live} == {
        (0, True) if candidate_index else (None, False)
    }
    assert [(index, present) for _, index, present in replayed] == [
        (index, present) for _, index, present in live
    ][-1:] * len(replayed)
    omitted = load_trace(path)["steps"][1]["payload"].get("omitted")
    assert omitted == (None if candidate_index else ["candidateIndex"])


class Company(pydantic.BaseModel):
    company_name: str


class Person(pydantic.BaseModel):
    name: str
    employer: Company | None


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
@pytest.mark.parametrize("text_pieces", [True, False], ids=["text-in-pieces", "text-whole"])
def test_gemini_structured_output_is_parsed_on_the_chunks_it_was_parsed_on(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    monkeypatch: pytest.MonkeyPatch,
    is_async: bool,
    stream: bool,
    text_pieces: bool,
) -> None:
    """google-genai parses each streamed chunk's text alone into ``parsed``: a JSON answer sent whole
    in one chunk (after a thought, as thinking models stream it) is parsed there, one sent in pieces
    nowhere; a replay hands over the same ``parsed``, without recording the thought."""
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "AIzaSyEnvelopeTestKey0123456789abcdefgh")
    bob = Person(name="Bob", employer=Company(company_name="TechCorp"))
    envelope = Envelope(text_pieces=text_pieces)
    fake_provider.queue_gemini_text(bob.model_dump_json(), thinking=True, envelope=envelope)
    config = types.GenerateContentConfig(response_mime_type="application/json", response_schema=Person)

    def ask(root: str) -> list[Any]:
        async def call() -> list[Any]:
            asked = {"contents": "Bob works at TechCorp.", "config": config}
            pieces = await gemini_pieces(root, is_async, stream, **asked)
            return [piece.parsed for piece in pieces if piece.parsed is not None]

        return asyncio.run(call())

    live, replayed, path = record_and_replay(fake_provider, tmp_path, offline, ask)
    assert live == ([] if stream and text_pieces else [bob])
    assert replayed == live
    payload = load_trace(path)["steps"][1]["payload"]
    assert payload.get("omitted") == (["textPieces"] if stream and not text_pieces else None)
    assert "Planning" not in json.dumps(payload)


def ask_any(api: str, is_async: bool, stream: bool, root: str) -> tuple[Any, ...]:
    """One call of any protocol: (the text, the stop facts the SDK hands the agent)."""

    async def call() -> tuple[Any, ...]:
        if api == "anthropic":
            client: Any = (anthropic.AsyncAnthropic if is_async else anthropic.Anthropic)(
                base_url=root, max_retries=0
            )
            request = {
                "model": "claude-sonnet-5",
                "max_tokens": 64,
                "messages": [{"role": "user", "content": "Count."}],
            }
            if stream:
                manager = client.messages.stream(**request)
                if is_async:
                    async with manager as events:
                        message = await events.get_final_message()
                else:
                    with manager as events:
                        message = events.get_final_message()
            else:
                message = await settle(client.messages.create(**request))
            return "".join(b.text for b in message.content), message.stop_reason, message.stop_sequence
        if api == "gemini":
            pieces = await gemini_pieces(root, is_async, stream, contents="Count.")
            text = "".join(c.text or "" for c in pieces)
            return text, pieces[-1].candidates[0].finish_reason
        openai_client: Any = (openai.AsyncOpenAI if is_async else openai.OpenAI)(
            base_url=root + "/v1", max_retries=0
        )
        if api == "chat":
            messages = [{"role": "user", "content": "Count."}]
            result = await settle(
                openai_client.chat.completions.create(model=MODEL, messages=messages, stream=stream)
            )
            if not stream:
                choice = result.choices[0]
                return choice.message.content, choice.finish_reason
            chunks = [chunk async for chunk in result] if is_async else list(result)
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            return text, [
                c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
            ]
        response = await settle(openai_client.responses.create(model=MODEL, input="Count.", stream=stream))
        if stream:
            events = [event async for event in response] if is_async else list(response)
            response = events[-1].response
        return response.output_text, response.status, response.incomplete_details

    return asyncio.run(call())


#: (protocol, its own stop reason, the matched stop sequence, the neutral stop recorded)
STOPS = [
    ("anthropic", "stop_sequence", "\n\n7", "stopSequence"),
    ("anthropic", "model_context_window_exceeded", None, "contextWindow"),
    ("chat", "content_filter", None, "contentFilter"),
    ("responses", "content_filter", None, "contentFilter"),
    ("gemini", "RECITATION", None, "recitation"),
    ("gemini", "PROHIBITED_CONTENT", None, "prohibitedContent"),
    ("gemini", "MALFORMED_FUNCTION_CALL", None, "malformedCall"),
]


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
@pytest.mark.parametrize(("api", "reason", "sequence", "stop"), STOPS, ids=[f"{s[0]}-{s[1]}" for s in STOPS])
def test_every_stop_is_recorded_and_given_back(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    monkeypatch: pytest.MonkeyPatch,
    api: str,
    reason: str,
    sequence: str | None,
    stop: str,
    is_async: bool,
    stream: bool,
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIzaSyEnvelopeTestKey0123456789abcdefgh")
    envelope = Envelope(stop=reason, stop_sequence=sequence)
    queue = {
        "anthropic": fake_provider.queue_anthropic_text,
        "chat": fake_provider.queue_openai_text,
        "responses": fake_provider.queue_responses_text,
        "gemini": fake_provider.queue_gemini_text,
    }[api]
    queue("1, 2, 3, 4, 5, 6", envelope=envelope)
    live, replayed, path = record_and_replay(
        fake_provider, tmp_path, offline, lambda root: ask_any(api, is_async, stream, root)
    )
    assert live[0] == "1, 2, 3, 4, 5, 6"
    assert replayed == live
    output = load_trace(path)["steps"][1]["payload"]
    assert (output["stop"], output.get("stopSequence")) == (stop, sequence)


def token(text: str, logprob: float, *alternatives: tuple[str, float]) -> dict[str, Any]:
    """One token's log probability, as both OpenAI APIs document it."""
    top = [{"token": t, "logprob": p, "bytes": list(t.encode())} for t, p in alternatives]
    return {"token": text, "logprob": logprob, "bytes": list(text.encode()), "top_logprobs": top}


LOGPROBS = [
    token("Par", -0.01, ("Par", -0.01), ("Lon", -4.5)),
    token("is", -0.001, ("is", -0.001)),
    token(".", 0.0),
]


def ask_logprobs(api: str, is_async: bool, stream: bool, root: str) -> tuple[str, Any]:
    """(the text, its token log probabilities as the SDK hands them over, dumped)."""

    async def call() -> tuple[str, Any]:
        client: Any = (openai.AsyncOpenAI if is_async else openai.OpenAI)(
            base_url=root + "/v1", max_retries=0
        )
        if api == "chat":
            messages = [{"role": "user", "content": "Capital of France?"}]
            request = {"model": MODEL, "messages": messages, "logprobs": True, "top_logprobs": 2}
            result = await settle(client.chat.completions.create(**request, stream=stream))
            if not stream:
                choice = result.choices[0]
                return choice.message.content, [t.model_dump() for t in choice.logprobs.content]
            chunks = [chunk async for chunk in result] if is_async else list(result)
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            tokens = [
                t.model_dump()
                for c in chunks
                if c.choices and c.choices[0].logprobs
                for t in c.choices[0].logprobs.content
            ]
            return text, tokens
        request = {
            "model": MODEL,
            "input": "Capital of France?",
            "include": ["message.output_text.logprobs"],
            "top_logprobs": 2,
        }
        response = await settle(client.responses.create(**request, stream=stream))
        if stream:
            events = [event async for event in response] if is_async else list(response)
            response = events[-1].response
        return response.output_text, [t.model_dump() for t in response.output[0].content[0].logprobs]

    return asyncio.run(call())


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_logprobs_are_recorded_and_given_back(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    api: str,
    is_async: bool,
    stream: bool,
) -> None:
    queue = fake_provider.queue_openai_text if api == "chat" else fake_provider.queue_responses_text
    queue("Paris.", envelope=Envelope(logprobs=LOGPROBS))
    live, replayed, path = record_and_replay(
        fake_provider, tmp_path, offline, lambda root: ask_logprobs(api, is_async, stream, root)
    )
    assert live == ("Paris.", LOGPROBS)
    assert replayed == live
    steps = load_trace(path)["steps"]
    assert steps[0]["payload"]["params"]["topLogprobs"] == 2
    assert steps[1]["payload"]["logprobs"][0]["topLogprobs"][1] == {
        "token": "Lon",
        "logprob": -4.5,
        "bytes": [76, 111, 110],
    }


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_different_top_logprobs_request_diverges(
    fake_provider: FakeProvider, diverges_offline: DivergesOffline, api: str
) -> None:
    queue = fake_provider.queue_openai_text if api == "chat" else fake_provider.queue_responses_text
    queue("Paris.", envelope=Envelope(logprobs=LOGPROBS))

    async def ask_for_five(root: str) -> None:
        client = openai.OpenAI(base_url=root + "/v1", max_retries=0)
        if api == "chat":
            messages: Any = [{"role": "user", "content": "Capital of France?"}]
            client.chat.completions.create(model=MODEL, messages=messages, logprobs=True, top_logprobs=5)
        else:
            client.responses.create(model=MODEL, input="Capital of France?", top_logprobs=5)

    error = diverges_offline(
        lambda root: ask_logprobs(api, False, False, root),
        lambda root: asyncio.run(ask_for_five(root)),
        openai.BadRequestError,
        r"\[blackbox\] replay diverged at step 0",
        result="anything",
    )
    assert (error.path, error.expected, error.actual) == ("params.topLogprobs", "2", "5")


def ask_anthropic_calls(is_async: bool, stream: bool, root: str) -> list[Any]:
    """One Anthropic call: each tool call's ``caller`` as the SDK handed it over."""

    async def call() -> list[Any]:
        client: Any = (anthropic.AsyncAnthropic if is_async else anthropic.Anthropic)(
            base_url=root, max_retries=0
        )
        request = {
            "model": "claude-sonnet-5",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "Go."}],
        }
        if stream:
            manager = client.messages.stream(**request)
            if is_async:
                async with manager as events:
                    message = await events.get_final_message()
            else:
                with manager as events:
                    message = events.get_final_message()
        else:
            message = await settle(client.messages.create(**request))
        return [block.model_dump(mode="json").get("caller") for block in message.content]

    return asyncio.run(call())


@pytest.mark.parametrize(("is_async", "stream"), FLAVORS, ids=FLAVOR_IDS)
@pytest.mark.parametrize("direct", [True, False], ids=["caller-direct", "caller-left-out"])
def test_an_anthropic_tool_call_s_default_caller_is_dropped_as_the_original_blackbox_does(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    is_async: bool,
    stream: bool,
    direct: bool,
) -> None:
    caller = {"caller": {"type": "direct"}} if direct else {}
    blocks = [
        {"type": "tool_use", "id": f"toolu_01Call{n}", "name": "lookup", "input": {"n": n}, **caller}
        for n in range(2)
    ]
    fake_provider.queue_anthropic_content(blocks, stop_reason="tool_use")
    live, replayed, path = record_and_replay(
        fake_provider, tmp_path, offline, lambda root: ask_anthropic_calls(is_async, stream, root)
    )
    assert live == [{"type": "direct"} if direct else None] * 2
    assert replayed == [None, None]  # not recorded, so not given back
    payload = load_trace(path)["steps"][1]["payload"]
    assert payload == {
        "type": "tool_calls",
        "calls": [{"toolCallId": f"call-{n}", "toolName": "lookup", "toolInput": {"n": n}} for n in range(2)],
    }
