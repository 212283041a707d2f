"""OpenAI Chat Completions ↔ neutral payloads: mapping details, refusals, synthesized responses."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from pytest_blackbox.errors import BlackboxUnsupportedError
from pytest_blackbox.providers import CallIds, openai_chat
from pytest_blackbox.trace.canonical import pretty_json

# -- helpers -----------------------------------------------------------------------------------


def request(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}
    body.update(fields)
    return body


def call(provider_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": provider_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def completion(message: dict[str, Any], finish_reason: Any = "stop", **choice: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-FAKEFAKEFAKE",
        "object": "chat.completion",
        "created": 1_790_000_000,
        "model": "gpt-5",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "refusal": None, **message},
                "finish_reason": finish_reason,
                "logprobs": None,
                **choice,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def refusal_message(action: Any) -> str:
    with pytest.raises(BlackboxUnsupportedError) as caught:
        action()
    message = str(caught.value)
    assert "\n" not in message
    return message


def messages_of(*messages: dict[str, Any], ids: CallIds | None = None) -> list[dict[str, Any]]:
    body = request(messages=list(messages))
    result: list[dict[str, Any]] = list(openai_chat.normalize_request(body, ids or CallIds())["messages"])  # type: ignore[arg-type]
    return result


# -- requests ----------------------------------------------------------------------------------


def test_request_key_order_is_messages_tools_system_model_params() -> None:
    body = request(
        messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
        tools=[{"type": "function", "function": {"name": "f"}}],
        seed=1,
    )
    assert list(openai_chat.normalize_request(body, CallIds())) == [
        "messages",
        "tools",
        "systemPrompt",
        "model",
        "params",
    ]


def test_without_leading_instructions_there_is_no_system_prompt() -> None:
    assert openai_chat.normalize_request(request(), CallIds()) == {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [],
        "model": "gpt-5",
    }


def test_leading_system_and_developer_messages_join_into_the_system_prompt() -> None:
    body = request(
        messages=[
            {"role": "developer", "content": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}]},
            {"role": "system", "content": None},
            {"role": "system", "content": "C"},
            {"role": "user", "content": "hi"},
        ]
    )
    assert openai_chat.normalize_request(body, CallIds())["systemPrompt"] == "A\n\nB\n\n\n\nC"


def test_user_and_assistant_text() -> None:
    assert messages_of(
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": None},
        {"role": "assistant", "content": "done", "tool_calls": []},
        {"role": "user", "content": ""},
    ) == [
        {"role": "user", "content": "a\n\nb"},
        {"role": "assistant", "content": ""},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": ""},
    ]


def test_assistant_tool_calls_become_parts_with_text_first_when_non_empty() -> None:
    messages = messages_of(
        {"role": "assistant", "content": "Checking.", "tool_calls": [call("call_A", "f", "{}")]},
        {"role": "assistant", "content": "", "tool_calls": [call("call_B", "g", '{"x": 1}')]},
    )
    assert messages == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "toolCallId": "call-0", "toolName": "f", "toolInput": {}},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "toolCallId": "call-1", "toolName": "g", "toolInput": {"x": 1}}],
        },
    ]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"city": "Paris"}', {"city": "Paris"}),
        ("[1, 2.5, null]", [1, 2.5, None]),
        ("not json", "not json"),
        ("", ""),
        ('{"a": 1', '{"a": 1'),
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ('"Paris"', '"Paris"'),
        ('"{\\"a\\":1}"', '"{\\"a\\":1}"'),
        ("1e400", None),
        ("9007199254740993", 9007199254740992.0),
        ("  42 ", 42),
        (None, {}),
        ({"already": "parsed"}, {"already": "parsed"}),
    ],
)
def test_tool_call_arguments(arguments: Any, expected: Any) -> None:
    messages = messages_of(
        {"role": "assistant", "content": None, "tool_calls": [call("call_A", "f", arguments)]}
    )
    tool_input = messages[0]["content"][0]["toolInput"]
    assert tool_input == expected
    assert type(tool_input) is type(expected)


def test_consecutive_tool_messages_group_into_one_user_turn_never_parsed() -> None:
    ids = CallIds()
    messages = messages_of(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("call_A", "f", "{}"), call("call_B", "g", "{}")],
        },
        {"role": "tool", "tool_call_id": "call_A", "content": '{"temp": 18}'},
        {
            "role": "tool",
            "tool_call_id": "call_B",
            "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}],
        },
        {"role": "user", "content": "next"},
        {"role": "tool", "tool_call_id": "call_Z", "content": "late"},
        ids=ids,
    )
    assert messages[1:] == [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "toolCallId": "call-0", "toolName": "f", "result": '{"temp": 18}'},
                {"type": "tool_result", "toolCallId": "call-1", "toolName": "g", "result": "x\n\ny"},
            ],
        },
        {"role": "user", "content": "next"},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "toolCallId": "call-2", "toolName": "unknown", "result": "late"}
            ],
        },
    ]


def test_a_tool_message_saying_error_is_still_a_result() -> None:
    ids = CallIds()
    ids.neutral("call_A", "f")
    messages = messages_of({"role": "tool", "tool_call_id": "call_A", "content": "Error: boom"}, ids=ids)
    assert messages == [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "toolCallId": "call-0", "toolName": "f", "result": "Error: boom"}
            ],
        }
    ]


def test_a_tool_message_naming_its_function_records_like_one_without_a_name() -> None:
    """instructor names the function in each re-ask's tool message; the recorded toolName says it already."""
    named, unnamed = CallIds(), CallIds()
    named.neutral("call_A", "f")
    unnamed.neutral("call_A", "f")
    message = {"role": "tool", "tool_call_id": "call_A", "content": "invalid"}
    assert messages_of({**message, "name": "f"}, ids=named) == messages_of(message, ids=unnamed)


def test_a_tool_message_naming_another_function_is_refused() -> None:
    ids = CallIds()
    ids.neutral("call_A", "f")
    message = refusal_message(
        lambda: messages_of({"role": "tool", "tool_call_id": "call_A", "content": "x", "name": "g"}, ids=ids)
    )
    assert message.startswith("a tool message name other than its call's function name is not supported yet")
    assert message.endswith("(messages[0].name)")


def test_tools_map_to_neutral_definitions() -> None:
    tools = [
        {"type": "function", "function": {"name": "a", "description": "A", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "b", "strict": False}},
        {
            "type": "function",
            "function": {"name": "c", "description": None, "parameters": [], "strict": None},
        },
    ]
    assert openai_chat.normalize_request(request(tools=tools), CallIds())["tools"] == [
        {"name": "a", "description": "A", "inputSchema": {"type": "object"}},
        {"name": "b", "description": ""},
        {"name": "c", "description": ""},
    ]


def test_strict_tools_are_recorded_as_tool_strict_after_the_other_params() -> None:
    tools = [
        {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}, "strict": True}},
        {"type": "function", "function": {"name": "b", "strict": False}},
        {"type": "function", "function": {"name": "c", "strict": None}},
        {"type": "function", "function": {"name": "d", "strict": True}},
    ]
    payload: Any = openai_chat.normalize_request(request(tools=tools, temperature=0), CallIds())
    assert list(payload["params"].items()) == [("temperature", 0), ("toolStrict", {"a": True, "d": True})]
    assert payload["tools"] == [
        {"name": "a", "description": "", "inputSchema": {"type": "object"}},
        {"name": "b", "description": ""},
        {"name": "c", "description": ""},
        {"name": "d", "description": ""},
    ]


def function_tool(**strict: bool) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, **strict}}


def test_strict_false_records_like_leaving_it_out() -> None:
    plain: Any = openai_chat.normalize_request(request(tools=[function_tool()]), CallIds())
    relaxed: Any = openai_chat.normalize_request(request(tools=[function_tool(strict=False)]), CallIds())
    assert relaxed == plain
    assert "params" not in plain


def test_making_a_tool_strict_changes_the_recorded_request() -> None:
    """``strict`` changes what the model may answer, so a strict replay must see it change."""
    strict: Any = openai_chat.normalize_request(request(tools=[function_tool(strict=True)]), CallIds())
    assert strict["params"] == {"toolStrict": {"f": True}}
    assert strict != openai_chat.normalize_request(request(tools=[function_tool()]), CallIds())


def test_params_use_neutral_names_in_table_order_and_skip_nulls() -> None:
    body = {
        "modalities": ["text"],
        "prediction": {"type": "content", "content": "x"},
        "verbosity": "low",
        "top_logprobs": 2,
        "logprobs": True,
        "logit_bias": {"50256": -100},
        "frequency_penalty": 0.5,
        "presence_penalty": -0.5,
        "reasoning_effort": "low",
        "seed": 7,
        "parallel_tool_calls": False,
        "stop": ["END"],
        "response_format": {"type": "json_object"},
        "tool_choice": "auto",
        "top_p": 0.9,
        "temperature": 0,
        "max_completion_tokens": 500,
        "max_tokens": None,
        "messages": [],
        "model": "gpt-5",
        "user": "u",
        "metadata": {"k": "v"},
        "store": True,
        "service_tier": "flex",
        "n": 1,
        "stream": False,
    }
    params: Any = openai_chat.normalize_request(body, CallIds())["params"]
    assert list(params.items()) == [
        ("maxTokens", 500),
        ("temperature", 0),
        ("topP", 0.9),
        ("toolChoice", "auto"),
        ("responseFormat", {"type": "json_object"}),
        ("stop", ["END"]),
        ("parallelToolCalls", False),
        ("seed", 7),
        ("reasoningEffort", "low"),
        ("presencePenalty", -0.5),
        ("frequencyPenalty", 0.5),
        ("logitBias", {"50256": -100}),
        ("logprobs", True),
        ("topLogprobs", 2),
        ("verbosity", "low"),
        ("prediction", {"type": "content", "content": "x"}),
        ("modalities", ["text"]),
    ]


def test_stream_and_stream_options_are_transport_details_and_not_recorded() -> None:
    plain: Any = openai_chat.normalize_request(request(), CallIds())
    streamed = request(stream=True, stream_options={"include_usage": True, "include_obfuscation": False})
    assert openai_chat.normalize_request(streamed, CallIds()) == plain
    assert "params" not in plain


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
def test_either_token_limit_is_max_tokens(field: str) -> None:
    assert openai_chat.normalize_request(request(**{field: 9}), CallIds())["params"] == {"maxTokens": 9}


def test_a_schema_with_a_usage_property_records() -> None:
    response_format = {
        "type": "json_schema",
        "json_schema": {
            "name": "s",
            "schema": {"type": "object", "properties": {"usage": {"type": "number"}}},
        },
    }
    params: Any = openai_chat.normalize_request(request(response_format=response_format), CallIds())["params"]
    assert params == {"responseFormat": response_format}


def test_several_choices_are_recorded_as_a_choice_count_and_one_is_left_out() -> None:
    assert openai_chat.normalize_request(request(n=3), CallIds())["params"] == {"choiceCount": 3}
    assert "params" not in openai_chat.normalize_request(request(n=1), CallIds())


REQUEST_REFUSALS = [
    pytest.param(
        {"modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"}},
        "the audio request field (audio output) is not supported yet",
        "(audio)",
        id="audio",
    ),
    pytest.param(
        {"functions": [{"name": "f"}]}, "the legacy functions request field", "(functions)", id="functions"
    ),
    pytest.param(
        {"function_call": "auto"}, "the legacy function_call request field", "(function_call)", id="fn-call"
    ),
    pytest.param(
        {"max_tokens": 10, "max_completion_tokens": 20},
        "both max_tokens and max_completion_tokens in one request",
        "(max_tokens, max_completion_tokens)",
        id="both-limits",
    ),
    pytest.param(
        {"messages": [{"role": "user", "content": "hi", "name": "alice"}]},
        "a message name is not supported yet",
        "(messages[0].name)",
        id="user-name",
    ),
    pytest.param(
        {"messages": [{"role": "system", "content": "s", "name": "sys"}]},
        "a message name",
        "(messages[0].name)",
        id="system-name",
    ),
    pytest.param(
        {
            "messages": [
                {"role": "user", "content": "a"},
                {"role": "assistant", "function_call": {"name": "f"}},
            ]
        },
        "a legacy function_call in the history",
        "(messages[1].function_call)",
        id="history-function-call",
    ),
    pytest.param(
        {"messages": [{"role": "assistant", "audio": {"id": "audio_1"}}]},
        "audio in the history",
        "(messages[0].audio)",
        id="history-audio",
    ),
    pytest.param(
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "refusal": "no"},
            ]
        },
        "an assistant refusal in the history",
        "(messages[1].refusal)",
        id="history-refusal",
    ),
    pytest.param(
        {"messages": [{"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}]},
        "a refusal part in the history",
        "(messages[0].content[0])",
        id="history-refusal-part",
    ),
    pytest.param(
        {"messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": "late"}]},
        "a system message after the conversation starts",
        "(messages[1])",
        id="late-system",
    ),
    pytest.param(
        {"messages": [{"role": "user", "content": "hi"}, {"role": "developer", "content": "late"}]},
        "a developer message after the conversation starts",
        "(messages[1])",
        id="late-developer",
    ),
    pytest.param(
        {"messages": [{"role": "function", "name": None, "content": "x"}]},
        '"function" messages is not supported yet',
        "(messages[0].role)",
        id="function-role",
    ),
    pytest.param({"messages": [{"content": "x"}]}, "null messages", "(messages[0].role)", id="no-role"),
    pytest.param(
        {"tools": [{"type": "custom", "custom": {"name": "grammar"}}]},
        '"custom" tools is not supported yet; only function tools can be recorded in this version',
        "(tools[0])",
        id="custom-tool",
    ),
    pytest.param(
        {
            "messages": [
                {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x", "y": 1}}]}
            ]
        },
        "the field y of a media block is not supported yet",
        "(messages[0].content[0].image_url.y)",
        id="image-part-unknown-field",
    ),
    pytest.param(
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "video"}]}]},
        '"video" content',
        "(messages[0].content[1])",
        id="video-part",
    ),
    pytest.param(
        {
            "messages": [
                {"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "g"}}]}
            ]
        },
        '"custom" tool calls',
        "(messages[0].tool_calls[0])",
        id="custom-tool-call",
    ),
]


@pytest.mark.parametrize(("fields", "what", "field"), REQUEST_REFUSALS)
def test_request_refusals_name_the_field(fields: dict[str, Any], what: str, field: str) -> None:
    message = refusal_message(lambda: openai_chat.normalize_request(request(**fields), CallIds()))
    assert message.startswith(what)
    assert message.endswith(field)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("[]", "the request body must be a JSON object"),
        ({"messages": [[]]}, "messages[0] must be a JSON object"),
        (
            {"messages": [{"role": "user", "content": {"text": "x"}}]},
            "messages[0].content must be a string or",
        ),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id must be a string"),
        ({"messages": [{"role": "assistant", "tool_calls": {}}]}, "messages[0].tool_calls must be a list"),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": 1, "type": "function", "function": {"name": "f"}}],
                    }
                ]
            },
            "messages[0].tool_calls[0].id must be a string",
        ),
        ({"tools": [{"type": "function", "function": {}}]}, "tools[0].function.name must be a string"),
        (
            {"tools": [{"type": "function", "function": {"name": "f", "strict": 1}}]},
            "tools[0].function.strict must be true, false or null",
        ),
    ],
)
def test_malformed_requests_are_refused_naming_the_field(body: Any, expected: str) -> None:
    assert refusal_message(lambda: openai_chat.normalize_request(body, CallIds())).startswith(expected)


# -- responses ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "finish", "expected"),
    [
        ({"content": "Hello"}, "stop", {"type": "final_answer", "text": "Hello"}),
        ({"content": ""}, "stop", {"type": "final_answer", "text": ""}),
        ({"content": ""}, "length", {"type": "final_answer", "text": "", "stop": "length"}),
        ({"content": "x"}, None, {"type": "final_answer", "text": "x", "omitted": ["finishReason"]}),
        ({"content": "x", "annotations": []}, "stop", {"type": "final_answer", "text": "x"}),
        ({"refusal": ""}, "stop", {"type": "final_answer", "text": "", "stop": "refusal"}),
        (
            {"content": "Checking.", "tool_calls": [call("call_A", "f", '{"a":1}')]},
            "tool_calls",
            {
                "type": "tool_calls",
                "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {"a": 1}}],
                "text": "Checking.",
            },
        ),
        (
            {"content": "", "tool_calls": [call("call_A", "f", "{}")]},
            "tool_calls",
            {
                "type": "tool_calls",
                "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {}}],
                "text": "",
            },
        ),
        (
            {"tool_calls": [call("call_A", "f", None), call("call_B", "g", None)]},
            "tool_calls",
            {
                "type": "tool_calls",
                "calls": [
                    {"toolCallId": "call-0", "toolName": "f", "toolInput": {}},
                    {"toolCallId": "call-1", "toolName": "g", "toolInput": {}},
                ],
                "omitted": ["callArguments"],
            },
        ),
        (
            {"tool_calls": [call("call_A", "f", '{"a":')]},
            "length",
            {
                "type": "tool_calls",
                "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": '{"a":'}],
                "stop": "length",
            },
        ),
    ],
)
def test_response_outputs(message: dict[str, Any], finish: Any, expected: dict[str, Any]) -> None:
    output: Any = openai_chat.normalize_response(completion(message, finish), CallIds())
    assert output == expected
    assert list(output) == list(expected)


def test_a_minimal_body_with_only_a_message_records() -> None:
    body = {"choices": [{"message": {"role": "assistant", "content": "hi"}}]}
    assert openai_chat.normalize_response(body, CallIds()) == {
        "type": "final_answer",
        "text": "hi",
        "omitted": ["finishReason"],  # the SDK hands over finish_reason None, and so does a replay
    }


RESPONSE_REFUSALS = [
    pytest.param({"choices": []}, "choices[0].message must be a JSON object", id="no-choices"),
    pytest.param(
        {"choices": [{"finish_reason": "stop"}]}, "choices[0].message must be a JSON object", id="no-message"
    ),
    pytest.param(
        completion(
            {
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            "content_filter",
        ),
        'tool calls with finish_reason "content_filter"',
        id="content-filter-with-calls",
    ),
    pytest.param(
        completion({"function_call": {"name": "f", "arguments": "{}"}}, "function_call"),
        "a legacy function_call response is not supported yet; "
        "use tools and tool_choice instead of the legacy functions API (choices[0].message.function_call)",
        id="legacy-function-call",
    ),
    pytest.param(
        completion({"content": "x"}, "something_new"),
        'finish_reason "something_new" is not supported yet',
        id="unknown-finish",
    ),
    pytest.param(
        completion({"audio": {"id": "audio_1", "data": "AAAA", "expires_at": 1, "transcript": "hi"}}),
        "audio in a response is not supported yet",
        id="audio",
    ),
    pytest.param(
        completion(
            {"content": None, "refusal": "no"},
            logprobs={"content": None, "refusal": [{"token": "no", "logprob": -0.1}]},
        ),
        "logprobs of a refusal is not supported yet",
        id="refusal-logprobs",
    ),
    pytest.param(
        completion({"content": "hi", "annotations": [{"type": "url_citation", "url": "u"}]}),
        'an annotation of type "url_citation" is not supported yet',
        id="annotations",
    ),
    pytest.param(
        completion({"content": "partial", "refusal": "no"}),
        "a refusal together with content, tool calls or a finish_reason other than stop is not supported yet",
        id="refusal-with-content",
    ),
    pytest.param(
        completion({"content": "", "refusal": "no"}),
        "a refusal together with content",
        id="refusal-with-empty-content",
    ),
    pytest.param(
        completion({"refusal": "no", "tool_calls": [call("call_A", "f", "{}")]}, "tool_calls"),
        "a refusal together with content",
        id="refusal-with-calls",
    ),
    pytest.param(
        completion({"refusal": "no"}, "length"), "a refusal together with content", id="refusal-length"
    ),
    pytest.param(
        completion({"tool_calls": [call("call_A", "f", None), call("call_B", "g", "{}")]}, "tool_calls"),
        "tool calls of which only some have null arguments is not supported yet; a replay gives null "
        "arguments back to every call of an answer or to none "
        "(choices[0].message.tool_calls[].function.arguments)",
        id="some-null-arguments",
    ),
    pytest.param(
        completion({"tool_calls": [call("call_A", "f", "{}")]}, "stop"),
        'tool calls with finish_reason "stop" '
        "(the API returns stop when tool_choice names a function) is not supported yet",
        id="calls-with-stop",
    ),
    pytest.param(
        completion({"content": None}, "stop"),
        "a response with no content, tool calls or refusal is not supported yet",
        id="null-content",
    ),
    pytest.param(
        completion({"content": None}, "length"),
        "a response with no content, tool calls or refusal",
        id="null-content-length",
    ),
    pytest.param(
        completion(
            {"tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "g", "input": "x"}}]},
            "tool_calls",
        ),
        '"custom" tool calls is not supported yet',
        id="custom-call",
    ),
    pytest.param(
        completion({"content": [{"type": "text", "text": "x"}]}),
        "choices[0].message.content must be a string or null",
        id="content-parts",
    ),
]


@pytest.mark.parametrize(("body", "expected"), RESPONSE_REFUSALS)
def test_response_refusals_name_the_problem_and_assign_no_ids(body: dict[str, Any], expected: str) -> None:
    ids = CallIds()
    assert refusal_message(lambda: openai_chat.normalize_response(body, ids)).startswith(expected)
    assert ids.peek() == "call-0"


# -- synthesized responses ---------------------------------------------------------------------


def test_synthesized_tool_calls_have_the_exact_replay_shape() -> None:
    output = {
        "type": "tool_calls",
        "calls": [
            {
                "toolCallId": "call-0",
                "toolName": "weather",
                "toolInput": {"city": "Paris", "days": 2.0, "eps": 1e-7},
            },
            {"toolCallId": "call-1", "toolName": "weather", "toolInput": "not json"},
        ],
    }
    body = openai_chat.synthesize_response(output, output_index=3, model="gpt-5", timestamp=1_790_000_000_999)
    assert pretty_json(body) == pretty_json(
        {
            "id": "blackbox-replay-3",
            "object": "chat.completion",
            "created": 1_790_000_000,
            "model": "gpt-5",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": None,
                        "annotations": [],
                        "tool_calls": [
                            {
                                "id": "call-0",
                                "type": "function",
                                "function": {
                                    "name": "weather",
                                    "arguments": '{"city":"Paris","days":2,"eps":1e-7}',
                                },
                            },
                            {
                                "id": "call-1",
                                "type": "function",
                                "function": {"name": "weather", "arguments": "not json"},
                            },
                        ],
                    },
                    "finish_reason": "tool_calls",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
    )


@pytest.mark.parametrize(
    ("output", "content", "refusal", "finish"),
    [
        ({"type": "final_answer", "text": "hi"}, "hi", None, "stop"),
        ({"type": "final_answer", "text": ""}, "", None, "stop"),
        ({"type": "final_answer", "text": "Ha", "stop": "length"}, "Ha", None, "length"),
        ({"type": "final_answer", "text": "I can't.", "stop": "refusal"}, None, "I can't.", "stop"),
        (
            {
                "type": "tool_calls",
                "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {}}],
                "text": "T",
            },
            "T",
            None,
            "tool_calls",
        ),
        (
            {
                "type": "tool_calls",
                "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {}}],
                "text": "",
            },
            "",
            None,
            "tool_calls",
        ),
        (
            {"type": "final_answer", "text": "x", "omitted": ["finishReason"]},
            "x",
            None,
            None,
        ),
        (
            {
                "type": "tool_calls",
                "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {}}],
                "stop": "length",
            },
            None,
            None,
            "length",
        ),
    ],
)
def test_synthesized_content_refusal_and_finish_reason(
    output: dict[str, Any], content: str | None, refusal: str | None, finish: str | None
) -> None:
    body = openai_chat.synthesize_response(output, output_index=1, model=None, timestamp=1500.7)
    choice = body["choices"][0]
    assert (choice["message"]["content"], choice["message"]["refusal"], choice["finish_reason"]) == (
        content,
        refusal,
        finish,
    )
    assert body["created"] == 1
    assert body["model"] == "unknown"
    assert ("tool_calls" in choice["message"]) is (output["type"] == "tool_calls")


def test_a_json_encoded_string_argument_keeps_its_encoding_through_a_replay() -> None:
    encoded = json.dumps(json.dumps({"a": 1}))
    ids = CallIds()
    recorded: Any = openai_chat.normalize_response(
        completion({"tool_calls": [call("call_A", "f", encoded)]}, "tool_calls"), ids
    )
    body = openai_chat.synthesize_response(recorded, output_index=1, model="gpt-5", timestamp=0)
    assert body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == encoded


def test_the_synthesized_body_does_not_share_the_recorded_output() -> None:
    output = {"type": "final_answer", "text": "x"}
    recorded = copy.deepcopy(output)
    body = openai_chat.synthesize_response(output, output_index=1, model="m", timestamp=0)
    body["choices"][0]["message"]["content"] = "changed"
    assert output == recorded


def test_synthesized_bodies_pass_the_sdks_strict_validation() -> None:
    output = {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "weather", "toolInput": {"city": "Paris"}}],
        "text": "Checking.",
    }
    body = openai_chat.synthesize_response(output, output_index=1, model="gpt-5", timestamp=0)
    completion_ = ChatCompletion.model_validate(body, strict=True)
    message = completion_.choices[0].message
    assert message.tool_calls is not None
    tool_call = message.tool_calls[0]
    assert tool_call.type == "function"
    assert (tool_call.id, tool_call.function.name, tool_call.function.arguments) == (
        "call-0",
        "weather",
        '{"city":"Paris"}',
    )
    assert completion_.choices[0].finish_reason == "tool_calls"
    assert completion_.usage is not None and completion_.usage.total_tokens == 0
    refused = openai_chat.synthesize_response(
        {"type": "final_answer", "text": "no", "stop": "refusal"}, output_index=2, model=None, timestamp=0
    )
    assert ChatCompletion.model_validate(refused, strict=True).choices[0].message.refusal == "no"


def test_error_body_has_the_openai_error_shape() -> None:
    expected = {
        "error": {
            "message": "[blackbox] boom",
            "type": "invalid_request_error",
            "param": None,
            "code": "blackbox",
        }
    }
    assert openai_chat.error_body("boom") == expected
    assert openai_chat.error_body("[blackbox] boom") == expected


def test_is_stream_request() -> None:
    assert openai_chat.is_stream_request({"stream": True}) is True
    assert (
        openai_chat.is_stream_request({"stream": False, "stream_options": {"include_usage": True}}) is False
    )
    assert openai_chat.is_stream_request(None) is False


@pytest.mark.parametrize(
    ("tool_input", "arguments"),
    [
        ({"b": 1.0, "a": [1e21, 1e-7, -0.0, 0.1]}, '{"b":1,"a":[1e+21,1e-7,0,0.1]}'),
        ({"s": "é\n\u2028\ud800"}, '{"s":"é\\n\u2028\\ud800"}'),
        ([None, True, {}], "[null,true,{}]"),
        (12, "12"),
        (None, "null"),
    ],
)
def test_arguments_are_written_as_javascript_writes_them(tool_input: Any, arguments: str) -> None:
    output = {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": tool_input}],
    }
    body = openai_chat.synthesize_response(output, output_index=1, model="m", timestamp=0)
    assert body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == arguments
