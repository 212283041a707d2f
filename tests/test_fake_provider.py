"""The bundled fake provider, driven by the real SDKs over 127.0.0.1."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from pytest_blackbox.errors import BlackboxUsageError
from pytest_blackbox.testing.fake_provider import FakeProvider, ScriptedResponse
from tests import QUIET
from tests.conftest import NetworkGuard

USER_MESSAGES: Any = [{"role": "user", "content": "weather in Paris?"}]
DOC = Path(__file__).resolve().parents[1] / "docs" / "fake-provider.md"


def claude(fake: FakeProvider, max_retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="sk-ant-test", base_url=fake.anthropic_base_url, max_retries=max_retries
    )


def gpt(fake: FakeProvider, max_retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=fake.openai_base_url, max_retries=max_retries)


def gemini(fake: FakeProvider) -> genai.Client:
    return genai.Client(
        api_key="AIza-test", http_options=genai_types.HttpOptions(base_url=fake.gemini_base_url)
    )


def test_anthropic_answers_look_like_the_real_api(fake_provider: FakeProvider) -> None:
    fake_provider.queue_anthropic_tool_calls([("get_weather", {"city": "Paris"})], text="Checking.")
    raw = claude(fake_provider).messages.with_raw_response.create(
        model="claude-test", max_tokens=64, messages=USER_MESSAGES
    )
    message = raw.parse()

    assert raw.headers["content-type"] == "application/json"
    assert re.fullmatch(r"req_01[A-Za-z0-9]{22}", raw.headers["request-id"])
    assert re.fullmatch(r"msg_01[A-Za-z0-9]{22}", message.id)
    assert (message.model, message.role, message.stop_reason, message.stop_sequence) == (
        "claude-test",
        "assistant",
        "tool_use",
        None,
    )
    text, tool = message.content
    assert (text.type, text.text) == ("text", "Checking.")  # type: ignore[union-attr]
    assert (tool.type, tool.name, tool.input) == ("tool_use", "get_weather", {"city": "Paris"})  # type: ignore[union-attr]
    assert re.fullmatch(r"toolu_01[A-Za-z0-9]{22}", tool.id)  # type: ignore[union-attr]
    assert message.usage.input_tokens > 0
    assert message.usage.output_tokens > 0
    assert message.usage.cache_read_input_tokens == 0


def test_openai_answers_look_like_the_real_api(fake_provider: FakeProvider) -> None:
    fake_provider.queue_openai_tool_calls([("get_weather", {"city": "Paris"}), ("get_time", {})])
    completion = gpt(fake_provider).chat.completions.create(model="gpt-test", messages=USER_MESSAGES)

    assert re.fullmatch(r"chatcmpl-[A-Za-z0-9]{29}", completion.id)
    assert (completion.object, completion.model, completion.created) == (
        "chat.completion",
        "gpt-test",
        1767225603,
    )
    choice = completion.choices[0]
    assert (choice.finish_reason, choice.message.content, choice.message.refusal) == (
        "tool_calls",
        None,
        None,
    )
    calls = choice.message.tool_calls or []
    assert [(c.function.name, c.function.arguments) for c in calls] == [  # type: ignore[union-attr]
        ("get_weather", '{"city":"Paris"}'),
        ("get_time", "{}"),
    ]
    assert all(re.fullmatch(r"call_[A-Za-z0-9]{24}", call.id) for call in calls)
    assert completion.usage is not None
    assert (
        completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
    )


def test_text_answers_end_the_turn(fake_provider: FakeProvider) -> None:
    fake_provider.queue_anthropic_text("Sunny.")
    fake_provider.queue_openai_text("Rainy.")
    message = claude(fake_provider).messages.create(
        model="claude-test", max_tokens=64, messages=USER_MESSAGES
    )
    completion = gpt(fake_provider).chat.completions.create(model="gpt-test", messages=USER_MESSAGES)
    assert (message.content[0].text, message.stop_reason) == ("Sunny.", "end_turn")  # type: ignore[union-attr]
    assert (completion.choices[0].message.content, completion.choices[0].finish_reason) == ("Rainy.", "stop")
    assert fake_provider.pending == 0


def test_the_same_script_gives_the_same_bytes() -> None:
    def run() -> list[bytes]:
        with FakeProvider() as fake:
            fake.queue_anthropic_tool_calls([("f", {"x": 1})], text="t")
            fake.queue_openai_tool_calls([("f", {"x": 1})], text="t")
            with httpx2.Client() as client:
                return [
                    client.post(fake.base_url + path, json={"model": "m"}).content
                    for path in ("/v1/messages", "/v1/chat/completions")
                ]

    first, second = run(), run()
    assert first == second
    assert b'"id":"msg_01' in first[0]


def test_requests_are_recorded_as_received(fake_provider: FakeProvider) -> None:
    fake_provider.queue_anthropic_text("ok")
    claude(fake_provider).messages.create(model="claude-test", max_tokens=64, messages=USER_MESSAGES)

    [request] = fake_provider.requests
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.json == {"max_tokens": 64, "messages": USER_MESSAGES, "model": "claude-test"}
    assert request.headers["authorization"] == "Bearer sk-ant-test"
    assert request.headers["x-stainless-retry-count"] == "0"


def test_queued_errors_use_the_providers_error_shapes(fake_provider: FakeProvider) -> None:
    fake_provider.queue_status(429)
    fake_provider.queue_status(500)
    with pytest.raises(anthropic.RateLimitError) as limited:
        claude(fake_provider).messages.create(model="claude-test", max_tokens=64, messages=USER_MESSAGES)
    with pytest.raises(openai.InternalServerError) as failed:
        gpt(fake_provider).chat.completions.create(model="gpt-test", messages=USER_MESSAGES)

    assert limited.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "scripted error"},
    }
    assert failed.value.body == {
        "message": "scripted error",
        "type": "server_error",
        "param": None,
        "code": None,
    }
    assert len(fake_provider.requests) == 2


def test_a_retryable_error_then_success_is_retried_by_the_sdk(fake_provider: FakeProvider) -> None:
    fake_provider.queue_status(529, headers=[("retry-after-ms", "1")])
    fake_provider.queue_anthropic_text("recovered")
    message = claude(fake_provider, max_retries=1).messages.create(
        model="claude-test", max_tokens=64, messages=USER_MESSAGES
    )
    assert message.content[0].text == "recovered"  # type: ignore[union-attr]
    assert [r.headers["x-stainless-retry-count"] for r in fake_provider.requests] == ["0", "1"]


def test_an_unscripted_call_fails_at_once(fake_provider: FakeProvider) -> None:
    with pytest.raises(anthropic.InternalServerError) as failed:
        claude(fake_provider, max_retries=2).messages.create(
            model="claude-test", max_tokens=64, messages=USER_MESSAGES
        )
    assert failed.value.body == {
        "type": "error",
        "error": {"type": "api_error", "message": "fake provider: nothing scripted for POST /v1/messages"},
    }
    assert len(fake_provider.requests) == 1


def test_an_answer_scripted_for_the_other_provider_is_refused(fake_provider: FakeProvider) -> None:
    fake_provider.queue_anthropic_text("for claude")
    with pytest.raises(openai.InternalServerError) as failed:
        gpt(fake_provider, max_retries=2).chat.completions.create(model="gpt-test", messages=USER_MESSAGES)
    assert failed.value.body == {
        "message": "fake provider: the next scripted answer is for /v1/messages, not /v1/chat/completions",
        "type": "server_error",
        "param": None,
        "code": None,
    }
    assert (len(fake_provider.requests), fake_provider.pending) == (1, 0)


def test_a_responder_answers_what_is_not_queued(fake_provider: FakeProvider) -> None:
    def respond(path: str, body: Any) -> tuple[int, Any]:
        return 202, {"path": path, "echo": body}

    fake_provider.queue(ScriptedResponse(200, b"queued first", (("content-type", "text/plain"),)))
    fake_provider.respond_with(respond)
    with httpx2.Client(base_url=fake_provider.base_url) as client:
        queued = client.post("/anything", json={"n": 1})
        responded = client.post("/anything/else?q=1", json={"n": 2})

    assert (queued.status_code, queued.headers["content-type"], queued.content) == (
        200,
        "text/plain",
        b"queued first",
    )
    assert (responded.status_code, responded.json()) == (202, {"path": "/anything/else", "echo": {"n": 2}})


@pytest.mark.parametrize("accepts_gzip", [True, False], ids=["accepts-gzip", "identity-only"])
def test_gzip_is_sent_only_when_asked_for_and_accepted(
    accepts_gzip: bool, fake_provider: FakeProvider
) -> None:
    fake_provider.queue_openai_text("zipped", gzip=True)
    encoding = "gzip, deflate" if accepts_gzip else "identity"
    with (
        httpx2.Client() as client,
        client.stream(
            "POST",
            fake_provider.openai_base_url + "/chat/completions",
            json={"model": "m"},
            headers={"accept-encoding": encoding},
        ) as response,
    ):
        raw = b"".join(response.iter_raw())

    assert (response.headers.get("content-encoding") == "gzip") is accepts_gzip
    body = json.loads(gzip.decompress(raw) if accepts_gzip else raw)
    assert body["choices"][0]["message"]["content"] == "zipped"


def test_anthropic_streams_are_served_as_server_sent_events(fake_provider: FakeProvider) -> None:
    fake_provider.queue_anthropic_tool_calls([("get_weather", {"city": "Paris"})], text="Hello")
    with claude(fake_provider).messages.stream(
        model="claude-test", max_tokens=64, messages=USER_MESSAGES
    ) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()

    assert pieces == ["He", "llo"]
    assert final.stop_reason == "tool_use"
    assert [block.type for block in final.content] == ["text", "tool_use"]
    assert final.content[1].input == {"city": "Paris"}  # type: ignore[union-attr]
    assert final.usage.output_tokens > 0


def test_openai_streams_are_served_as_chunks(fake_provider: FakeProvider) -> None:
    fake_provider.queue_openai_tool_calls([("get_weather", {"city": "Paris"})], text="Hi")
    chunks = list(
        gpt(fake_provider).chat.completions.create(
            model="gpt-test",
            messages=USER_MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
    )

    assert {chunk.object for chunk in chunks} == {"chat.completion.chunk"}
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hi"
    arguments = "".join(
        call.function.arguments or ""  # type: ignore[union-attr]
        for c in chunks
        if c.choices
        for call in c.choices[0].delta.tool_calls or []
    )
    assert arguments == '{"city":"Paris"}'
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None


@pytest.mark.parametrize("call_ids", [False, True], ids=["gemini-2", "gemini-3"])
def test_gemini_answers_look_like_the_real_api(fake_provider: FakeProvider, call_ids: bool) -> None:
    calls = [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]
    fake_provider.queue_gemini_tool_calls(calls, text="Checking.", call_ids=call_ids, thinking=call_ids)
    client = gemini(fake_provider)  # held: a google-genai client closes its connections when collected
    response = client.models.generate_content(model="gemini-test", contents="weather in Paris?")

    assert response.text == "Checking."
    assert [(c.name, c.args) for c in response.function_calls or []] == [(n, a) for n, a in calls]
    assert all((c.id is not None) is call_ids for c in response.function_calls or [])
    candidate = (response.candidates or [])[0]
    assert candidate.finish_reason == genai_types.FinishReason.STOP
    assert candidate.content is not None and candidate.content.parts is not None
    parts = candidate.content.parts
    kinds = ["thought" if p.thought else "call" if p.function_call else "text" for p in parts]
    assert kinds == ["thought"] * call_ids + ["text", "call", "call"]
    assert [p.thought_signature is not None for p in parts if p.function_call] == [call_ids, False]
    assert response.model_version == "gemini-test"
    assert response.usage_metadata is not None and response.usage_metadata.total_token_count
    assert fake_provider.requests[0].path == "/v1/models/gemini-test:generateContent"


def test_gemini_streams_are_served_as_server_sent_chunks(fake_provider: FakeProvider) -> None:
    fake_provider.queue_gemini_tool_calls([("get_weather", {"city": "Paris"})], text="Hello")
    client = gemini(fake_provider)
    chunks = list(client.models.generate_content_stream(model="gemini-test", contents="hi"))

    assert [chunk.text for chunk in chunks] == ["He", "llo", None]
    assert [c.name for c in chunks[-1].function_calls or []] == ["get_weather"]
    reasons = [(chunk.candidates or [])[0].finish_reason for chunk in chunks]
    assert reasons == [None, None, genai_types.FinishReason.STOP]
    assert fake_provider.requests[0].path == "/v1/models/gemini-test:streamGenerateContent"


def test_gemini_errors_use_the_gemini_error_shape(fake_provider: FakeProvider) -> None:
    client = gemini(fake_provider)
    fake_provider.queue_status(429)
    with pytest.raises(genai_errors.ClientError) as limited:
        client.models.generate_content(model="gemini-test", contents="hi")
    fake_provider.queue_openai_text("for gpt")
    with pytest.raises(genai_errors.ServerError) as misrouted:
        client.models.generate_content(model="gemini-test", contents="hi")

    assert (limited.value.code, limited.value.status, limited.value.message) == (
        429,
        "RESOURCE_EXHAUSTED",
        "scripted error",
    )
    assert misrouted.value.message == (
        "fake provider: the next scripted answer is for /chat/completions, "
        "not /v1/models/gemini-test:generateContent"
    )
    assert len(fake_provider.requests) == 2


def test_a_stopped_server_refuses_connections() -> None:
    fake = FakeProvider()
    with fake:
        url = fake.base_url
        fake.queue(ScriptedResponse(200, {"up": True}))
        assert httpx2.get(url + "/ping").json() == {"up": True}
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(url + "/ping")
    with pytest.raises(BlackboxUsageError, match=r"^the fake provider is not running; call start"):
        fake.base_url  # noqa: B018


# -- the user documentation ------------------------------------------------------------------------


def documented_files() -> dict[str, str]:
    """The files of docs/fake-provider.md's complete OpenAI example: each Python block of its section
    opening with ``# <name>`` (tests/test_docs.py runs the page's other recipe)."""
    text = DOC.read_text(encoding="utf-8")
    text = text[text.index("## OpenAI\n") : text.index("\n## ", text.index("## OpenAI\n") + 1)]
    return dict(re.findall(r"```python\n# (\w+\.py)\n(.*?)```", text, re.DOTALL))


def test_the_documented_openai_example_records_then_replays_offline(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch, network_guard: NetworkGuard
) -> None:
    files = documented_files()
    assert sorted(files) == ["conftest.py", "test_agent.py"]
    for name, source in files.items():
        (pytester.path / name).write_text(source, encoding="utf-8")
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    recorded = pytester.runpytest(*QUIET, "--record-mode=once")
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines(["blackbox: 0 replayed, 1 recorded, *"])
    attempts = network_guard.block()
    replayed = pytester.runpytest(*QUIET)
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["blackbox: 1 replayed, 0 recorded, *"])
    assert attempts == []


HELD_FIRST_ANSWER = {
    "anthropic": (
        "/v1/messages",
        {
            "messages": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
            ]
        },
    ),
    "openai": (
        "/v1/chat/completions",
        {
            "messages": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            ]
        },
    ),
    "responses": (
        "/v1/responses",
        {
            "input": [
                {"role": "user", "content": "go"},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}'},
                {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            ]
        },
    ),
    "gemini": (
        "/v1beta/models/gemini-2.5-flash:generateContent",
        {
            "contents": [
                {"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"r": "ok"}}}]},
            ]
        },
    ),
}


@pytest.mark.parametrize("api", list(HELD_FIRST_ANSWER))
def test_an_answer_the_conversation_already_holds_is_skipped(fake_provider: FakeProvider, api: str) -> None:
    """A fresh fake asked for the second answer of a conversation (the first came from a cassette)."""
    queue = {
        "anthropic": (fake_provider.queue_anthropic_tool_calls, fake_provider.queue_anthropic_text),
        "openai": (fake_provider.queue_openai_tool_calls, fake_provider.queue_openai_text),
        "responses": (fake_provider.queue_responses_tool_calls, fake_provider.queue_responses_text),
        "gemini": (fake_provider.queue_gemini_tool_calls, fake_provider.queue_gemini_text),
    }[api]
    queue[0]([("f", {"a": 1})])
    queue[1]("done")
    path, body = HELD_FIRST_ANSWER[api]
    answer = httpx2.post(fake_provider.base_url + path, json=body).text
    assert "done" in answer and fake_provider.pending == 0
    queue[1]("again")  # a conversation that holds answers this server served skips nothing
    assert "again" in httpx2.post(fake_provider.base_url + path, json=body).text
