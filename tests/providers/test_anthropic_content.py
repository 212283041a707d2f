"""Anthropic ordered content: any order of text, citations, calls, provider-run tools and compaction
comes back from a replayed response or stream as it was recorded, and the history reads it alike."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_blackbox.errors import BlackboxUnsupportedError
from pytest_blackbox.providers import CallIds, anthropic
from pytest_blackbox.providers.content import ordered_output

from .outputs import json_values, object_inputs

citations = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["web_search_result_location", "char_location"])},
        optional={"url": st.text(), "citedText": st.text(), "startCharIndex": st.integers(0, 99)},
    ),
    min_size=1,
    max_size=2,
)


@st.composite
def ordered_parts(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Parts in any order, with the ids a recording hands out in the order it meets them."""
    parts: list[dict[str, Any]] = []
    calls = servers = 0
    for kind in draw(
        st.lists(st.sampled_from(["text", "cited", "call", "server", "compaction"]), max_size=6)
    ):
        if kind in ("text", "cited"):
            part: dict[str, Any] = {"type": "text", "text": draw(st.text(min_size=1))}
            if kind == "cited":
                part["citations"] = draw(citations)
            parts.append(part)
        elif kind == "call":
            name, tool_input = draw(st.text(min_size=1)), draw(object_inputs)
            parts.append(
                {"type": "tool_use", "toolCallId": f"call-{calls}", "toolName": name, "toolInput": tool_input}
            )
            calls += 1
        elif kind == "server":
            server_id, name = (
                f"server-{servers}",
                draw(st.sampled_from(["web_search", "web_fetch", "deepwiki/ask"])),
            )
            parts.append(
                {
                    "type": "server_tool_use",
                    "toolCallId": server_id,
                    "toolName": name,
                    "toolInput": draw(object_inputs),
                }
            )
            result = {"isError": False, "content": draw(json_values)} if "/" in name else draw(json_values)
            parts.append(
                {"type": "server_tool_result", "toolCallId": server_id, "toolName": name, "result": result}
            )
            servers += 1
        else:
            parts.append(
                {"type": "compaction", "content": {"content": draw(st.text()), "encryptedContent": "e"}}
            )
    return parts


@given(parts=ordered_parts(), stop=st.sampled_from([None, "length", "pause"]))
def test_a_replayed_response_and_stream_normalize_back_to_the_ordered_output(
    parts: list[dict[str, Any]], stop: Any
) -> None:
    if any(part["type"] == "tool_use" for part in parts) and stop == "pause":
        stop = None  # a pause ends a turn without client calls
    output = json.loads(json.dumps(ordered_output(parts, stop)))
    where: Any = {"output_index": 3, "model": "m", "timestamp": 0}
    body = json.loads(json.dumps(anthropic.synthesize_response(output, **where)))
    assert anthropic.normalize_response(body, CallIds()) == output
    stream = b"".join(anthropic.synthesize_stream(output, **where))
    assert anthropic.normalize_response(anthropic.collect_stream(stream), CallIds()) == output
    turn = {"role": "assistant", "content": body["content"]}
    history: Any = anthropic.normalize_request({"messages": [turn]}, CallIds())["messages"][0]["content"]
    assert [part for part in history if part["type"] != "text"] == [
        part for part in parts if part["type"] != "text"
    ]


def test_only_a_response_that_is_not_text_then_calls_keeps_a_content_list() -> None:
    text = {"type": "text", "text": "Checking."}
    call = {"type": "tool_use", "toolCallId": "call-0", "toolName": "f", "toolInput": {}}
    assert "content" not in ordered_output([text, call], None)
    assert ordered_output([call, text], None).get("content") == [call, text]
    assert ordered_output([text, text], None)["text"] == "Checking.Checking."


def test_a_server_result_answering_no_known_call_is_refused_naming_it() -> None:
    body = {
        "content": [{"type": "web_search_tool_result", "tool_use_id": "srvtoolu_9", "content": []}],
        "stop_reason": "end_turn",
    }
    with pytest.raises(BlackboxUnsupportedError, match=r'answering the tool "unknown" .*\(content\[0\]\)$'):
        anthropic.normalize_response(body, CallIds())


def test_a_field_of_a_server_block_that_is_not_recorded_is_refused_naming_it() -> None:
    block = {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {},
        "caller": {"type": "direct"},
    }
    with pytest.raises(BlackboxUnsupportedError, match=r'the field "caller" .*\(content\[0\]\.caller\)$'):
        anthropic.normalize_response({"content": [block], "stop_reason": "end_turn"}, CallIds())


def test_typed_tools_are_compared_in_full() -> None:
    memory = {"type": "memory_20250818", "name": "memory", "cache_control": {"type": "ephemeral"}}
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3, "user_location": None}
    tools = anthropic.normalize_request({"messages": [], "tools": [memory, search]}, CallIds())["tools"]
    assert tools == [
        {"name": "memory", "description": "", "builtin": "memory_20250818"},
        {
            "name": "web_search",
            "description": "",
            "builtin": "web_search_20250305",
            "settings": {"max_uses": 3},
        },
    ]


def test_a_tool_search_result_of_tool_references_is_compared_as_the_tools_it_names() -> None:
    found = {"type": "tool_reference", "tool_name": "get_rate"}
    call = {"type": "tool_use", "id": "toolu_1", "name": "search_tools", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": [found]}
    messages = [{"role": "assistant", "content": [call]}, {"role": "user", "content": [result]}]
    parts: Any = anthropic.normalize_request({"messages": messages}, CallIds())["messages"][1]["content"]
    assert parts[0]["result"] == {"toolReferences": ["get_rate"]}


def test_a_direct_caller_is_not_recorded_and_another_is_kept_and_given_back() -> None:
    direct = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}, "caller": {"type": "direct"}}
    output = anthropic.normalize_response({"content": [direct], "stop_reason": "tool_use"}, CallIds())
    # the default caller is dropped on purpose: the output is what the original Blackbox writes
    assert output == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "f", "toolInput": {}}],
    }
    body = anthropic.synthesize_response(output, output_index=0, model="m", timestamp=0)
    assert "caller" not in body["content"][0]
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
    response = {"content": [{**direct, "caller": caller}], "stop_reason": "tool_use"}
    output = anthropic.normalize_response(response, CallIds())
    assert output.get("content") == [
        {
            "type": "tool_use",
            "toolCallId": "call-0",
            "toolName": "f",
            "toolInput": {},
            "caller": {"type": "code_execution_20250825", "toolId": "server-0"},
        }
    ]
    body = anthropic.synthesize_response(output, output_index=0, model="m", timestamp=0)
    assert body["content"][0]["caller"] == {"type": "code_execution_20250825", "tool_id": "server-0"}


def test_a_response_mixing_a_direct_and_a_left_out_caller_records_as_one_without_callers() -> None:
    direct = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}, "caller": {"type": "direct"}}
    bare = {"type": "tool_use", "id": "toolu_2", "name": "f", "input": {}}
    mixed = anthropic.normalize_response({"content": [direct, bare], "stop_reason": "tool_use"}, CallIds())
    left_out = anthropic.normalize_response(
        {"content": [{**direct, "caller": None}, bare], "stop_reason": "tool_use"}, CallIds()
    )
    assert mixed == left_out
    assert mixed == {
        "type": "tool_calls",
        "calls": [{"toolCallId": f"call-{n}", "toolName": "f", "toolInput": {}} for n in range(2)],
    }
