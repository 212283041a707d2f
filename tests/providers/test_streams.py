"""Streams at the provider level: SSE reading, collect_stream and synthesize_stream for Anthropic and
OpenAI Chat (the Responses API has its own test module)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_blackbox import providers
from pytest_blackbox.engine.wire import WireCall
from pytest_blackbox.errors import BlackboxUnsupportedError
from pytest_blackbox.interception import UpstreamResponse
from pytest_blackbox.providers import SSE_HEADERS, CallIds, anthropic, openai_chat
from pytest_blackbox.providers.common import json_copy
from pytest_blackbox.providers.sse import SseEvent, StreamCutShort, encode_event, parse_events, pieces
from pytest_blackbox.trace.canonical import pretty_json

from .outputs import argument_inputs, neutral_outputs, object_inputs

TOOL_OUTPUT = {
    "type": "tool_calls",
    "calls": [{"toolCallId": "call-0", "toolName": "weather", "toolInput": {"city": "Paris"}}],
    "text": "Checking the weather.",
}


def refusal_message(call: Any) -> str:
    with pytest.raises(BlackboxUnsupportedError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message
    return message


def sse(*events: tuple[str | None, Any]) -> bytes:
    return b"".join(encode_event(name, data) for name, data in events)


def decoded(events: list[bytes]) -> list[tuple[str | None, Any]]:
    """Each event item as (event name, parsed data); every item is exactly one event."""
    result = []
    for item in events:
        assert item.endswith(b"\n\n")
        [event] = parse_events(item)
        result.append((event.event, event.data if event.data == "[DONE]" else json.loads(event.data)))
    return result


# -- SSE ---------------------------------------------------------------------------------------


def test_parse_events_follows_the_sse_rules_the_sdks_follow() -> None:
    body = (
        b": a comment\r\n"
        b'event: one\r\ndata: {"a":1}\r\n\r\n'
        b"data: first\rdata:second\r\r"
        b"id: 7\nretry: 10\nevent:  spaced\ndata\n\n"
        b"\n\n"
        b'event: cut\ndata: {"never":'
    )
    assert parse_events(body) == [
        SseEvent("one", '{"a":1}'),
        SseEvent(None, "first\nsecond"),
        SseEvent(" spaced", ""),
    ]


def test_an_event_without_its_blank_line_is_dropped() -> None:
    assert parse_events(b"event: ping\ndata: {}\n") == []
    assert parse_events(b"event: ping\ndata: {}\n\n") == [SseEvent("ping", "{}")]


def test_encode_event_writes_one_line_of_compact_json() -> None:
    data = {"text": "a\nb\r\u2028é", "n": 1.0, "none": None}
    assert (
        encode_event("x", data) == 'event: x\ndata: {"text":"a\\nb\\r\u2028é","n":1,"none":null}\n\n'.encode()
    )
    assert encode_event(None, "[DONE]") == b"data: [DONE]\n\n"


def test_pieces_are_sixteen_characters() -> None:
    assert pieces("") == []
    assert pieces("x" * 16) == ["x" * 16]
    assert pieces("0123456789abcdefé") == ["0123456789abcdef", "é"]


def test_sse_headers() -> None:
    assert SSE_HEADERS == (("content-type", "text/event-stream"), ("cache-control", "no-cache"))


def test_a_body_that_is_not_utf8_is_refused() -> None:
    message = refusal_message(lambda: anthropic.collect_stream(b"event: x\ndata: \xff\n\n"))
    assert message == (
        "the streamed response is not UTF-8 text; the call did not complete, so it is not recorded"
    )


# -- Anthropic: synthesized streams ------------------------------------------------------------

ANTHROPIC_USAGE = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cache_creation_input_tokens": None,
    "cache_read_input_tokens": None,
    "cache_creation": None,
    "server_tool_use": None,
    "service_tier": None,
    "inference_geo": None,
    "output_tokens_details": None,
}


def test_anthropic_stream_has_the_exact_event_sequence() -> None:
    events = anthropic.synthesize_stream(
        TOOL_OUTPUT, output_index=3, model="claude-x", timestamp=5, request_body={"stream": True}
    )
    start: dict[str, Any] = {
        "id": "blackbox-replay-3",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "stop_details": None,
        "container": None,
        "diagnostics": None,
        "usage": ANTHROPIC_USAGE,
    }
    tool_block = {
        "type": "tool_use",
        "id": "call-0",
        "name": "weather",
        "input": {},
    }
    assert decoded(events) == [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": "", "citations": None},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Checking the wea"},
            },
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ther."}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": tool_block}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"city":"Paris"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None, "stop_details": None},
                "usage": {"output_tokens": 0},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    assert events[0].startswith(b'event: message_start\ndata: {"type":"message_start","message":{"id":')


def test_anthropic_stream_splits_long_input_json_into_pieces() -> None:
    output = {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-4", "toolName": "f", "toolInput": {"query": "a longer query"}}],
        "stop": "length",
    }
    events = decoded(anthropic.synthesize_stream(output, output_index=1, model=None, timestamp=0))
    partial = [data["delta"]["partial_json"] for _, data in events if data["type"] == "content_block_delta"]
    assert partial == ['{"query":"a long', 'er query"}']
    assert events[-2][1]["delta"]["stop_reason"] == "max_tokens"
    assert events[0][1]["message"]["model"] == "unknown"


def test_an_empty_final_answer_streams_no_content_block() -> None:
    events = decoded(
        anthropic.synthesize_stream(
            {"type": "final_answer", "text": ""}, output_index=0, model="m", timestamp=0
        )
    )
    assert [name for name, _ in events] == ["message_start", "ping", "message_delta", "message_stop"]
    assert events[2][1]["delta"]["stop_reason"] == "end_turn"


@given(neutral_outputs(object_inputs), st.integers(0, 1000))
def test_an_anthropic_stream_collects_back_to_the_recorded_output(output: dict[str, Any], index: int) -> None:
    events = anthropic.synthesize_stream(output, output_index=index, model="m", timestamp=0)
    collected = anthropic.collect_stream(b"".join(events))
    assert anthropic.normalize_response(collected, CallIds()) == output
    assert pretty_json(anthropic.normalize_response(collected, CallIds())) == pretty_json(output)


@given(neutral_outputs(object_inputs))
def test_an_anthropic_stream_collects_to_the_synthesized_message(output: dict[str, Any]) -> None:
    events = anthropic.synthesize_stream(output, output_index=2, model="m", timestamp=0)
    body = anthropic.synthesize_response(output, output_index=2, model="m", timestamp=0)
    # Compared as JavaScript reads JSON: the input's JSON text writes an unsafe integer's digits.
    assert json_copy(anthropic.collect_stream(b"".join(events))) == json_copy(body)


# -- Anthropic: collecting a live stream -------------------------------------------------------


def live_event(data: dict[str, Any]) -> bytes:
    """An event as the API writes it: spaces after separators, CRLF line ends."""
    return f"event: {data['type']}\r\ndata: {json.dumps(data)}\r\n\r\n".encode()


def block_delta(index: int, **delta: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


LIVE_EVENTS: list[dict[str, Any]] = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_01ABC",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 1},
        },
    },
    {"type": "ping"},
    {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    },
    block_delta(0, type="thinking_delta", thinking="hmm"),
    block_delta(0, type="signature_delta", signature="c2ln"),
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    block_delta(1, type="text_delta", text="Let me "),
    block_delta(1, type="text_delta", text="check."),
    {"type": "content_block_stop", "index": 1},
    {
        "type": "content_block_start",
        "index": 2,
        "content_block": {"type": "tool_use", "id": "toolu_01XYZ", "name": "weather", "input": {}},
    },
    block_delta(2, type="input_json_delta", partial_json=""),
    block_delta(2, type="input_json_delta", partial_json='{"city": "Pa'),
    block_delta(2, type="input_json_delta", partial_json='ris"}'),
    {"type": "content_block_stop", "index": 2},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 42},
    },
    {"type": "message_stop"},
]
LIVE_ANTHROPIC = b"".join(live_event(data) for data in LIVE_EVENTS)


def test_a_live_anthropic_stream_collects_to_its_message() -> None:
    assert anthropic.collect_stream(LIVE_ANTHROPIC) == {
        "id": "msg_01ABC",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "c2ln"},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_01XYZ", "name": "weather", "input": {"city": "Paris"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 42},
    }


def test_a_live_anthropic_stream_normalizes_like_the_plain_response() -> None:
    ids = CallIds()
    assert anthropic.normalize_response(anthropic.collect_stream(LIVE_ANTHROPIC), ids) == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "weather", "toolInput": {"city": "Paris"}}],
        "text": "Let me check.",
    }
    assert ids.get("toolu_01XYZ") == "call-0"


def test_a_tool_use_without_input_deltas_keeps_its_start_input() -> None:
    body = sse(
        ("message_start", {"type": "message_start", "message": {"id": "m", "content": []}}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
            },
        ),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}},
        ),
        ("message_stop", {"type": "message_stop"}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
    )
    assert anthropic.collect_stream(body) == {
        "id": "m",
        "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        "stop_reason": "tool_use",
        "usage": {"output_tokens": 3},
    }


def test_citations_deltas_are_collected_onto_their_text_block() -> None:
    body = sse(
        ("message_start", {"type": "message_start", "message": {"id": "m", "content": []}}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "citations_delta", "citation": {"type": "x"}},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    )
    collected = anthropic.collect_stream(body)
    assert collected["content"] == [{"type": "text", "text": "", "citations": [{"type": "x"}]}]
    assert anthropic.normalize_response(collected, CallIds()) == {
        "type": "final_answer",
        "text": "",
        "content": [{"type": "text", "text": "", "citations": [{"type": "x"}]}],
    }


MESSAGE_START = ("message_start", {"type": "message_start", "message": {"id": "m", "content": []}})
TEXT_START = (
    "content_block_start",
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
)
STOP = ("message_stop", {"type": "message_stop"})


@pytest.mark.parametrize(
    ("events", "problem"),
    [
        pytest.param(
            [
                MESSAGE_START,
                ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ],
            'reported an error ("overloaded_error") at event 1',
            id="error-event",
        ),
        pytest.param(
            [MESSAGE_START, TEXT_START], "ended before message_stop (it was cut short)", id="no-stop"
        ),
        pytest.param([], "has no message_start event", id="empty"),
        pytest.param(
            [TEXT_START, STOP], 'sends "content_block_start" before message_start (event 0)', id="no-start"
        ),
        pytest.param(
            [MESSAGE_START, MESSAGE_START], "has a second message_start at event 1", id="two-starts"
        ),
        pytest.param(
            [
                MESSAGE_START,
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}},
                ),
            ],
            "has a delta for a content block that was not started (event 1)",
            id="delta-first",
        ),
        pytest.param(
            [
                MESSAGE_START,
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": 1, "content_block": {"type": "text"}},
                ),
            ],
            "starts a content block out of order (event 1)",
            id="index-gap",
        ),
        pytest.param(
            [
                MESSAGE_START,
                TEXT_START,
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "magic_delta"}},
                ),
            ],
            'has a "magic_delta" delta that Blackbox does not know (event 2)',
            id="unknown-delta",
        ),
        pytest.param(
            [MESSAGE_START, ("surprise", {"type": "surprise"})],
            'has an event of type "surprise" Blackbox does not know (event 1)',
            id="unknown-event",
        ),
        pytest.param(
            [
                MESSAGE_START,
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
                    },
                ),
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": '{"a": '},
                    },
                ),
                STOP,
            ],
            "has tool input that is not complete JSON (content block 0)",
            id="cut-json",
        ),
    ],
)
def test_anthropic_streams_without_a_whole_answer_are_refused(events: list[Any], problem: str) -> None:
    message = refusal_message(lambda: anthropic.collect_stream(sse(*events)))
    assert message == f"the streamed response {problem}; the call did not complete, so it is not recorded"


def test_anthropic_events_without_event_lines_are_skipped_as_the_sdk_skips_them() -> None:
    body = sse((None, MESSAGE_START[1]), (None, STOP[1]))
    assert "has no message_start event" in refusal_message(lambda: anthropic.collect_stream(body))


def test_anthropic_event_data_must_be_a_json_object() -> None:
    assert "has an event whose data is not JSON (event 1)" in refusal_message(
        lambda: anthropic.collect_stream(sse(MESSAGE_START) + b"event: ping\ndata: {oops\n\n")
    )
    assert "has an event whose data is not a JSON object (event 0)" in refusal_message(
        lambda: anthropic.collect_stream(b"event: ping\ndata: [1]\n\n")
    )


def test_a_stream_cut_inside_message_stop_is_refused() -> None:
    body = b"".join(anthropic.synthesize_stream(TOOL_OUTPUT, output_index=1, model="m", timestamp=0))
    assert "ended before message_stop" in refusal_message(lambda: anthropic.collect_stream(body[:-1]))


# -- OpenAI Chat: synthesized streams ----------------------------------------------------------

HEAD = {"id": "blackbox-replay-5", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-x"}


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        **HEAD,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
    }


@pytest.mark.parametrize("include_usage", [False, True], ids=["no-usage", "include-usage"])
def test_chat_stream_has_the_exact_chunk_sequence(include_usage: bool) -> None:
    request = {"stream": True, "stream_options": {"include_usage": include_usage}}
    events = openai_chat.synthesize_stream(
        TOOL_OUTPUT, output_index=5, model="gpt-x", timestamp=1_700_000_000_999, request_body=request
    )
    call_start = {
        "index": 0,
        "id": "call-0",
        "type": "function",
        "function": {"name": "weather", "arguments": ""},
    }
    expected: list[tuple[str | None, Any]] = [
        (None, chunk({"role": "assistant", "content": "", "refusal": None})),
        (None, chunk({"content": "Checking the wea"})),
        (None, chunk({"content": "ther."})),
        (None, chunk({"tool_calls": [call_start]})),
        (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":"Paris"}'}}]})),
        (None, chunk({}, "tool_calls")),
    ]
    if include_usage:
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        expected.append((None, {**HEAD, "choices": [], "usage": usage}))
    expected.append((None, "[DONE]"))
    assert decoded(events) == expected
    assert events[-1] == b"data: [DONE]\n\n"


def test_a_chat_refusal_streams_as_refusal_deltas() -> None:
    output = {"type": "final_answer", "text": "I can't help with that.", "stop": "refusal"}
    events = openai_chat.synthesize_stream(output, output_index=5, model="gpt-x", timestamp=1_700_000_000_000)
    assert decoded(events) == [
        (None, chunk({"role": "assistant", "content": None, "refusal": ""})),
        (None, chunk({"refusal": "I can't help wit"})),
        (None, chunk({"refusal": "h that."})),
        (None, chunk({}, "stop")),
        (None, "[DONE]"),
    ]


def test_chat_tool_calls_without_text_stream_null_content() -> None:
    output = {
        "type": "tool_calls",
        "calls": [
            {"toolCallId": "call-0", "toolName": "a", "toolInput": {}},
            {"toolCallId": "call-1", "toolName": "b", "toolInput": "raw text"},
        ],
        "stop": "length",
    }
    events = decoded(
        openai_chat.synthesize_stream(output, output_index=5, model="gpt-x", timestamp=1_700_000_000_000)
    )
    assert events[0] == (None, chunk({"role": "assistant", "content": None, "refusal": None}))
    arguments = [
        (call["index"], call["function"]["arguments"])
        for _, data in events[:-1]
        for call in data["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert arguments == [(0, ""), (0, "{}"), (1, ""), (1, "raw text")]
    assert events[-2] == (None, chunk({}, "length"))


@given(neutral_outputs(argument_inputs), st.booleans())
def test_a_chat_stream_collects_back_to_the_recorded_output(
    output: dict[str, Any], include_usage: bool
) -> None:
    request = {"stream_options": {"include_usage": include_usage}}
    events = openai_chat.synthesize_stream(
        output, output_index=1, model="g", timestamp=0, request_body=request
    )
    collected = openai_chat.collect_stream(b"".join(events))
    assert openai_chat.normalize_response(collected, CallIds()) == output
    assert pretty_json(openai_chat.normalize_response(collected, CallIds())) == pretty_json(output)


@given(neutral_outputs(argument_inputs))
def test_a_chat_stream_with_usage_collects_to_the_synthesized_completion(output: dict[str, Any]) -> None:
    request = {"stream_options": {"include_usage": True}}
    events = openai_chat.synthesize_stream(
        output, output_index=1, model="g", timestamp=0, request_body=request
    )
    body = openai_chat.synthesize_response(output, output_index=1, model="g", timestamp=0)
    del body["choices"][0]["message"]["annotations"]  # a stream's deltas never carry the empty list
    assert openai_chat.collect_stream(b"".join(events)) == body


# -- OpenAI Chat: collecting a live stream -----------------------------------------------------


def live_chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> tuple[None, Any]:
    head = {
        "id": "chatcmpl-ABC",
        "object": "chat.completion.chunk",
        "created": 1767225601,
        "model": "gpt-5-2026",
        "service_tier": "default",
        "system_fingerprint": "fp_1",
        "obfuscation": "xyz",
    }
    return None, {
        **head,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        **extra,
    }


def test_a_live_chat_stream_with_parallel_calls_collects_to_its_completion() -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    body = sse(
        live_chunk({"role": "assistant", "content": None, "refusal": None}),
        live_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_A",
                        "type": "function",
                        "function": {"name": "a", "arguments": ""},
                    }
                ]
            }
        ),
        live_chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_B",
                        "type": "function",
                        "function": {"name": "b", "arguments": ""},
                    }
                ]
            }
        ),
        live_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"x":'}}]}),
        live_chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
        live_chunk({"tool_calls": [{"index": 0, "function": {"arguments": " 1}"}}]}),
        live_chunk({}, "tool_calls"),
        (
            None,
            {
                "id": "chatcmpl-ABC",
                "object": "chat.completion.chunk",
                "created": 1767225601,
                "model": "gpt-5-2026",
                "choices": [],
                "usage": usage,
            },
        ),
        (None, "[DONE]"),
        (None, {"ignored": "after [DONE]"}),
    )
    assert openai_chat.collect_stream(body) == {
        "id": "chatcmpl-ABC",
        "created": 1767225601,
        "model": "gpt-5-2026",
        "service_tier": "default",
        "system_fingerprint": "fp_1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": None,
                    "tool_calls": [
                        {
                            "function": {"arguments": '{"x": 1}', "name": "a"},
                            "id": "call_A",
                            "type": "function",
                        },
                        {"function": {"arguments": "{}", "name": "b"}, "id": "call_B", "type": "function"},
                    ],
                },
                "finish_reason": "tool_calls",
                "logprobs": None,
            }
        ],
        "usage": usage,
    }
    assert openai_chat.normalize_response(openai_chat.collect_stream(body), CallIds()) == {
        "type": "tool_calls",
        "calls": [
            {"toolCallId": "call-0", "toolName": "a", "toolInput": {"x": 1}},
            {"toolCallId": "call-1", "toolName": "b", "toolInput": {}},
        ],
    }


def test_a_chat_stream_without_done_is_still_whole_once_it_has_a_finish_reason() -> None:
    body = sse(
        live_chunk({"role": "assistant", "content": ""}),
        live_chunk({"content": "Hi"}),
        live_chunk({}, "stop"),
    )
    assert openai_chat.normalize_response(openai_chat.collect_stream(body), CallIds()) == {
        "type": "final_answer",
        "text": "Hi",
    }


def test_a_chat_stream_ending_with_done_is_whole_without_a_finish_reason() -> None:
    """Some OpenAI-compatible servers never name a finish reason: ``[DONE]`` ends their answer."""
    body = sse(
        live_chunk({"role": "assistant", "content": ""}), live_chunk({"content": "Hi"}), (None, "[DONE]")
    )
    assert openai_chat.normalize_response(openai_chat.collect_stream(body), CallIds()) == {
        "type": "final_answer",
        "text": "Hi",
        "omitted": ["finishReason"],
    }


@pytest.mark.parametrize(
    ("delta", "extra", "refused_at"),
    [
        ({"refusal": "x"}, {"logprobs": {"refusal": [{"token": "x"}]}}, "(choices[0].logprobs.refusal)"),
        (
            {"content": "x", "annotations": [{"type": "url_citation"}]},
            {},
            "(choices[0].message.annotations[0])",
        ),
        ({"function_call": {"name": "f", "arguments": ""}}, {}, "(choices[0].message.function_call)"),
    ],
    ids=["refusal-logprobs", "annotations", "legacy-function-call"],
)
def test_what_a_stream_carries_is_refused_as_in_a_plain_response(
    delta: dict[str, Any], extra: dict[str, Any], refused_at: str
) -> None:
    name, data = live_chunk(delta)
    data["choices"][0].update(extra)
    body = sse((name, data), live_chunk({}, "stop"))
    collected = openai_chat.collect_stream(body)
    assert refusal_message(lambda: openai_chat.normalize_response(collected, CallIds())).endswith(refused_at)


@pytest.mark.parametrize(
    ("events", "problem"),
    [
        pytest.param(
            [live_chunk({"content": "x"}), (None, {"error": {"message": "boom", "type": "server_error"}})],
            'the streamed response reported an error ("server_error") at event 1',
            id="error-chunk",
        ),
        pytest.param(
            [live_chunk({"content": "x"})],
            "the streamed response ended without a finish_reason or [DONE] (it was cut short)",
            id="no-finish",
        ),
        pytest.param([(None, "[DONE]")], "the streamed response has no chunks", id="empty"),
    ],
)
def test_chat_streams_without_a_whole_answer_are_refused(events: list[Any], problem: str) -> None:
    message = refusal_message(lambda: openai_chat.collect_stream(sse(*events)))
    assert message == f"{problem}; the call did not complete, so it is not recorded"


def test_a_stream_whose_one_choice_is_not_numbered_0_is_refused() -> None:
    name, data = live_chunk({"content": "x"})
    data["choices"][0]["index"] = 1
    assert refusal_message(lambda: openai_chat.collect_stream(sse((name, data)))) == (
        "a stream whose one choice is not index 0 is not supported yet; a replay numbers the choices from 0, "
        "as the API does (event 0)"
    )


def test_a_tool_call_delta_without_an_index_is_refused() -> None:
    body = sse(live_chunk({"tool_calls": [{"id": "call_A", "function": {"name": "a"}}]}))
    assert refusal_message(lambda: openai_chat.collect_stream(body)).startswith(
        "choices[0].delta.tool_calls[].index must be an integer"
    )


TEXT_BLOCK = (
    "content_block_start",
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hi."}},
)
ANSWERED = ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}})


def test_an_anthropic_stream_read_up_to_its_stop_reason_holds_the_whole_answer() -> None:
    """A client that stops reading after ``message_delta`` (LiteLLM does) has read every part of the
    answer: the cut carries it, so the recording can keep what a replay's full stream gives back."""
    with pytest.raises(StreamCutShort) as cut:
        anthropic.collect_stream(sse(MESSAGE_START, TEXT_BLOCK, ANSWERED))
    assert cut.value.whole == anthropic.collect_stream(sse(MESSAGE_START, TEXT_BLOCK, ANSWERED, STOP))
    assert cut.value.whole is not None and cut.value.whole["stop_reason"] == "end_turn"
    with pytest.raises(StreamCutShort) as earlier:
        anthropic.collect_stream(sse(MESSAGE_START, TEXT_BLOCK))
    assert earlier.value.whole is None  # no stop reason yet: part of an answer


@pytest.mark.parametrize(
    ("events", "complete", "kept"),
    [
        pytest.param([MESSAGE_START, TEXT_BLOCK, ANSWERED], False, True, id="closed-after-stop-reason"),
        pytest.param([MESSAGE_START, TEXT_BLOCK, ANSWERED], True, False, id="upstream-cut-after-stop-reason"),
        pytest.param([MESSAGE_START, TEXT_BLOCK], False, None, id="closed-before-stop-reason"),
    ],
)
def test_a_recording_keeps_only_a_stream_the_agent_closed_after_its_stop_reason(
    events: list[Any], complete: bool, kept: bool | None
) -> None:
    """Kept: the answer is recorded; not kept: a failed call (the upstream cut it); ``None``: the
    agent read part of an answer, which the recording refuses."""
    wire = WireCall(providers.PROVIDERS["anthropic"], "/v1/messages", {})
    response = UpstreamResponse(200, list(SSE_HEADERS), sse(*events), complete=complete)
    if kept is None:
        with pytest.raises(StreamCutShort):
            wire.whole_answer(response)
    else:
        assert (wire.whole_answer(response) is not None) == kept
