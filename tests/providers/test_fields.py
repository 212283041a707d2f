"""The field tables cover every field of the SDKs' current request parameter and response types.

Walks the pydantic models the anthropic, openai and google-genai SDKs build from a response (and from
each stream event), level by level as the tables describe them, and the parameters their model calls
take, and fails naming any field, or any kind of block, item or event, that a table neither compares
or gives back, drops on purpose nor refuses. A new SDK release that adds a field fails here until the
field is placed in one of the lists.
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from pytest_blackbox.providers import PROVIDERS
from pytest_blackbox.providers.fields import (
    TABLES,
    Fields,
    Kinds,
    Shape,
    field_pattern,
    unknown_in_request,
    unknown_in_response,
    unknown_in_stream,
)

#: Fields of an SDK's response type the SDK fills in itself: never on the wire.
SDK_ONLY = {"gemini": frozenset({"sdkHttpResponse", "automaticFunctionCallingHistory", "parsed"})}


def _models(annotation: Any) -> Iterator[type[BaseModel]]:
    """The pydantic models an annotation names (through Optional, lists, unions, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for argument in typing.get_args(annotation):
        yield from _models(argument)


def _kinds_of(model: type[BaseModel]) -> tuple[str, ...]:
    field = model.model_fields.get("type")
    return tuple(str(value) for value in typing.get_args(field.annotation)) if field is not None else ()


def _gaps(model: type[BaseModel], shape: Shape, at: str, sdk_only: frozenset[str]) -> Iterator[str]:
    if isinstance(shape, Kinds):
        for kind in _kinds_of(model) or ("<no type>",):
            if kind in shape.kinds:
                yield from _gaps(model, shape.kinds[kind], at, sdk_only)
            elif kind not in shape.refused:
                yield f"{at}: kind {kind!r} ({model.__name__})"
        return
    if shape.whole:
        return
    for name, info in model.model_fields.items():
        wire = info.alias or name
        where = f"{at}.{wire}" if at else wire
        if wire in sdk_only:
            continue
        if wire not in shape.given | shape.dropped | shape.refused:
            yield f"{where} ({model.__name__})"
        elif wire in shape.nested:
            for nested in _models(info.annotation):
                yield from _gaps(nested, shape.nested[wire], where, sdk_only)


def _sdk_types() -> list[tuple[str, str, Any, str]]:
    """(protocol, which table, SDK type, label): every response and stream event type."""
    import anthropic.types
    import anthropic.types.beta
    import google.genai.types
    import openai.types.chat
    import openai.types.responses

    return [
        ("anthropic", "response", anthropic.types.Message, "Message"),
        ("anthropic", "response", anthropic.types.beta.BetaMessage, "BetaMessage"),
        ("anthropic", "event", anthropic.types.RawMessageStreamEvent, "RawMessageStreamEvent"),
        ("anthropic", "event", anthropic.types.beta.BetaRawMessageStreamEvent, "BetaRawMessageStreamEvent"),
        ("openai_chat", "response", openai.types.chat.ChatCompletion, "ChatCompletion"),
        ("openai_chat", "event", openai.types.chat.ChatCompletionChunk, "ChatCompletionChunk"),
        ("openai_responses", "response", openai.types.responses.Response, "Response"),
        ("openai_responses", "event", openai.types.responses.ResponseStreamEvent, "ResponseStreamEvent"),
        ("gemini", "response", google.genai.types.GenerateContentResponse, "GenerateContentResponse"),
    ]


@pytest.mark.parametrize(("protocol", "which", "sdk_type", "label"), _sdk_types(), ids=lambda v: str(v))
def test_every_sdk_field_is_listed(protocol: str, which: str, sdk_type: Any, label: str) -> None:
    table = TABLES[protocol]
    shape = table.response if which == "response" else table.event
    models = list(_models(sdk_type))
    assert models, f"{label} names no pydantic model"
    sdk_only = SDK_ONLY.get(protocol, frozenset())
    gaps = [gap for model in models for gap in _gaps(model, shape, "", sdk_only)]
    assert not list(dict.fromkeys(gaps)), f"{label}: fields in no list of the {protocol} table: {gaps}"


def test_a_field_added_to_a_model_is_found() -> None:
    """The walk itself can fail: a model with a field no table lists is named."""

    class Extra(BaseModel):
        type: typing.Literal["message"]
        role: str
        brand_new: int

    assert list(_gaps(Extra, TABLES["anthropic"].response, "", frozenset())) == ["brand_new (Extra)"]


@pytest.mark.parametrize(
    ("protocol", "body", "unknown"),
    [
        (
            "openai_chat",
            {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi", "x_new": 1}}]},
            ["choices[0].message.x_new"],
        ),
        (
            "anthropic",
            {"content": [{"type": "text", "text": "hi", "x_new": 1}, {"type": "thinking", "x": 2}]},
            ["content[0].x_new"],
        ),
        ("openai_responses", {"output": [{"type": "web_search_call", "x_new": 1}], "x_top": 0}, ["x_top"]),
        ("gemini", {"candidates": [{"content": {"parts": [{"text": "a"}]}, "x_new": None}]}, []),
    ],
)
def test_unknown_fields_are_named_by_path(protocol: str, body: Any, unknown: list[str]) -> None:
    """A field no table knows is named; a kept-whole item's and a dropped block's are not; null is absent."""
    assert unknown_in_response(protocol, body) == unknown


def test_a_pattern_writes_every_index_as_brackets() -> None:
    assert field_pattern(" candidates[0].content.parts[12].x ") == "candidates[].content.parts[].x"


def test_fields_and_kinds_are_the_table_types() -> None:
    assert all(isinstance(t.response, (Fields, Kinds)) for t in TABLES.values())


def sse(*events: tuple[str | None, dict[str, Any]]) -> bytes:
    return b"".join(
        (f"event: {name}\n" if name else "").encode() + f"data: {json.dumps(data)}\n\n".encode()
        for name, data in events
    )


ANTHROPIC_STREAM = sse(
    (
        "message_start",
        {"type": "message_start", "message": {"type": "message", "role": "assistant", "content": []}},
    ),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Hi", "x_new": 1},
        },
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "x_why": "a"},
            "usage": {"output_tokens": 1},
        },
    ),
    ("message_stop", {"type": "message_stop"}),
)
RESPONSES_STREAM = sse(
    (None, {"type": "response.output_text.delta", "sequence_number": 0, "delta": "Hi", "x_new": 1}),
    (
        None,
        {
            "type": "response.completed",
            "sequence_number": 1,
            "response": {"status": "completed", "output": [], "x_top": 2},
        },
    ),
)
GEMINI_STREAM = sse(
    (None, {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}}], "responseId": "r"}),
    (
        None,
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "!", "x_new": 1}]}, "finishReason": "STOP"}
            ]
        },
    ),
)


@pytest.mark.parametrize(
    ("protocol", "body", "unknown"),
    [
        ("anthropic", ANTHROPIC_STREAM, ["content_block_delta.delta.x_new", "message_delta.delta.x_why"]),
        ("openai_responses", RESPONSES_STREAM, ["response.output_text.delta.x_new", "x_top"]),
        ("gemini", GEMINI_STREAM, ["candidates[0].content.parts[0].x_new"]),
    ],
    ids=["anthropic", "openai_responses", "gemini"],
)
def test_a_streams_unknown_fields_are_named_by_event(protocol: str, body: bytes, unknown: list[str]) -> None:
    """An event's path starts with its type where the protocol names events; a Responses stream's
    closing response is checked as the response; a Gemini chunk as a response."""
    answer = PROVIDERS[protocol].collect_stream(body) if protocol == "openai_responses" else None
    assert unknown_in_stream(protocol, body, answer) == unknown


# -- requests ----------------------------------------------------------------------------------

#: Parameters of an SDK's model call that never reach the body: headers (Anthropic's beta flags,
#: user profile and workspace) and what the SDK does itself (google-genai's HTTP options, automatic
#: function calling and continuation).
REQUEST_SDK_ONLY = {
    "anthropic": frozenset({"betas", "user_profile_id", "workspace_id"}),
    "gemini": frozenset(
        {
            "http_options",
            "should_return_http_response",
            "automatic_function_calling",
            "automatic_continuation",
        }
    ),
}
#: google-genai parameters written under another name on the wire.
GEMINI_RENAMED = {"generation_output_config": "outputConfig"}


def _keys(params: Any) -> set[str]:
    """The keys of a TypedDict, or of every TypedDict of a union of them."""
    members = typing.get_args(params) or (params,)
    return {key for member in members for key in (*member.__required_keys__, *member.__optional_keys__)}


def _listed(shape: Shape) -> frozenset[str]:
    assert isinstance(shape, Fields)
    return shape.given | shape.dropped | shape.refused


def _camel(name: str) -> str:
    return GEMINI_RENAMED.get(name) or re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def _request_params() -> list[tuple[str, Any]]:
    import anthropic.types
    import anthropic.types.beta
    import openai.types.chat
    import openai.types.responses

    return [
        ("anthropic", anthropic.types.MessageCreateParams),
        ("anthropic", anthropic.types.beta.MessageCreateParams),
        ("openai_chat", openai.types.chat.CompletionCreateParams),
        ("openai_responses", openai.types.responses.ResponseCreateParams),
    ]


@pytest.mark.parametrize(("protocol", "params"), _request_params(), ids=lambda v: getattr(v, "__module__", v))
def test_every_request_parameter_is_listed(protocol: str, params: Any) -> None:
    sdk_only = REQUEST_SDK_ONLY.get(protocol, frozenset())
    gaps = sorted(_keys(params) - sdk_only - _listed(TABLES[protocol].request))
    assert not gaps, f"{protocol} request parameters in no list: {gaps}"


def test_every_responses_text_setting_is_listed() -> None:
    from openai.types.responses import ResponseTextConfigParam

    shape = TABLES["openai_responses"].request
    assert isinstance(shape, Fields)
    assert sorted(_keys(ResponseTextConfigParam) - _listed(shape.nested["text"])) == []


def test_every_gemini_config_field_is_listed_where_the_sdk_writes_it() -> None:
    """Each ``GenerateContentConfig`` field is a top-level request field or one of ``generationConfig``
    (the SDK writes it in one of the two), and each ``GenerationConfig`` field one of the latter."""
    from google.genai import types

    shape = TABLES["gemini"].request
    assert isinstance(shape, Fields)
    generation = _listed(shape.nested["generationConfig"])
    config = set(types.GenerateContentConfig.model_fields) - REQUEST_SDK_ONLY["gemini"]
    gaps = sorted(name for name in config if _camel(name) not in _listed(shape) | generation)
    gaps += sorted(name for name in types.GenerationConfig.model_fields if _camel(name) not in generation)
    assert not gaps, f"gemini config fields in no list: {gaps}"


def test_a_parameter_added_to_a_request_is_found() -> None:
    """The request walk itself can fail: a TypedDict key no table lists is named."""

    class Extra(typing.TypedDict, total=False):
        model: str
        brand_new: int

    assert sorted(_keys(Extra) - _listed(TABLES["openai_chat"].request)) == ["brand_new"]


@pytest.mark.parametrize(
    ("protocol", "body", "unknown"),
    [
        (
            "openai_chat",
            {"model": "m", "messages": [], "user": "u", "x_new": 1, "x_null": None},
            ["request.x_new"],
        ),
        (
            "anthropic",
            {"messages": [], "anthropic_version": "v", "thread": {"type": "create"}},
            ["request.thread"],
        ),
        ("openai_responses", {"input": "hi", "text": {"format": {}, "x_new": 1}}, ["request.text.x_new"]),
        (
            "gemini",
            {"contents": [], "system_instruction": {}, "generationConfig": {"seed": 1, "x_new": 2}},
            ["request.generationConfig.x_new"],
        ),
    ],
)
def test_unknown_request_fields_are_named_by_path(protocol: str, body: Any, unknown: list[str]) -> None:
    """A field no list knows is named under ``request``; a dropped one is not; null is absent."""
    assert unknown_in_request(protocol, body) == unknown
