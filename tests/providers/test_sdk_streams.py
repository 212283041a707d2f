"""Synthesized streams and Responses bodies through the real SDKs' stream helpers.

Every replayed answer is served by an Interceptor ``Reply`` (no socket is opened), to clients with
``_strict_response_validation=True``; what the SDK assembles must normalize back to the recorded
output.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import anthropic as anthropic_sdk
import openai
import pytest
from pydantic import BaseModel

from pytest_blackbox.interception import Interceptor, ModelRequest, Reply
from pytest_blackbox.providers import ROUTES, SSE_HEADERS, CallIds, anthropic, openai_chat, openai_responses
from pytest_blackbox.providers import provider_for_path as provider_of

#: Nothing listens here: a request that escaped interception fails instead of reaching anything.
CLOSED = "http://127.0.0.1:9"
USER: Any = [{"role": "user", "content": "What is the weather in Paris?"}]

TEXT = {"type": "final_answer", "text": "It is sunny in Paris today, 21 degrees."}
TOOLS = {
    "type": "tool_calls",
    "calls": [
        {"toolCallId": "call-0", "toolName": "weather", "toolInput": {"city": "Paris"}},
        {"toolCallId": "call-1", "toolName": "weather", "toolInput": {"city": "Lyon, France"}},
    ],
    "text": "Let me check both cities.",
}
REFUSAL = {"type": "final_answer", "text": "I can't help with that request.", "stop": "refusal"}
LENGTH = {"type": "final_answer", "text": "It is sunny in", "stop": "length"}
OUTPUTS = {"text": TEXT, "tools": TOOLS, "refusal": REFUSAL}
outputs = pytest.mark.parametrize("output", OUTPUTS.values(), ids=list(OUTPUTS))


class Weather(BaseModel):
    city: str


@contextmanager
def replaying(output: dict[str, Any]) -> Iterator[list[dict[str, Any]]]:
    """Answer every model call with ``output``, as a replay does; yields the request bodies seen."""
    seen: list[dict[str, Any]] = []

    def on_model(request: ModelRequest) -> Reply:
        body = json.loads(request.body)
        seen.append(body)
        provider = provider_of(urlsplit(request.url).path)
        assert provider is not None
        where: dict[str, Any] = {
            "output_index": 7,
            "model": body.get("model"),
            "timestamp": 1_767_225_600_000,
        }
        if provider.is_stream_request(body):
            events = provider.synthesize_stream(output, **where, request_body=body)
            return Reply(200, b"".join(events), list(SSE_HEADERS))
        return Reply(200, json.dumps(provider.synthesize_response(output, **where)).encode())

    with Interceptor(on_model, routes=ROUTES):
        yield seen


def claude() -> anthropic_sdk.Anthropic:
    return anthropic_sdk.Anthropic(
        api_key="k", base_url=CLOSED, max_retries=0, _strict_response_validation=True
    )


def async_claude() -> anthropic_sdk.AsyncAnthropic:
    return anthropic_sdk.AsyncAnthropic(
        api_key="k", base_url=CLOSED, max_retries=0, _strict_response_validation=True
    )


def gpt() -> openai.OpenAI:
    return openai.OpenAI(
        api_key="k", base_url=CLOSED + "/v1", max_retries=0, _strict_response_validation=True
    )


def async_gpt() -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key="k", base_url=CLOSED + "/v1", max_retries=0, _strict_response_validation=True
    )


def dumped(model: BaseModel) -> Any:
    return json.loads(model.model_dump_json())


# -- Anthropic ---------------------------------------------------------------------------------

ANTHROPIC_TOOL_EVENTS = [
    "message_start",
    *["content_block_start", "content_block_delta", "content_block_delta", "content_block_stop"],
    *["content_block_start", "content_block_delta", "content_block_stop"],
    *["content_block_start", "content_block_delta", "content_block_delta", "content_block_stop"],
    "message_delta",
    "message_stop",
]


def test_anthropic_raw_stream_yields_every_event_but_ping() -> None:
    with replaying(TOOLS) as seen:
        events = list(claude().messages.create(model="claude-x", max_tokens=64, messages=USER, stream=True))
    assert [event.type for event in events] == ANTHROPIC_TOOL_EVENTS
    assert seen[0]["stream"] is True


async def test_anthropic_raw_stream_async() -> None:
    with replaying(TOOLS):
        stream = await async_claude().messages.create(
            model="claude-x", max_tokens=64, messages=USER, stream=True
        )
        events = [event async for event in stream]
    assert [event.type for event in events] == ANTHROPIC_TOOL_EVENTS


@outputs
def test_anthropic_stream_helper_assembles_the_recorded_turn(output: dict[str, Any]) -> None:
    with (
        replaying(output),
        claude().messages.stream(model="claude-x", max_tokens=64, messages=USER) as stream,
    ):
        text = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(text) == output["text"]
    assert all(len(piece) <= 16 for piece in text)
    assert anthropic.normalize_response(dumped(final), CallIds()) == output
    assert (final.id, final.model, final.usage.output_tokens) == ("blackbox-replay-7", "claude-x", 0)


@outputs
async def test_anthropic_stream_helper_async(output: dict[str, Any]) -> None:
    with replaying(output):
        async with async_claude().messages.stream(model="claude-x", max_tokens=64, messages=USER) as stream:
            text = [piece async for piece in stream.text_stream]
            final = await stream.get_final_message()
    assert "".join(text) == output["text"]
    assert anthropic.normalize_response(dumped(final), CallIds()) == output


def test_anthropic_beta_stream_helper() -> None:
    with (
        replaying(TOOLS),
        claude().beta.messages.stream(model="claude-x", max_tokens=64, messages=USER) as stream,
    ):
        final = stream.get_final_message()
    assert anthropic.normalize_response(dumped(final), CallIds()) == TOOLS
    assert final.stop_reason == "tool_use"


def test_anthropic_length_stop_streams_max_tokens() -> None:
    with replaying(LENGTH), claude().messages.stream(model="claude-x", max_tokens=4, messages=USER) as stream:
        final = stream.get_final_message()
    assert (final.stop_reason, stream.get_final_text()) == ("max_tokens", "It is sunny in")


# -- OpenAI Chat -------------------------------------------------------------------------------


@pytest.mark.parametrize("include_usage", [False, True], ids=["no-usage", "include-usage"])
def test_chat_raw_stream_with_and_without_the_usage_chunk(include_usage: bool) -> None:
    with replaying(TEXT):
        chunks = list(
            gpt().chat.completions.create(
                model="gpt-x", messages=USER, stream=True, stream_options={"include_usage": include_usage}
            )
        )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == TEXT["text"]
    assert len(chunks) == 1 + 3 + 1 + include_usage
    assert (chunks[-1].choices == [], chunks[-1].usage is not None) == (include_usage, include_usage)
    assert {chunk.id for chunk in chunks} == {"blackbox-replay-7"}


async def test_chat_raw_stream_async() -> None:
    with replaying(TOOLS):
        stream = await async_gpt().chat.completions.create(model="gpt-x", messages=USER, stream=True)
        chunks = [chunk async for chunk in stream]
    assert [chunk.choices[0].finish_reason for chunk in chunks][-1] == "tool_calls"


STRICT_TOOLS = [openai.pydantic_function_tool(Weather, name="weather")]


@outputs
def test_chat_stream_helper_assembles_the_recorded_turn(output: dict[str, Any]) -> None:
    with (
        replaying(output),
        gpt().chat.completions.stream(model="gpt-x", messages=USER, tools=STRICT_TOOLS) as stream,
    ):
        final = stream.get_final_completion()
    assert openai_chat.normalize_response(dumped(final), CallIds()) == output
    if output is TOOLS:
        calls = final.choices[0].message.tool_calls or []
        assert [call.function.parsed_arguments for call in calls] == [
            Weather(city="Paris"),
            Weather(city="Lyon, France"),
        ]


@outputs
async def test_chat_stream_helper_async(output: dict[str, Any]) -> None:
    with replaying(output):
        async with async_gpt().chat.completions.stream(
            model="gpt-x", messages=USER, tools=STRICT_TOOLS
        ) as stream:
            final = await stream.get_final_completion()
    assert openai_chat.normalize_response(dumped(final), CallIds()) == output


def test_chat_stream_helper_raises_on_a_length_stop_as_it_does_live() -> None:
    with (
        replaying(LENGTH),
        gpt().chat.completions.stream(model="gpt-x", messages=USER) as stream,
        pytest.raises(openai.LengthFinishReasonError),
    ):
        stream.get_final_completion()


# -- OpenAI Responses --------------------------------------------------------------------------

RESPONSES_TOOL_EVENTS = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    *["response.output_item.added", "response.function_call_arguments.delta"],
    *["response.function_call_arguments.done", "response.output_item.done"],
    *["response.output_item.added", "response.function_call_arguments.delta"],
    *["response.function_call_arguments.delta", "response.function_call_arguments.done"],
    "response.output_item.done",
    "response.completed",
]


@outputs
def test_responses_create_returns_the_recorded_turn(output: dict[str, Any]) -> None:
    with replaying(output):
        response = gpt().responses.create(model="gpt-x", input="weather?")
    assert response.output_text == ("" if output is REFUSAL else output["text"])
    assert openai_responses.normalize_response(dumped(response), CallIds()) == output


async def test_responses_create_async() -> None:
    with replaying(TOOLS):
        response = await async_gpt().responses.create(model="gpt-x", input="weather?")
    assert openai_responses.normalize_response(dumped(response), CallIds()) == TOOLS


def test_responses_raw_stream_numbers_every_event() -> None:
    with replaying(TOOLS):
        events = list(gpt().responses.create(model="gpt-x", input="weather?", stream=True))
    assert [event.type for event in events] == RESPONSES_TOOL_EVENTS
    assert [event.sequence_number for event in events] == list(range(len(events)))


async def test_responses_raw_stream_async() -> None:
    with replaying(TOOLS):
        stream = await async_gpt().responses.create(model="gpt-x", input="weather?", stream=True)
        events = [event async for event in stream]
    assert [event.type for event in events] == RESPONSES_TOOL_EVENTS


@outputs
def test_responses_stream_helper_assembles_the_recorded_turn(output: dict[str, Any]) -> None:
    with replaying(output), gpt().responses.stream(model="gpt-x", input="weather?") as stream:
        final = stream.get_final_response()
    assert openai_responses.normalize_response(dumped(final), CallIds()) == output
    assert final.id == "response-7"


@outputs
async def test_responses_stream_helper_async(output: dict[str, Any]) -> None:
    with replaying(output):
        async with async_gpt().responses.stream(model="gpt-x", input="weather?") as stream:
            final = await stream.get_final_response()
    assert openai_responses.normalize_response(dumped(final), CallIds()) == output


def test_responses_stream_helper_raises_on_a_length_stop_as_it_does_live() -> None:
    with (
        replaying(LENGTH),
        gpt().responses.stream(model="gpt-x", input="weather?") as stream,
        pytest.raises(RuntimeError, match=r"Didn't receive a `response\.completed` event\."),
    ):
        stream.get_final_response()


def test_responses_incomplete_create_reports_max_output_tokens() -> None:
    with replaying(LENGTH):
        response = gpt().responses.create(model="gpt-x", input="weather?", max_output_tokens=16)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert openai_responses.normalize_response(dumped(response), CallIds()) == LENGTH


def test_responses_parse_and_stream_parse_structured_output() -> None:
    answer = {"type": "final_answer", "text": '{"city":"Paris"}'}
    with replaying(answer):
        parsed = gpt().responses.parse(model="gpt-x", input="where?", text_format=Weather)
        with gpt().responses.stream(model="gpt-x", input="where?", text_format=Weather) as stream:
            streamed = stream.get_final_response()
    assert parsed.output_parsed == Weather(city="Paris")
    assert streamed.output_parsed == Weather(city="Paris")


def test_responses_parse_parses_strict_function_arguments() -> None:
    tools = [openai.pydantic_function_tool(Weather, name="weather")]
    with replaying(TOOLS):
        parsed = gpt().responses.parse(model="gpt-x", input="weather?", tools=tools)
    calls = [item for item in parsed.output if item.type == "function_call"]
    assert [call.parsed_arguments for call in calls] == [Weather(city="Paris"), Weather(city="Lyon, France")]
