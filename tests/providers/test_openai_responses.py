"""OpenAI Responses API ↔ neutral payloads: mapping, refusals, synthesized responses and streams."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_blackbox.errors import BlackboxUnsupportedError
from pytest_blackbox.providers import CallIds, openai_responses
from pytest_blackbox.providers.sse import encode_event, parse_events
from pytest_blackbox.trace.canonical import pretty_json

from .outputs import argument_inputs, neutral_outputs

WEATHER_TOOL = {
    "type": "function",
    "name": "weather",
    "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": True,
}


def request(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-5", "input": "hi"}
    body.update(fields)
    return body


def refusal_message(call: Any) -> str:
    with pytest.raises(BlackboxUnsupportedError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message
    return message


def message_item(role: str, *texts: str, kind: str = "input_text", **fields: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "role": role,
        "content": [{"type": kind, "text": text} for text in texts],
        **fields,
    }


def function_call(call_id: str, name: str, arguments: str, **fields: Any) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments, **fields}


def function_output(call_id: str, output: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


# -- requests ----------------------------------------------------------------------------------


def test_a_whole_conversation_maps_onto_the_neutral_transcript() -> None:
    body = request(
        instructions="You are a weather bot.",
        input=[
            {"role": "developer", "content": "Answer in metric."},
            message_item("user", "What is the weather", "in Paris and Lyon?"),
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
            message_item(
                "assistant", "Checking.", kind="output_text", id="msg_1", status="completed", annotations=[]
            ),
            function_call("call_A", "weather", '{"city":"Paris"}', id="fc_1", status="completed"),
            function_call("call_B", "weather", "not json"),
            function_output("call_A", '{"temp": 21}'),
            function_output("call_B", [{"type": "input_text", "text": "rain"}]),
            {"role": "assistant", "content": "Sunny in Paris, rain in Lyon."},
            {"role": "user", "content": "Thanks"},
        ],
        tools=[WEATHER_TOOL],
        max_output_tokens=300,
        stream=True,
        stream_options={"include_obfuscation": False},
        store=False,
        include=["reasoning.encrypted_content"],
    )
    ids = CallIds()
    assert openai_responses.normalize_request(body, ids) == {
        "messages": [
            {"role": "user", "content": "What is the weather\n\nin Paris and Lyon?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "toolCallId": "call-0",
                        "toolName": "weather",
                        "toolInput": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "toolCallId": "call-1",
                        "toolName": "weather",
                        "toolInput": "not json",
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "toolCallId": "call-0",
                        "toolName": "weather",
                        "result": '{"temp": 21}',
                    },
                    {"type": "tool_result", "toolCallId": "call-1", "toolName": "weather", "result": "rain"},
                ],
            },
            {"role": "assistant", "content": "Sunny in Paris, rain in Lyon."},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [
            {
                "name": "weather",
                "description": "Current weather for a city",
                "inputSchema": WEATHER_TOOL["parameters"],
            }
        ],
        "systemPrompt": "You are a weather bot.\n\nAnswer in metric.",
        "model": "gpt-5",
        "params": {"maxTokens": 300, "toolStrict": {"weather": True}},
    }
    assert (ids.get("call_A"), ids.get("call_B")) == ("call-0", "call-1")


def test_an_input_string_is_one_user_message_and_no_input_is_none() -> None:
    assert openai_responses.normalize_request(request(input="hello"), CallIds()) == {
        "messages": [{"role": "user", "content": "hello"}],
        "tools": [],
        "model": "gpt-5",
    }
    assert openai_responses.normalize_request({"model": "m"}, CallIds())["messages"] == []


def test_function_calls_without_text_form_an_assistant_turn_of_their_own() -> None:
    items = [
        {"role": "user", "content": "go"},
        function_call("call_A", "a", "{}"),
        function_output("call_A", "done"),
        function_call("call_B", "b", '{"n":1}'),
        function_call("call_C", "c", "{}"),
    ]
    messages: Any = openai_responses.normalize_request(request(input=items), CallIds())["messages"]
    assert messages == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "toolCallId": "call-0", "toolName": "a", "toolInput": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "toolCallId": "call-0", "toolName": "a", "result": "done"}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "toolCallId": "call-1", "toolName": "b", "toolInput": {"n": 1}},
                {"type": "tool_use", "toolCallId": "call-2", "toolName": "c", "toolInput": {}},
            ],
        },
    ]


def test_an_output_for_an_unknown_call_is_named_unknown() -> None:
    messages: Any = openai_responses.normalize_request(
        request(input=[function_output("call_X", "r")]), CallIds()
    )
    assert messages["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "toolCallId": "call-0", "toolName": "unknown", "result": "r"}
            ],
        }
    ]


def test_params_use_neutral_names_in_table_order_and_skip_nulls() -> None:
    body = request(
        context_management=[{"type": "compaction", "compact_threshold": 20000}],
        truncation="auto",
        top_logprobs=2,
        text={"verbosity": "low", "format": {"type": "json_object"}},
        reasoning={"effort": "low", "summary": "auto"},
        max_tool_calls=3,
        parallel_tool_calls=False,
        tool_choice="required",
        top_p=0.9,
        temperature=0,
        max_output_tokens=500,
        tools=[{**WEATHER_TOOL, "strict": False}, {**WEATHER_TOOL, "name": "other", "strict": None}],
        metadata={"k": "v"},
        user="u",
        service_tier="flex",
        safety_identifier="s",
        prompt_cache_key="p",
        store=True,
    )
    params: Any = openai_responses.normalize_request(body, CallIds())["params"]
    assert list(params.items()) == [
        ("maxTokens", 500),
        ("temperature", 0),
        ("topP", 0.9),
        ("toolChoice", "required"),
        ("parallelToolCalls", False),
        ("maxToolCalls", 3),
        ("reasoning", {"effort": "low", "summary": "auto"}),
        ("responseFormat", {"type": "json_object"}),
        ("verbosity", "low"),
        ("topLogprobs", 2),
        ("truncation", "auto"),
        ("contextManagement", [{"type": "compaction", "compactThreshold": 20000}]),
        ("toolStrict", {"weather": False}),
    ]


def test_stream_store_and_other_fields_are_not_recorded() -> None:
    plain: Any = openai_responses.normalize_request(request(), CallIds())
    noisy = request(
        stream=True, stream_options={"include_obfuscation": True}, store=True, metadata={"a": "b"}
    )
    assert openai_responses.normalize_request(noisy, CallIds()) == plain
    assert "params" not in plain


def test_a_history_sent_back_from_a_replay_normalizes_like_the_live_one() -> None:
    """The agent passes ``response.output`` back as input: live ids and reasoning, or replayed ids."""
    live_output = [
        {"id": "rs_1", "type": "reasoning", "summary": []},
        message_item(
            "assistant", "Checking.", kind="output_text", id="msg_1", status="completed", annotations=[]
        ),
        function_call("call_Abc123", "weather", '{"city":"Paris"}', id="fc_1", status="completed"),
    ]
    recording_ids = CallIds()
    live_turn: Any = openai_responses.normalize_response(
        {"status": "completed", "output": live_output}, recording_ids
    )
    replayed = openai_responses.synthesize_response(live_turn, output_index=3, model="gpt-5", timestamp=0)
    replay_ids = CallIds()
    replay_ids.register_identity(["call-0"])

    def next_request(output: list[dict[str, Any]]) -> dict[str, Any]:
        return request(
            input=[
                {"role": "user", "content": "weather?"},
                *output,
                function_output(output[-1]["call_id"], "21C"),
            ]
        )

    assert openai_responses.normalize_request(next_request(replayed["output"]), replay_ids) == (
        openai_responses.normalize_request(next_request(live_output), recording_ids)
    )


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param(
            {"prompt": {"id": "pmpt_1"}},
            "a stored prompt (prompt) is not supported yet; send the whole conversation in input and the "
            "prompt text in instructions, so the cassette holds what the model saw and a replay can compare "
            "it (prompt)",
            id="prompt",
        ),
        pytest.param(
            {"previous_response_id": 7}, "previous_response_id must be a string id", id="previous-id"
        ),
        pytest.param(
            {"background": True},
            "background responses is not supported yet; they are fetched later by id, which a replay cannot "
            "serve; leave background off (background)",
            id="background",
        ),
        pytest.param(
            {"tools": [WEATHER_TOOL, {"type": "custom", "name": "grep"}]},
            'the client-executed built-in tool "custom" is not supported yet; only function tools and '
            "provider-run built-in tools can be recorded in this version; do the work in a function tool "
            "(tools[1])",
            id="custom-tool",
        ),
        pytest.param({"tools": [{"type": "local_shell"}]}, 'built-in tool "local_shell"', id="local-shell"),
        pytest.param(
            {"tools": [{"type": "computer_use_preview"}]},
            'built-in tool "computer_use_preview"',
            id="computer",
        ),
        pytest.param(
            {"tools": [{"type": "custom", "name": "c"}]}, 'built-in tool "custom"', id="custom-tool"
        ),
        pytest.param(
            {"input": [{"type": "item_reference", "id": "msg_1"}]},
            "item references (items kept by the provider) is not supported yet",
            id="item-reference",
        ),
        pytest.param(
            {"input": [{"type": "computer_call", "id": "cu_1"}]},
            '"computer_call" input items is not supported yet; only message, function_call, '
            "function_call_output and reasoning items can be recorded in this version (input[0])",
            id="client-item",
        ),
        pytest.param(
            {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x", "z": 1}]}]},
            "the field z of a media block is not supported yet; a replay compares only the fields Blackbox "
            "records, so this one would not be compared (input[0].content[0].z)",
            id="image-unknown-field",
        ),
        pytest.param(
            {"input": [{"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}]},
            "a refusal part in the history is not supported yet; a refusal in the history would be "
            "recorded as ordinary text (input[0].content[0])",
            id="refusal-in-history",
        ),
        pytest.param(
            {"input": [{"role": "user", "content": "a"}, {"role": "system", "content": "late"}]},
            "a system message after the conversation starts is not supported yet; put system and developer "
            "messages first (input[1])",
            id="late-system",
        ),
        pytest.param({"input": [{"role": "tool", "content": "x"}]}, '"tool" messages', id="unknown-role"),
        pytest.param(
            {"input": [function_output("c", [{"type": "input_file"}])]},
            "input[0].output[0] must be an input_file with file_data, file_url or file_id",
            id="file-output-without-source",
        ),
    ],
)
def test_request_refusals_name_the_field(fields: dict[str, Any], expected: str) -> None:
    message = refusal_message(lambda: openai_responses.normalize_request(request(**fields), CallIds()))
    whole = "is not supported yet" in expected and expected.endswith(")")  # a whole message, else a part
    assert message == expected if whole else expected in message


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ([], "the request body must be a JSON object"),
        ({"input": {"role": "user"}}, "input must be a string or a list of input items"),
        ({"input": ["hi"]}, "input[0] must be a JSON object"),
        ({"instructions": ["a"]}, "instructions must be a string"),
        ({"text": "json"}, "text must be a JSON object"),
        (
            {"input": [{"role": "user", "content": 3}]},
            "input[0].content must be a string or a list of content parts",
        ),
        ({"input": [function_call("c", None, "{}")]}, "input[0].name must be a string"),  # type: ignore[arg-type]
        ({"input": [{"type": "function_call", "name": "f"}]}, "input[0].call_id must be a string"),
        (
            {"input": [function_output("c", None)]},
            "input[0].output must be a string or a list of content parts",
        ),
        ({"tools": [{"type": "function"}]}, "tools[0].name must be a string"),
    ],
)
def test_malformed_requests_are_refused_naming_the_field(body: Any, expected: str) -> None:
    assert refusal_message(lambda: openai_responses.normalize_request(body, CallIds())).startswith(expected)


# -- responses ---------------------------------------------------------------------------------


def live_response(output: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "resp_0123456789abcdef0123",
        "object": "response",
        "created_at": 1767225600,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "model": "gpt-5-2026",
        "output": output,
        "usage": {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12},
    }
    body.update(fields)
    return body


def output_message(*parts: dict[str, Any], status: str = "completed") -> dict[str, Any]:
    return {"id": "msg_9", "type": "message", "role": "assistant", "status": status, "content": list(parts)}


def output_text(text: str, **fields: Any) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": [], **fields}


def test_text_is_a_final_answer_and_reasoning_and_empty_parts_are_dropped() -> None:
    body = live_response(
        [
            {"id": "rs_1", "type": "reasoning", "summary": []},
            output_message(output_text(""), output_text("Sunny.")),
        ]
    )
    assert openai_responses.normalize_response(body, CallIds()) == {"type": "final_answer", "text": "Sunny."}


def test_no_output_at_all_is_an_empty_final_answer_replayed_without_a_message() -> None:
    output = openai_responses.normalize_response(live_response([]), CallIds())
    assert output == {"type": "final_answer", "text": "", "omitted": ["textMessage"]}
    replayed = openai_responses.synthesize_response(output, output_index=1, model="m", timestamp=0)
    assert replayed["output"] == []


def test_function_calls_are_tool_calls_with_their_arguments_parsed() -> None:
    ids = CallIds()
    body = live_response(
        [
            output_message(output_text("Checking.")),
            function_call("call_A", "weather", '{"city": "Paris"}', id="fc_1"),
            function_call("call_B", "weather", "oops"),
        ]
    )
    assert openai_responses.normalize_response(body, ids) == {
        "type": "tool_calls",
        "calls": [
            {"toolCallId": "call-0", "toolName": "weather", "toolInput": {"city": "Paris"}},
            {"toolCallId": "call-1", "toolName": "weather", "toolInput": "oops"},
        ],
        "text": "Checking.",
    }
    assert ids.get("call_B") == "call-1"


def test_a_refusal_part_is_a_refusal_final_answer() -> None:
    body = live_response([output_message({"type": "refusal", "refusal": "I can't."})])
    assert openai_responses.normalize_response(body, CallIds()) == {
        "type": "final_answer",
        "text": "I can't.",
        "stop": "refusal",
    }


@pytest.mark.parametrize("with_calls", [False, True], ids=["text", "tool-calls"])
def test_an_incomplete_response_at_max_output_tokens_is_a_length_stop(with_calls: bool) -> None:
    output = [output_message(output_text("Partial"), status="incomplete")]
    if with_calls:
        output.append(function_call("call_A", "f", "{}"))
    body = live_response(output, status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    normalized: Any = openai_responses.normalize_response(body, CallIds())
    assert normalized["stop"] == "length"
    assert normalized["type"] == ("tool_calls" if with_calls else "final_answer")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            live_response([], status="failed", error={"code": "server_error"}),
            'a response with status "failed" is not supported yet; only completed responses, or incomplete '
            "ones cut at max_output_tokens or by the content filter, can be recorded (status)",
            id="failed",
        ),
        pytest.param(live_response([], status="in_progress"), "(status)", id="in-progress"),
        pytest.param(
            live_response([], status="incomplete", incomplete_details={"reason": "recitation"}),
            'an incomplete response with reason "recitation" is not supported yet; a replay could not return '
            "it (incomplete_details.reason)",
            id="other-incomplete-reason",
        ),
        pytest.param(
            live_response([], status="incomplete", incomplete_details=None),
            "an incomplete response with reason null is not supported yet",
            id="no-reason",
        ),
        pytest.param(
            live_response([output_message({"type": "refusal", "refusal": "no"}, output_text("but"))]),
            "a refusal together with text, function calls or an incomplete status is not supported yet; "
            "a replay returns a refusal alone (output)",
            id="refusal-and-text",
        ),
        pytest.param(
            live_response([output_message(output_text("a"), output_text("b"))]),
            "a message with more than one text part is not supported yet; a replay returns one text part "
            "(or one refusal) per message, so this response could not come back as it was "
            "(output[0].content[1])",
            id="two-texts",
        ),
        pytest.param(
            live_response(
                [output_message({"type": "refusal", "refusal": "a"}, {"type": "refusal", "refusal": "b"})]
            ),
            "a response with more than one refusal part",
            id="two-refusals",
        ),
        pytest.param(
            live_response(
                [output_message(output_text("x", annotations=[{"type": "url_citation", "Url": "u"}]))]
            ),
            "(output[0].content[0].annotations[0])",
            id="annotations",
        ),
        pytest.param(
            live_response([output_message(output_text("x", logprobs={"token": "x"}))]),
            "output[0].content[0].logprobs must be a list or null",
            id="logprobs-not-a-list",
        ),
        pytest.param(
            live_response([{"type": "computer_call", "id": "cu_1", "status": "completed"}]),
            '"computer_call" output items is not supported yet; only message, function_call, reasoning and '
            "provider-run built-in tool items can be recorded in this version (output[0])",
            id="client-item",
        ),
        pytest.param(
            live_response([output_message({"type": "output_audio"})]),
            '"output_audio" content in a response is not supported yet',
            id="audio-part",
        ),
    ],
)
def test_response_refusals(body: dict[str, Any], expected: str) -> None:
    ids = CallIds()
    message = refusal_message(lambda: openai_responses.normalize_response(body, ids))
    assert message.endswith(expected) if expected.startswith("(") else expected in message
    assert ids.peek() == "call-0"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ([], "the response body must be a JSON object"),
        ({"output": {}}, "output must be a list"),
        ({"output": [function_call("c", None, "{}")]}, "output[0].name must be a string"),  # type: ignore[arg-type]
        ({"output": [output_message(output_text(None))]}, "output[0].content[0].text must be a string"),  # type: ignore[arg-type]
    ],
)
def test_malformed_responses_are_refused(body: Any, expected: str) -> None:
    assert refusal_message(lambda: openai_responses.normalize_response(body, CallIds())).startswith(expected)


# -- synthesized responses ---------------------------------------------------------------------

ZERO_USAGE = {
    "input_tokens": 0,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 0,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 0,
}


def test_synthesized_tool_calls_have_the_exact_replay_shape() -> None:
    output = {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "weather", "toolInput": {"city": "Paris"}}],
        "text": "Checking.",
    }
    body = openai_responses.synthesize_response(
        output, output_index=4, model="gpt-5", timestamp=1_767_225_600_999
    )
    assert pretty_json(body) == pretty_json(
        {
            "id": "response-4",
            "object": "response",
            "created_at": 1767225600,
            "status": "completed",
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "model": "gpt-5",
            "output": [
                {
                    "id": "msg_blackbox_replay_4_0",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": "Checking.", "annotations": [], "logprobs": []}
                    ],
                },
                {
                    "id": "fc_blackbox_replay_4_1",
                    "type": "function_call",
                    "call_id": "call-0",
                    "name": "weather",
                    "arguments": '{"city":"Paris"}',
                    "status": "completed",
                },
            ],
            "parallel_tool_calls": True,
            "temperature": None,
            "tool_choice": "auto",
            "tools": [],
            "top_p": None,
            "usage": ZERO_USAGE,
        }
    )


def test_a_tool_call_without_text_has_no_message_item() -> None:
    output = {"type": "tool_call", "toolCallId": "call-2", "toolName": "f", "toolInput": "raw"}
    body = openai_responses.synthesize_response(output, output_index=1, model=None, timestamp=0)
    assert body["model"] == "unknown"
    assert body["output"] == [
        {
            "id": "fc_blackbox_replay_1_0",
            "type": "function_call",
            "call_id": "call-2",
            "name": "f",
            "arguments": "raw",
            "status": "completed",
        }
    ]


def test_an_empty_final_answer_still_has_a_message() -> None:
    body = openai_responses.synthesize_response(
        {"type": "final_answer", "text": ""}, output_index=1, model="m", timestamp=0
    )
    assert [part["text"] for part in body["output"][0]["content"]] == [""]


def test_a_refusal_and_a_length_stop() -> None:
    refusal = openai_responses.synthesize_response(
        {"type": "final_answer", "text": "No.", "stop": "refusal"}, output_index=1, model="m", timestamp=0
    )
    assert refusal["output"][0]["content"] == [{"type": "refusal", "refusal": "No."}]
    assert refusal["status"] == "completed"
    cut = openai_responses.synthesize_response(
        {"type": "final_answer", "text": "Par", "stop": "length"}, output_index=1, model="m", timestamp=0
    )
    assert (cut["status"], cut["incomplete_details"], cut["output"][0]["status"]) == (
        "incomplete",
        {"reason": "max_output_tokens"},
        "incomplete",
    )


def test_error_body_and_stream_flag_and_name() -> None:
    assert openai_responses.error_body("boom") == {
        "error": {
            "message": "[blackbox] boom",
            "type": "invalid_request_error",
            "param": None,
            "code": "blackbox",
        }
    }
    assert openai_responses.is_stream_request({"stream": True}) is True
    assert openai_responses.is_stream_request({"stream": False}) is False
    assert openai_responses.NAME == "openai_responses"


# -- streams -----------------------------------------------------------------------------------


def events_of(stream: list[bytes]) -> list[tuple[str | None, dict[str, Any]]]:
    result = []
    for item in stream:
        [event] = parse_events(item)
        result.append((event.event, json.loads(event.data)))
    return result


def test_a_refusal_stream_has_the_exact_event_sequence() -> None:
    output = {"type": "final_answer", "text": "I can't help with that.", "stop": "refusal"}
    events = events_of(openai_responses.synthesize_stream(output, output_index=2, model="m", timestamp=0))
    body = openai_responses.synthesize_response(output, output_index=2, model="m", timestamp=0)
    opening = {**body, "status": "in_progress", "output": [], "usage": None}
    item = body["output"][0]
    where = {"item_id": "msg_blackbox_replay_2_0", "output_index": 0}
    expected: list[dict[str, Any]] = [
        {"type": "response.created", "response": opening},
        {"type": "response.in_progress", "response": opening},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "status": "in_progress", "content": []},
        },
        {
            "type": "response.content_part.added",
            **where,
            "content_index": 0,
            "part": {"type": "refusal", "refusal": ""},
        },
        {"type": "response.refusal.delta", **where, "content_index": 0, "delta": "I can't help wit"},
        {"type": "response.refusal.delta", **where, "content_index": 0, "delta": "h that."},
        {"type": "response.refusal.done", **where, "content_index": 0, "refusal": "I can't help with that."},
        {"type": "response.content_part.done", **where, "content_index": 0, "part": item["content"][0]},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": body},
    ]
    assert events == [
        (data["type"], {**data, "sequence_number": number}) for number, data in enumerate(expected)
    ]


def test_a_length_stop_streams_to_response_incomplete() -> None:
    output = {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {}}],
        "stop": "length",
    }
    events = events_of(openai_responses.synthesize_stream(output, output_index=1, model="m", timestamp=0))
    assert [name for name, _ in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.incomplete",
    ]
    assert events[2][1]["item"] == {
        "id": "fc_blackbox_replay_1_0",
        "type": "function_call",
        "call_id": "call-0",
        "name": "f",
        "arguments": "",
        "status": "in_progress",
    }
    assert events[-1][1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


@given(neutral_outputs(argument_inputs), st.integers(0, 1000))
def test_a_stream_collects_back_to_the_recorded_output(output: dict[str, Any], index: int) -> None:
    events = openai_responses.synthesize_stream(output, output_index=index, model="m", timestamp=0)
    collected = openai_responses.collect_stream(b"".join(events))
    assert collected == openai_responses.synthesize_response(
        output, output_index=index, model="m", timestamp=0
    )
    assert openai_responses.normalize_response(collected, CallIds()) == output


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(encode_event(event["type"], event) for event in events)


def test_a_closing_event_without_output_is_completed_from_the_done_items() -> None:
    first = output_message(output_text("Hi"))
    second = function_call("call_A", "f", "{}", id="fc_1")
    body = sse(
        {"type": "response.created", "response": {"id": "resp_1", "output": []}},
        {"type": "response.output_item.done", "output_index": 1, "item": second},
        {"type": "response.output_item.done", "output_index": 0, "item": first},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
        {"type": "response.output_item.done", "output_index": 2, "item": "ignored after the end"},
    )
    assert openai_responses.collect_stream(body) == {
        "id": "resp_1",
        "status": "completed",
        "output": [first, second],
    }


@pytest.mark.parametrize(
    ("events", "problem"),
    [
        pytest.param(
            [
                {"type": "response.created", "response": {}},
                {"type": "error", "code": "server_error", "message": "x"},
            ],
            'reported an error ("server_error") at event 1',
            id="error",
        ),
        pytest.param(
            [{"type": "response.failed", "response": {"status": "failed"}}],
            "reported that the response failed at event 0",
            id="failed",
        ),
        pytest.param(
            [{"type": "response.created", "response": {}}],
            "ended before response.completed or response.incomplete (it was cut short)",
            id="cut",
        ),
    ],
)
def test_streams_without_a_whole_answer_are_refused(events: list[dict[str, Any]], problem: str) -> None:
    message = refusal_message(lambda: openai_responses.collect_stream(sse(*events)))
    assert message == f"the streamed response {problem}; the call did not complete, so it is not recorded"
