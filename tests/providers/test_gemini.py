"""Gemini generateContent ↔ neutral payloads: mapping details, call ids, refusals, synthesized responses."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from google.genai import types
from hypothesis import given
from hypothesis import strategies as st

from pytest_blackbox.errors import BlackboxUnsupportedError
from pytest_blackbox.providers import CallIds, gemini, provider_for_path
from pytest_blackbox.providers.gemini import GeminiCall
from pytest_blackbox.providers.sse import parse_events, pieces
from pytest_blackbox.trace.canonical import pretty_json

from .outputs import neutral_outputs, object_inputs

# -- helpers -----------------------------------------------------------------------------------


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def text(value: str, **fields: Any) -> dict[str, Any]:
    return {"text": value, **fields}


def call(name: str, args: Any, provider_id: str | None = None, **fields: Any) -> dict[str, Any]:
    function_call: dict[str, Any] = {"name": name, "args": args}
    if provider_id is not None:
        function_call["id"] = provider_id
    return {"functionCall": function_call, **fields}


def answer(name: str, value: Any, provider_id: str | None = None) -> dict[str, Any]:
    function_response: dict[str, Any] = {"name": name, "response": value}
    if provider_id is not None:
        function_response["id"] = provider_id
    return {"functionResponse": function_response}


def request(*contents: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"contents": list(contents) or [user(text("hi"))], **fields}


def response(*parts: dict[str, Any], finish: str | None = "STOP", **fields: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "mCZSaPjXG9yv1e8PzZGr0Q4",
        **fields,
    }


def refusal_message(call_: Any) -> str:
    with pytest.raises(BlackboxUnsupportedError) as caught:
        call_()
    message = str(caught.value)
    assert "\n" not in message
    return message


def gemini_call(stream: bool = False) -> GeminiCall:
    found = call_for(
        "/v1beta/models/gemini-2.5-flash:" + ("streamGenerateContent" if stream else "generateContent")
    )
    assert found is not None
    return found


def call_for(path: str) -> GeminiCall | None:
    return gemini.for_path(path)


TOOLS = [
    {
        "functionDeclarations": [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters_json_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
                "response_json_schema": {"type": "object", "additionalProperties": True},
            },
            {
                "name": "get_time",
                "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
            },
            {"name": "no_arguments", "description": "Takes nothing."},
        ]
    }
]


# -- the path ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1beta/models/gemini-2.5-flash:generateContent", ("gemini-2.5-flash", False)),
        ("/v1/models/gemini-3-pro:streamGenerateContent", ("gemini-3-pro", True)),
        ("/proxy/v1beta/tunedModels/my-model-42:generateContent", ("tunedModels/my-model-42", False)),
        (
            "/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent",
            ("gemini-2.5-flash", False),
        ),
        (
            "/v1/projects/p/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent",
            ("gemini-2.5-pro", True),
        ),
        ("/v1beta/models/gemini-2.5-flash:countTokens", None),
        ("/v1beta/models/gemini-2.5-flash", None),
        ("/v1beta/models/gemini-2.5-flash:generateContent/extra", None),
    ],
)
def test_the_path_names_the_model_and_whether_to_stream(path: str, expected: Any) -> None:
    found = call_for(path)
    assert (found and (found.model, found.stream)) == expected
    assert (provider_for_path(path + "?alt=sse") is not None) == (expected is not None)


def test_streaming_is_decided_by_the_path_and_never_by_the_body() -> None:
    assert gemini_call(stream=True).is_stream_request({}) is True
    assert gemini_call(stream=False).is_stream_request({"stream": True}) is False


def test_vertex_ai_records_the_model_its_path_names() -> None:
    """The project and location are where the call goes, like a host: not part of the input."""
    path = "/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash"
    path += ":generateContent"
    vertex = call_for(path)
    assert vertex is not None
    assert vertex.normalize_request(request(), CallIds(), path=path)["model"] == "gemini-2.5-flash"


# -- requests ----------------------------------------------------------------------------------


def test_a_request_maps_to_the_neutral_shape_in_key_order() -> None:
    body = request(
        user(text("What's the weather in Paris?")),
        systemInstruction={"parts": [text("You are terse."), text("Answer in English.")], "role": "user"},
        tools=TOOLS,
        generationConfig={"temperature": 0.2, "maxOutputTokens": 256},
        labels={"team": "search"},
    )
    payload: Any = gemini_call().normalize_request(body, CallIds())
    assert pretty_json(payload) == pretty_json(
        {
            "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
            "tools": [
                {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
                {
                    "name": "get_time",
                    "description": "",
                    "inputSchema": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
                },
                {"name": "no_arguments", "description": "Takes nothing."},
            ],
            "systemPrompt": "You are terse.\n\nAnswer in English.",
            "model": "gemini-2.5-flash",
            "params": {"maxTokens": 256, "temperature": 0.2},
        }
    )


def test_params_use_neutral_names_in_table_order() -> None:
    schema = {"type": "object", "properties": {"usage": {"type": "integer"}}}
    body = request(
        generationConfig={
            "frequencyPenalty": 0.1,
            "presencePenalty": 0.2,
            "seed": 7,
            "thinkingConfig": {"thinking_budget": 0},
            "responseJsonSchema": schema,
            "responseMimeType": "application/json",
            "stopSequences": ["END"],
            "topK": 40,
            "topP": 0.9,
            "temperature": 0.0,
            "maxOutputTokens": 100,
            "candidateCount": 1,
            "responseModalities": ["TEXT"],
            "mediaResolution": "MEDIA_RESOLUTION_LOW",
        },
        toolConfig={"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
        safetySettings=[{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        serviceTier="standard",
    )
    params: Any = gemini.normalize_request(body, CallIds())["params"]
    assert list(params.items()) == [
        ("maxTokens", 100),
        ("temperature", 0),
        ("topP", 0.9),
        ("topK", 40),
        ("toolChoice", {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}}),
        ("stop", ["END"]),
        ("responseFormat", {"responseMimeType": "application/json", "responseJsonSchema": schema}),
        ("thinking", {"thinking_budget": 0}),
        ("seed", 7),
        ("presencePenalty", 0.2),
        ("frequencyPenalty", 0.1),
        ("safetySettings", [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]),
    ]


def test_a_minimal_request_has_no_system_prompt_model_or_params() -> None:
    assert gemini.normalize_request(request(generationConfig={}), CallIds()) == {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [],
    }


def test_consecutive_contents_of_one_role_are_one_turn_and_thoughts_are_dropped() -> None:
    """A streamed answer comes back as one model content per chunk; a replay streams other pieces."""
    streamed = request(
        user(text("Weather in Paris?")),
        user(text("And in Rome?")),
        model(text("Let me think.", thought=True)),
        model(text("Check")),
        model(text("ing.", thoughtSignature="c2ln"), call("get_weather", {"city": "Paris"}, "a1")),
        model(call("get_weather", {"city": "Rome"}, "a2", thoughtSignature="c2ln")),
        user(answer("get_weather", {"result": {"tempC": 21}}, "a1")),
        user(answer("get_weather", {"result": {"tempC": 24}}, "a2")),
    )
    whole = request(
        user(text("Weather in Paris?"), text("And in Rome?")),
        model(
            text("Checking."),
            call("get_weather", {"city": "Paris"}, "a1"),
            call("get_weather", {"city": "Rome"}, "a2"),
        ),
        user(
            answer("get_weather", {"result": {"tempC": 21}}, "a1"),
            answer("get_weather", {"result": {"tempC": 24}}, "a2"),
        ),
    )
    expected = [
        {"role": "user", "content": "Weather in Paris?\n\nAnd in Rome?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "toolCallId": "call-0",
                    "toolName": "get_weather",
                    "toolInput": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "toolCallId": "call-1",
                    "toolName": "get_weather",
                    "toolInput": {"city": "Rome"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "toolCallId": "call-0",
                    "toolName": "get_weather",
                    "result": {"result": {"tempC": 21}},
                },
                {
                    "type": "tool_result",
                    "toolCallId": "call-1",
                    "toolName": "get_weather",
                    "result": {"result": {"tempC": 24}},
                },
            ],
        },
    ]
    assert gemini.normalize_request(streamed, CallIds())["messages"] == expected
    assert gemini.normalize_request(whole, CallIds())["messages"] == expected


def test_a_model_turn_of_text_only_is_a_string_and_empty_text_is_dropped() -> None:
    body = request(user(text("hi")), model(text(""), text("Hello"), text(" there")), user(text("")))
    assert gemini.normalize_request(body, CallIds())["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello there"},
        {"role": "user", "content": ""},
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"result": {"tempC": 21}}, {"result": {"result": {"tempC": 21}}}),
        ({"output": "21 °C"}, {"result": {"output": "21 °C"}}),
        ({"error": "city not found"}, {"error": "city not found"}),
        ({"error": {"code": 404}}, {"result": {"error": {"code": 404}}}),
        ({"error": "x", "detail": "y"}, {"result": {"error": "x", "detail": "y"}}),
        (None, {"result": {}}),
    ],
)
def test_function_response_values(value: Any, expected: dict[str, Any]) -> None:
    body = request(user(text("q")), model(call("f", {}, "p1")), user(answer("f", value, "p1")))
    result: Any = gemini.normalize_request(body, CallIds())["messages"][2]["content"][0]
    assert result == {"type": "tool_result", "toolCallId": "call-0", "toolName": "f", **expected}


def test_a_multimodal_function_response_is_its_response_then_its_media() -> None:
    blob = {"mimeType": "image/png", "data": "iVBORw==", "displayName": "screen.png"}
    response = {"name": "shot", "response": {"ok": True, "at": 1}, "parts": [{"inlineData": blob}]}
    body = request(user(text("q")), model(call("shot", {})), user({"functionResponse": response}))
    payload: Any = gemini.normalize_request(body, CallIds())
    result = payload["messages"][2]["content"][0]["result"]
    assert result[0] == {"type": "text", "text": '{"at":1,"ok":true}'}
    assert result[1]["type"] == "media" and result[1]["kind"] == "image" and result[1]["name"] == "screen.png"
    assert result[1]["byteLength"] == 4
    empty = {**response, "response": {}}
    payload = gemini.normalize_request(
        request(user(text("q")), model(call("shot", {})), user({"functionResponse": empty})), CallIds()
    )
    assert [part["type"] for part in payload["messages"][2]["content"][0]["result"]] == ["media"]


def test_function_responses_without_ids_answer_the_calls_before_them_by_name_in_order() -> None:
    """Automatic function calling answers with name and value only, in the calls' order."""
    body = request(
        user(text("q")),
        model(
            call("get_weather", {"city": "Paris"}, "p1"),
            call("get_time", {}, "p2"),
            call("get_weather", {"city": "Rome"}, "p3"),
        ),
        user(
            answer("get_time", {"result": "14:05"}),
            answer("get_weather", {"result": 1}),
            answer("get_weather", {"result": 2}),
        ),
    )
    results: Any = gemini.normalize_request(body, CallIds())["messages"][2]["content"]
    assert [(part["toolCallId"], part["toolName"]) for part in results] == [
        ("call-1", "get_time"),
        ("call-0", "get_weather"),
        ("call-2", "get_weather"),
    ]


def snake_case(value: Any) -> Any:
    """A request as LiteLLM writes it: every field name in its proto (snake_case) spelling."""
    if isinstance(value, list):
        return [snake_case(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {re.sub(r"([A-Z])", r"_\1", key).lower(): snake_case(item) for key, item in value.items()}


def test_a_request_in_snake_case_records_as_in_camel_case() -> None:
    """The Gemini API reads both spellings; LiteLLM sends ``function_call`` and ``function_response``."""
    body = request(
        user(text("q")),
        model(text("Looking."), call("get_weather", {"city": "Paris"})),
        user(answer("get_weather", {"result": 1})),
        systemInstruction={"parts": [text("Be terse.")]},
        tools=[{"functionDeclarations": [{"name": "get_weather", "parameters": {"type": "object"}}]}],
    )
    wire = snake_case(body)
    assert "function_call" in json.dumps(wire) and "functionCall" not in json.dumps(wire)
    assert pretty_json(gemini.normalize_request(wire, CallIds())) == pretty_json(
        gemini.normalize_request(body, CallIds())
    )


def test_a_response_for_an_id_never_seen_gets_the_next_id_under_its_own_name() -> None:
    body = request(user(answer("lookup", {"result": 1}, "never-seen")))
    part: Any = gemini.normalize_request(body, CallIds())["messages"][0]["content"][0]
    assert (part["toolCallId"], part["toolName"]) == ("call-0", "lookup")


# -- call ids ----------------------------------------------------------------------------------


def first_turn() -> list[dict[str, Any]]:
    return [user(text("Weather in Paris and Rome?"))]


def second_request(calls_turn: dict[str, Any], *results: dict[str, Any]) -> dict[str, Any]:
    return request(*first_turn(), calls_turn, user(*results))


@pytest.mark.parametrize("provider_ids", [False, True], ids=["gemini-2-no-ids", "gemini-3-ids"])
def test_parallel_calls_keep_their_ids_into_the_next_request(provider_ids: bool) -> None:
    """Without ids, the history's calls are found by the conversation before them."""
    ids = CallIds()
    first = gemini_call()
    first.normalize_request(request(*first_turn()), ids)
    parts = [
        call("get_weather", {"city": "Paris"}, "x1" if provider_ids else None),
        call("get_weather", {"city": "Rome"}, "x2" if provider_ids else None),
    ]
    output: Any = first.normalize_response(response(text("Checking."), *parts), ids)
    assert output == {
        "type": "tool_calls",
        "calls": [
            {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}},
            {"toolCallId": "call-1", "toolName": "get_weather", "toolInput": {"city": "Rome"}},
        ],
        "text": "Checking.",
    }
    follow_up = second_request(
        model(text("Checking."), *parts),
        answer("get_weather", {"result": 21}),
        answer("get_weather", {"result": 24}),
    )
    messages: Any = gemini_call().normalize_request(follow_up, ids)["messages"]
    assert [part["toolCallId"] for part in messages[1]["content"][1:]] == ["call-0", "call-1"]
    assert [part["toolCallId"] for part in messages[2]["content"]] == ["call-0", "call-1"]
    assert ids.peek() == "call-2"


def test_a_conversation_run_again_gets_new_ids_and_its_history_finds_them() -> None:
    ids = CallIds()
    parts = (call("get_weather", {"city": "Paris"}),)
    for expected in ("call-0", "call-1"):
        exchange = gemini_call()
        exchange.normalize_request(request(*first_turn()), ids)
        output: Any = exchange.normalize_response(response(*parts), ids)
        assert output["calls"][0]["toolCallId"] == expected
        history = second_request(model(*parts), answer("get_weather", {"result": 1}))
        messages: Any = gemini_call().normalize_request(history, ids)["messages"]
        assert messages[1]["content"][0]["toolCallId"] == expected


def test_a_history_call_no_response_gave_gets_an_id_of_its_own() -> None:
    """A conversation started from a written history: its calls are numbered as first seen."""
    ids = CallIds()
    body = second_request(model(call("f", {"n": 1}), call("f", {"n": 2})), answer("f", {}), answer("f", {}))
    messages: Any = gemini.normalize_request(body, ids)["messages"]
    assert [part["toolCallId"] for part in messages[1]["content"]] == ["call-0", "call-1"]
    assert [part["toolCallId"] for part in messages[2]["content"]] == ["call-0", "call-1"]
    assert gemini.normalize_request(body, ids)["messages"] == messages


def test_replayed_ids_normalize_to_themselves() -> None:
    ids = CallIds()
    ids.register_identity(["call-0", "call-1"])
    body = second_request(
        model(call("f", {}, "call-0"), call("g", {}, "call-1")),
        answer("g", {}, "call-1"),
        answer("f", {}, "call-0"),
    )
    messages: Any = gemini.normalize_request(body, ids)["messages"]
    assert [part["toolCallId"] for part in messages[2]["content"]] == ["call-1", "call-0"]
    assert ids.peek() == "call-2"


def test_a_replayed_answer_is_found_by_a_history_without_its_ids() -> None:
    """An agent that rebuilds the history without ids replays like it recorded."""
    output = {
        "type": "tool_calls",
        "calls": [
            {"toolCallId": "call-4", "toolName": "f", "toolInput": {"n": 1}},
            {"toolCallId": "call-5", "toolName": "f", "toolInput": {"n": 2}},
        ],
    }
    ids = CallIds()
    ids.register_identity(["call-4", "call-5"])
    replayed = gemini_call()
    replayed.normalize_request(request(*first_turn()), ids)
    replayed.synthesize_response(output, output_index=1, model=None, timestamp=0)
    body = second_request(model(call("f", {"n": 1}), call("f", {"n": 2})), answer("f", {}), answer("f", {}))
    messages: Any = gemini.normalize_request(body, ids)["messages"]
    assert [part["toolCallId"] for part in messages[1]["content"]] == ["call-4", "call-5"]


def test_without_its_request_a_response_gives_id_less_calls_new_ids() -> None:
    ids = CallIds()
    output: Any = gemini.normalize_response(response(call("f", {}), call("f", {})), ids)
    assert [c["toolCallId"] for c in output["calls"]] == ["call-0", "call-1"]


# -- request refusals ----------------------------------------------------------------------------

REQUEST_REFUSALS = [
    pytest.param(
        request(user(text("see"), {"inlineData": {"mimeType": "image/png", "data": "iVBO", "extra": 1}})),
        "the field extra of a media block is not supported yet; a replay compares only the fields "
        "Blackbox records, so this one would not be compared (contents[0].parts[1].inlineData.extra)",
        id="image-unknown-field",
    ),
    pytest.param(
        request(
            user(text("q")), model({"executableCode": {"code": "print(1)", "language": "PYTHON", "x": 1}})
        ),
        'the field "x" of the executableCode part is not supported yet; it is not recorded in this version, '
        "so a replay could not give it back (contents[1].parts[0].executableCode.x)",
        id="code-execution-unknown-field",
    ),
    pytest.param(
        request(user({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}})),
        "a codeExecutionResult part in a user content is not supported yet; function calls and code "
        "execution belong in model contents (contents[0].parts[0])",
        id="code-result-from-user",
    ),
    pytest.param(
        request(
            user(text("q")),
            model(
                {"executableCode": {"code": "print(1)", "language": "PYTHON", "id": "c1"}},
                {"executableCode": {"code": "print(2)", "language": "PYTHON"}},
            ),
        ),
        "code execution parts with and without an id in one turn is not supported yet; a replay gives ids "
        "to all of them or to none (contents[1])",
        id="code-ids-mixed",
    ),
    pytest.param(
        request(tools=[{"computerUse": {"environment": "ENVIRONMENT_BROWSER"}}]),
        "the computerUse tool is not supported yet; only function declarations and the googleSearch, "
        "urlContext and codeExecution tools can be recorded in this version; do the work in a wrapped tool "
        "(tools[0].computerUse)",
        id="server-tool",
    ),
    pytest.param(
        request(tools=[{"functionDeclarations": [{"name": "f", "behavior": "NON_BLOCKING"}]}]),
        "(tools[0].functionDeclarations[0].behavior)",
        id="non-blocking-function",
    ),
    pytest.param(
        request(cachedContent="cachedContents/abc"),
        "cachedContent is not supported yet; the cached part of the conversation lives on the server, where "
        "a cassette can neither hold nor compare it; send the whole conversation in contents (cachedContent)",
        id="cached-content",
    ),
    pytest.param(request(continuationToken="dG9r"), "(continuationToken)", id="continuation"),
    pytest.param(
        request(generationConfig={"responseLogprobs": True, "logprobs": 3}),
        "log probabilities is not supported yet; it is not recorded in this version, so a replay could not "
        "give it back (generationConfig.responseLogprobs)",
        id="logprobs",
    ),
    pytest.param(
        request(generationConfig={"responseModalities": ["TEXT", "IMAGE"]}),
        "(generationConfig.responseModalities)",
        id="image-output",
    ),
    pytest.param(
        request(generationConfig={"speechConfig": {"voiceConfig": {}}}),
        "(generationConfig.speechConfig)",
        id="speech",
    ),
    pytest.param(
        request(toolConfig={"retrievalConfig": {"latLng": {}}}), "(toolConfig)", id="retrieval-config"
    ),
    pytest.param(
        request(toolConfig={"includeServerSideToolInvocations": True}),
        "(toolConfig.includeServerSideToolInvocations)",
        id="server-side-invocations",
    ),
    pytest.param(
        request(user(call("f", {}))),
        "a functionCall part in a user content is not supported yet; function calls and code execution "
        "belong in model contents (contents[0].parts[0])",
        id="call-from-user",
    ),
    pytest.param(
        request(user(text("q")), model(answer("f", {}))),
        "a functionResponse part in a model content is not supported yet; function responses belong in user "
        "contents (contents[1].parts[0])",
        id="response-from-model",
    ),
    pytest.param(
        request(user(text("q")), model(call("f", {})), user(answer("g", {}))),
        'a functionResponse for "g" that answers no functionCall of the model turn before it is not '
        "supported yet; give it the id of the call it answers, or send it right after that model turn "
        "(contents[2].parts[0].functionResponse)",
        id="unanswerable-response",
    ),
    pytest.param(
        request(user(text("q")), model(call("f", {})), user(answer("f", {}), answer("f", {}))),
        "(contents[2].parts[1].functionResponse)",
        id="two-responses-for-one-call",
    ),
    pytest.param(
        request(
            user(
                {"functionResponse": {"name": "f", "response": {}, "parts": [{"videoMetadata": {"fps": 1}}]}}
            )
        ),
        'the field "videoMetadata" of a functionResponse part is not supported yet; it is not recorded in '
        "this version, so a replay could not give it back (contents[0].parts[0].functionResponse.parts[0]."
        "videoMetadata)",
        id="function-response-part-field",
    ),
    pytest.param(
        request(user({"functionResponse": {"name": "f", "response": {}, "will_continue": True}})),
        "(contents[0].parts[0].functionResponse.willContinue)",
        id="live-api-function-response",
    ),
    pytest.param(
        request({"role": "function", "parts": [text("x")]}),
        'role "function" is not supported yet; Gemini contents are user or model turns (contents[0].role)',
        id="role",
    ),
    pytest.param(
        request(systemInstruction={"parts": [call("f", {})]}),
        "a functionCall part in the system instruction is not supported yet; it can hold only text "
        "(systemInstruction.parts[0])",
        id="system-call",
    ),
]


@pytest.mark.parametrize(("body", "expected"), REQUEST_REFUSALS)
def test_request_refusals_name_the_field(body: dict[str, Any], expected: str) -> None:
    message = refusal_message(lambda: gemini.normalize_request(body, CallIds()))
    assert message.endswith(expected) if expected.startswith("(") else message == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ([], "the request body must be a JSON object"),
        ({"contents": {"role": "user"}}, "contents must be a list"),
        ({"contents": ["hi"]}, "contents[0] must be a JSON object"),
        ({"contents": [{"role": "user", "parts": "hi"}]}, "contents[0].parts must be a list"),
        (
            {"contents": [user(text("a", functionCall={"name": "f"}))]},
            "contents[0].parts[0] must be a part with one",
        ),
        (
            {"contents": [model({"functionCall": {"name": "f"}, "function_call": {"name": "f"}})]},
            "contents[0].parts[0] must be a part naming its kind once",
        ),
        ({"contents": [user({"text": 3})]}, "contents[0].parts[0].text must be a string"),
        (
            {"contents": [model(call("f", [1, 2]))]},
            "contents[0].parts[0].functionCall.args must be a JSON object",
        ),
        (
            {"contents": [model({"functionCall": {"args": {}}})]},
            "contents[0].parts[0].functionCall.name must be",
        ),
        (
            {"contents": [user(answer("f", "done", "p"))]},
            "contents[0].parts[0].functionResponse.response must be",
        ),
        (
            {"contents": [], "tools": [{"functionDeclarations": {}}]},
            "tools[0].functionDeclarations must be a list",
        ),
        (
            {"contents": [], "tools": [{"functionDeclarations": [{"description": "x"}]}]},
            "tools[0].functionDeclarations[0].name",
        ),
        (
            {
                "contents": [],
                "tools": [
                    {"functionDeclarations": [{"name": "f", "parameters": {}, "parametersJsonSchema": {}}]}
                ],
            },
            "tools[0].functionDeclarations[0] must be a declaration with parameters or parametersJsonSchema",
        ),
        ({"contents": [], "generationConfig": []}, "generationConfig must be a JSON object"),
    ],
)
def test_malformed_requests_are_refused_naming_the_field(body: Any, expected: str) -> None:
    assert refusal_message(lambda: gemini.normalize_request(body, CallIds())).startswith(expected)


# -- responses ---------------------------------------------------------------------------------


def test_text_parts_join_as_the_sdk_joins_them_and_thoughts_are_dropped() -> None:
    body = response(text("private", thought=True), text("Hel"), text(""), text("lo", thoughtSignature="c2ln"))
    assert gemini.normalize_response(body, CallIds()) == {"type": "final_answer", "text": "Hello"}


@pytest.mark.parametrize(
    "candidate",
    [
        {"finishReason": "STOP", "index": 0},
        {"content": {"role": "model"}, "finishReason": "STOP", "index": 0},
    ],
    ids=["no-content", "no-parts"],
)
def test_no_text_at_all_is_an_empty_final_answer(candidate: dict[str, Any]) -> None:
    assert gemini.normalize_response({"candidates": [candidate]}, CallIds()) == {
        "type": "final_answer",
        "text": "",
    }


@pytest.mark.parametrize(
    ("finish", "stop"), [("STOP", None), ("MAX_TOKENS", "length"), ("SAFETY", "refusal")]
)
def test_finish_reasons(finish: str, stop: str | None) -> None:
    output: Any = gemini.normalize_response(response(text("Partial"), finish=finish), CallIds())
    assert output == {"type": "final_answer", "text": "Partial", **({"stop": stop} if stop else {})}


def test_calls_cut_off_by_max_tokens_keep_the_length_stop() -> None:
    output: Any = gemini.normalize_response(response(call("f", None), finish="MAX_TOKENS"), CallIds())
    assert output == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {}}],
        "stop": "length",
    }


def test_unrecorded_response_metadata_is_ignored() -> None:
    body = response(text("Hi"), promptFeedback={"safetyRatings": []})
    body["candidates"][0].update(
        safetyRatings=[{"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"}],
        citationMetadata={"citations": []},
        avgLogprobs=-0.1,
    )
    assert gemini.normalize_response(body, CallIds()) == {"type": "final_answer", "text": "Hi"}


RESPONSE_REFUSALS = [
    pytest.param(
        response(text("x"), finish="IMAGE_SAFETY"),
        'finishReason "IMAGE_SAFETY"',
        "(finishReason)",
        id="image-safety",
    ),
    pytest.param(
        response(call("f", {}), finish="MALFORMED_FUNCTION_CALL"),
        'finishReason "MALFORMED_FUNCTION_CALL" together with function calls',
        "(finishReason)",
        id="malformed-call-with-calls",
    ),
    pytest.param(response(text("x"), finish=None), "finishReason null", "(finishReason)", id="no-finish"),
    pytest.param(
        response(text("x"), finish="CONTINUATION"),
        "finishReason CONTINUATION (an answer continued in a further request)",
        "(finishReason)",
        id="continuation",
    ),
    pytest.param(
        response(call("f", {}), finish="SAFETY"),
        'finishReason "SAFETY" together with function calls',
        "(finishReason)",
        id="safety-with-calls",
    ),
    pytest.param(
        {"candidates": [], "promptFeedback": {"blockReason": "SAFETY"}},
        'a blocked prompt (blockReason "SAFETY")',
        "(promptFeedback.blockReason)",
        id="blocked-prompt",
    ),
    pytest.param(
        {
            "candidates": [
                {**response(text("a"))["candidates"][0], "logprobsResult": {"chosenCandidates": []}}
            ]
        },
        "logprobsResult in a response",
        "(candidates[0].logprobsResult)",
        id="logprobs",
    ),
    pytest.param(
        response(call("f", {}, "p1"), {"inlineData": {"mimeType": "image/png", "data": "iVBO"}}),
        '"inlineData" parts',
        "(candidates[0].content.parts[1].inlineData)",
        id="image-output",
    ),
    pytest.param(
        response({"functionCall": {"name": "f", "partialArgs": [{"jsonPath": "$.a"}], "willContinue": True}}),
        "streamed function-call arguments",
        "(candidates[0].content.parts[0].functionCall.partialArgs)",
        id="partial-args",
    ),
]


@pytest.mark.parametrize(("body", "what", "field"), RESPONSE_REFUSALS)
def test_response_refusals_name_the_field_and_assign_no_ids(
    body: dict[str, Any], what: str, field: str
) -> None:
    ids = CallIds()
    message = refusal_message(lambda: gemini.normalize_response(body, ids))
    assert message.startswith(f"{what} is not supported yet; ")
    assert message.endswith(field)
    assert ids.peek() == "call-0"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ([], "the response body must be a JSON object"),
        ({"candidates": []}, "candidates must be a list with one candidate"),
        ({"candidates": ["x"]}, "candidates[0] must be a JSON object"),
        (response(call("f", "x")), "candidates[0].content.parts[0].functionCall.args must be a JSON object"),
    ],
)
def test_malformed_responses_are_refused_naming_the_field(body: Any, expected: str) -> None:
    message = refusal_message(lambda: gemini.normalize_response(body, CallIds()))
    assert message.startswith(expected) and message.endswith(
        "the provider response does not have the shape Blackbox can record"
    )


# -- synthesized responses ---------------------------------------------------------------------

TOOL_CALLS = {
    "type": "tool_calls",
    "calls": [
        {"toolCallId": "call-0", "toolName": "get_weather", "toolInput": {"city": "Paris"}},
        {"toolCallId": "call-1", "toolName": "get_time", "toolInput": {}},
    ],
    "text": "Checking.",
}


def test_synthesized_tool_calls_have_the_exact_replay_shape() -> None:
    body = gemini_call().synthesize_response(TOOL_CALLS, output_index=7, model="ignored", timestamp=123)
    assert pretty_json(body) == pretty_json(
        {
            "candidates": [
                {
                    "content": {
                        "parts": [
                            {"text": "Checking."},
                            {
                                "functionCall": {
                                    "id": "call-0",
                                    "name": "get_weather",
                                    "args": {"city": "Paris"},
                                }
                            },
                            {"functionCall": {"id": "call-1", "name": "get_time", "args": {}}},
                        ],
                        "role": "model",
                    },
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0},
            "modelVersion": "gemini-2.5-flash",
            "responseId": "blackbox-replay-7",
        }
    )


def parsed(body: dict[str, Any]) -> types.GenerateContentResponse:
    """The body as google-genai turns it into its response object."""
    return types.GenerateContentResponse._from_response(response=json.loads(json.dumps(body)), kwargs={})


@pytest.mark.parametrize(
    ("output", "text_", "finish"),
    [
        (TOOL_CALLS, "Checking.", types.FinishReason.STOP),
        ({"type": "final_answer", "text": "Done."}, "Done.", types.FinishReason.STOP),
        ({"type": "final_answer", "text": "Cut", "stop": "length"}, "Cut", types.FinishReason.MAX_TOKENS),
        ({"type": "final_answer", "text": "", "stop": "refusal"}, None, types.FinishReason.SAFETY),
        ({"type": "final_answer", "text": ""}, None, types.FinishReason.STOP),
        (
            {"type": "tool_call", "toolCallId": "call-3", "toolName": "f", "toolInput": {}},
            None,
            types.FinishReason.STOP,
        ),
    ],
    ids=["calls", "answer", "length", "safety", "empty", "built-in-single-call"],
)
def test_the_sdk_reads_a_replayed_response_as_it_read_the_original(
    output: Any, text_: str | None, finish: Any
) -> None:
    body = gemini.synthesize_response(output, output_index=1, model="gemini-2.5-flash", timestamp=0)
    result = parsed(body)
    assert result.text == text_
    assert result.candidates is not None and result.candidates[0].finish_reason == finish
    calls = [(c.id, c.name, c.args) for c in result.function_calls or []]
    expected = output.get("calls") or ([output] if output["type"] == "tool_call" else [])
    assert calls == [(c["toolCallId"], c["toolName"], c["toolInput"]) for c in expected]


def test_a_replayed_call_needs_an_object_of_arguments() -> None:
    output = {"type": "tool_calls", "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": "raw"}]}
    message = refusal_message(
        lambda: gemini.synthesize_response(output, output_index=1, model=None, timestamp=0)
    )
    assert message == (
        'replaying a call of "f" whose input is not a JSON object is not supported yet; Gemini function '
        "calls take an object of arguments (toolInput)"
    )


def test_error_body_has_the_gemini_error_shape() -> None:
    expected = {"error": {"code": 400, "message": "[blackbox] boom", "status": "INVALID_ARGUMENT"}}
    assert gemini.error_body("boom") == expected
    assert gemini_call().error_body("[blackbox] boom") == expected


# -- streams -----------------------------------------------------------------------------------


def chunks_of(events: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(event.data) for event in parse_events(b"".join(events))]


def test_a_replayed_stream_gives_every_chunk_content_and_the_last_one_the_finish_reason() -> None:
    output = {**TOOL_CALLS, "text": "Checking the weather in Paris."}
    events = gemini_call(stream=True).synthesize_stream(output, output_index=3, model=None, timestamp=0)
    chunks = chunks_of(events)
    assert [c["candidates"][0]["content"]["parts"] for c in chunks] == [
        [{"text": "Checking the wea"}],
        [{"text": "ther in Paris."}],
        [{"functionCall": {"id": "call-0", "name": "get_weather", "args": {"city": "Paris"}}}],
        [{"functionCall": {"id": "call-1", "name": "get_time", "args": {}}}],
    ]
    assert [c["candidates"][0].get("finishReason") for c in chunks] == [None, None, None, "STOP"]
    assert ["usageMetadata" in c for c in chunks] == [False, False, False, True]
    assert {c["responseId"] for c in chunks} == {"blackbox-replay-3"}
    assert all(event.startswith(b"data: {") and event.endswith(b"}\n\n") for event in events)


def test_an_empty_answer_streams_one_chunk() -> None:
    events = gemini.synthesize_stream(
        {"type": "final_answer", "text": ""}, output_index=1, model="m", timestamp=0
    )
    assert [c["candidates"][0] for c in chunks_of(events)] == [
        {"content": {"role": "model"}, "finishReason": "STOP", "index": 0}
    ]


@given(neutral_outputs(object_inputs), st.integers(0, 1000))
def test_a_synthesized_stream_collects_back_to_the_recorded_output(
    output: dict[str, Any], index: int
) -> None:
    streamed = gemini.collect_stream(
        b"".join(gemini.synthesize_stream(output, output_index=index, model="m", timestamp=0))
    )
    assert pretty_json(gemini.normalize_response(streamed, CallIds())) == pretty_json(output)


def test_a_stream_adds_up_to_the_response_its_chunks_describe() -> None:
    chunk = response(text("Hel"), finish=None)
    last = response(text("lo "), call("f", {"a": 1}), finish="STOP")
    last["usageMetadata"] = {"totalTokenCount": 9}
    body = b"".join(f"data: {json.dumps(c)}\r\n\r\n".encode() for c in (chunk, last))
    collected = gemini.collect_stream(body)
    assert collected["candidates"] == [
        {
            "content": {"parts": [text("Hel"), text("lo "), call("f", {"a": 1})], "role": "model"},
            "finishReason": "STOP",
            "index": 0,
        }
    ]
    assert collected["usageMetadata"] == {"totalTokenCount": 9}
    output: Any = gemini.normalize_response(collected, CallIds())
    assert output["text"] == "Hello "


JSON_ANSWER = '{"name":"Bob","employer":{"company_name":"TechCorp"}}'
SCHEMA = {"type": "OBJECT", "properties": {"name": {"type": "STRING"}}}


@pytest.mark.parametrize(
    ("config", "chunks", "omitted"),
    [
        pytest.param(
            {"responseMimeType": "application/json", "responseSchema": SCHEMA},
            [
                response(text("**Planning**", thought=True), finish=None),
                response(text(JSON_ANSWER), finish=None),
                response(text("", thoughtSignature="c2ln"), finish="STOP"),
            ],
            ["textPieces"],
            id="schema-whole",
        ),
        pytest.param(
            {"responseJsonSchema": {"type": "object"}},
            [response(text(JSON_ANSWER[:20]), finish=None), response(text(JSON_ANSWER[20:]))],
            None,
            id="schema-in-pieces",
        ),
        pytest.param({}, [response(text(JSON_ANSWER))], None, id="no-schema-whole"),
    ],
)
def test_structured_output_streamed_whole_replays_whole(
    config: dict[str, Any], chunks: list[Any], omitted: list[str] | None
) -> None:
    """google-genai parses each chunk's text alone into ``parsed``: only structured output whose text
    came in one chunk keeps that fact, so every other stream records as it always did."""
    ids = CallIds()
    call_ = gemini_call(stream=True)
    body = {"contents": [{"role": "user", "parts": [text("Bob works at TechCorp.")]}]}
    call_.normalize_request({**body, "generationConfig": config} if config else body, ids)
    collected = call_.collect_stream(b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks))
    output: Any = call_.normalize_response(collected, ids)
    assert output.get("omitted") == omitted
    assert output["text"] == JSON_ANSWER
    events = call_.synthesize_stream(output, output_index=1, model=None, timestamp=0)
    texts = [part["text"] for c in chunks_of(events) for part in c["candidates"][0]["content"]["parts"]]
    assert texts == ([JSON_ANSWER] if omitted else pieces(JSON_ANSWER))


@pytest.mark.parametrize(
    ("chunks", "problem"),
    [
        ([response(text("Hel"), finish=None)], "ended before a finishReason (it was cut short)"),
        ([], "has no candidates (it was cut short)"),
        (
            [
                response(text("Hel"), finish=None),
                {"error": {"code": 500, "status": "INTERNAL", "message": "x"}},
            ],
            'reported an error ("INTERNAL") at event 1',
        ),
    ],
    ids=["cut-short", "empty", "error-chunk"],
)
def test_a_stream_without_a_whole_answer_is_refused(chunks: list[Any], problem: str) -> None:
    body = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
    message = refusal_message(lambda: gemini.collect_stream(body))
    assert message == f"the streamed response {problem}; the call did not complete, so it is not recorded"


def test_a_blocked_prompt_streams_to_its_refusal() -> None:
    body = b'data: {"promptFeedback": {"blockReason": "OTHER"}}\n\n'
    message = refusal_message(lambda: gemini.normalize_response(gemini.collect_stream(body), CallIds()))
    assert message.startswith('a blocked prompt (blockReason "OTHER")')


GROUNDING: Any = {
    "webSearchQueries": ["weather Paris"],
    "groundingChunks": [{"web": {"uri": "https://w.example", "title": "W"}}],
    "groundingSupports": [
        {"segment": {"startIndex": 0, "endIndex": 5, "text": "Sunny"}, "groundingChunkIndices": [0]}
    ],
}


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "stream"])
def test_google_search_grounding_is_recorded_and_given_back(streamed: bool) -> None:
    tools = gemini.normalize_request(request(user(text("q")), tools=[{"googleSearch": {}}]), CallIds())[
        "tools"
    ]
    assert tools == [{"name": "googleSearch", "description": "", "builtin": "googleSearch"}]
    live = response(text("Sunny in Paris."))
    live["candidates"][0]["groundingMetadata"] = GROUNDING
    output: Any = gemini.normalize_response(live, CallIds())
    assert output["content"] == [
        {
            "type": "server_tool_result",
            "toolCallId": "server-0",
            "toolName": "googleSearch",
            "result": GROUNDING,
        },
        {"type": "text", "text": "Sunny in Paris."},
    ]
    where: Any = {"output_index": 0, "model": "m", "timestamp": 0}
    if streamed:
        replayed = gemini.collect_stream(b"".join(gemini.synthesize_stream(output, **where)))
    else:
        replayed = gemini.synthesize_response(output, **where)
    assert replayed["candidates"][0]["groundingMetadata"] == GROUNDING
    assert gemini.normalize_response(replayed, CallIds()) == output
