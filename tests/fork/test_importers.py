"""The importers reproduce the vectors and refuse bad transcripts without quoting them."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from pytest_blackbox.errors import TranscriptImportError
from pytest_blackbox.importers import import_chat_json, import_claude_code
from pytest_blackbox.trace.io import dumps_trace
from pytest_blackbox.trace.payloads import terminal_outcome, tool_call_sequence

FOREIGN = "fixtures/external/chat-tool-use.foreign.json"
CONVERTED = "fixtures/external/chat-tool-use.converted.v2.json"
EXAMPLE_SESSION = "examples/claude-code-session/session.jsonl"
SMALL_SESSION = "fixtures/import/claude-code-session.jsonl"
#: Planted in bad inputs: no diagnostic may repeat it.
MARKER = "PRIVATE-CONTENT-7f3a"


# --- chat JSON ----------------------------------------------------------------------------------


def test_chat_json_reproduces_the_converted_fixture(vector_text: Callable[[str], str]) -> None:
    trace = import_chat_json(vector_text(FOREIGN), trace_id="external-chat-tool-use")
    assert dumps_trace(trace) == vector_text(CONVERTED)


def test_chat_json_accepts_a_parsed_object(vector_text: Callable[[str], str]) -> None:
    doc = json.loads(vector_text(FOREIGN))
    trace = import_chat_json(doc, trace_id="external-chat-tool-use")
    assert dumps_trace(trace) == vector_text(CONVERTED)


def _chat(*middle: dict[str, Any], final: str | None = "Done.") -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "timestamp": 1, "content": "Do it."}, *middle]
    if final is not None:
        messages.append({"role": "assistant", "timestamp": 9, "content": final})
    return {"messages": messages}


def _call(call_id: str = "c1", arguments: str = '{"a": 1}', **extra: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "timestamp": 2,
        "content": None,
        "tool_calls": [{"id": call_id, "function": {"name": "lookup", "arguments": arguments}}],
        **extra,
    }


def _answer(call_id: str = "c1", content: str = "plain text", timestamp: int = 3) -> dict[str, Any]:
    return {"role": "tool", "timestamp": timestamp, "tool_call_id": call_id, "content": content}


def test_chat_json_keeps_non_json_tool_content_as_a_string() -> None:
    trace = import_chat_json(_chat(_call(), _answer(content="17 degrees")), trace_id="t")
    assert trace["steps"][3]["payload"] == {
        "toolCallId": "call-0",
        "toolName": "lookup",
        "result": "17 degrees",
    }
    assert trace["steps"][0]["payload"] == {"messages": [{"role": "user", "content": "Do it."}], "tools": []}
    assert [s["timestamp"] for s in trace["steps"]] == [2, 2, 2, 3, 9, 9, 9]
    assert trace["createdAt"] == 1


def test_chat_json_numbers_are_normalized_like_javascript() -> None:
    trace = import_chat_json(json.dumps(_chat(_call(arguments='{"a": 1.0}'), _answer())), trace_id="t")
    assert trace["steps"][2]["payload"]["toolInput"] == {"a": 1}
    assert type(trace["steps"][2]["payload"]["toolInput"]["a"]) is int


def test_imports_write_array_index_keys_first() -> None:
    chat = import_chat_json(
        _chat(_call(arguments='{"b": 1, "2": 0}'), _answer(content='{"x": 1, "10": 2}')), trace_id="t"
    )
    claude = import_claude_code(
        _session(
            _line("user", 0, "Go."),
            _line(
                "assistant",
                1,
                [{"type": "tool_use", "id": "u1", "name": "Read", "input": {"b": 1, "2": 0}}],
                "m1",
            ),
            _line("user", 2, [_result("u1", '{"x": 1, "10": 2}')]),
            _line("assistant", 3, [{"type": "text", "text": "Done."}], "m2"),
        ),
        trace_id="t",
    )
    for trace in (chat, claude):
        steps = json.loads(dumps_trace(trace))["steps"]
        assert list(steps[2]["payload"]["toolInput"]) == ["2", "b"]
        assert list(steps[3]["payload"]["result"]) == ["10", "x"]


def _two_calls() -> dict[str, Any]:
    message = _call()
    message["tool_calls"].append({"id": "c2", "function": {"name": "lookup", "arguments": "{}"}})
    return message


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ('{"messages": [', "not valid JSON (Expecting value at line 1, column 15)"),
        ("[]", 'the top level is not an object; expected {"tools": [...], "messages": [...]}'),
        ({"messages": []}, 'there are no messages; expected {"tools": [...], "messages": [...]}'),
        (
            {"messages": [{"role": MARKER, "timestamp": 1, "content": "x"}]},
            "messages[0] has a role other than user, assistant or tool",
        ),
        (
            {"messages": [{"role": "user", "timestamp": "1", "content": "x"}]},
            "messages[0] has no integer timestamp (epoch milliseconds)",
        ),
        (
            _chat(_call(), _answer(timestamp=0)),
            "messages[2].timestamp is earlier than the one before it; timestamps must not decrease",
        ),
        (
            {"messages": [{"role": "assistant", "timestamp": 1, "content": MARKER}]},
            "messages[0] must be a user message with non-empty text content",
        ),
        (
            _chat(_call(content=MARKER), _answer()),
            "messages[1] mixes text and a tool call; put the text in its own final message",
        ),
        (
            _chat(_two_calls(), _answer()),
            "messages[1] makes 2 tool calls; only one call per assistant message is supported",
        ),
        (
            _chat(_call(), final=None),
            "the tool call in messages[1] is not answered by a tool message right after it",
        ),
        (
            _chat(_call(), _answer(call_id=MARKER)),
            "messages[2].tool_call_id does not match the id of the call in messages[1]",
        ),
        (
            _chat(_call(), _answer(), _call(timestamp=4), _answer(timestamp=5)),
            "messages[3].tool_calls[0] reuses the id of an earlier tool call",
        ),
        (
            _chat(_call(arguments="{" + MARKER), _answer()),
            "messages[1].tool_calls[0].function.arguments is not valid JSON",
        ),
        (
            _chat(_call(), _answer(), final=None),
            "it ends without a final assistant answer; the last message must be the answer",
        ),
        (
            _chat({"role": "user", "timestamp": 1, "content": MARKER}),
            "messages[1] is a user message where an assistant message was expected (the run must be: user, "
            "then assistant tool call → tool result rounds, then an assistant answer)",
        ),
        (
            {
                "messages": [
                    {"role": "user", "timestamp": 1, "content": "x"},
                    {"role": "assistant", "timestamp": 2, "content": "a"},
                    {"role": "assistant", "timestamp": 3, "content": MARKER},
                ]
            },
            "messages[1] is the final answer but 1 message(s) follow it",
        ),
        (
            {"tools": [{MARKER: {}}], "messages": []},
            'there are no messages; expected {"tools": [...], "messages": [...]}',
        ),
        ({"tools": [{MARKER: {}}], **_chat()}, "tools[0] has no function.name"),
    ],
)
def test_chat_json_refusals(doc: Any, message: str) -> None:
    with pytest.raises(TranscriptImportError) as caught:
        import_chat_json(doc if isinstance(doc, str) else copy.deepcopy(doc), trace_id="t")
    assert str(caught.value) == f"chat JSON transcript: {message}"
    assert MARKER not in str(caught.value)


# --- Claude Code --------------------------------------------------------------------------------


def test_claude_code_example_session(vector_text: Callable[[str], str], expectations: dict[str, Any]) -> None:
    trace = import_claude_code(vector_text(EXAMPLE_SESSION), trace_id="claude-code-session")
    expected = expectations["imports"][EXAMPLE_SESSION]
    documented, derived = expected["upstreamDocumented"], expected["derived"]
    hashes = [step["hash"] for step in trace["steps"]]
    assert len(hashes) == documented["stepCount"] == 39
    for index, prefix in documented["stepHashPrefixes"].items():
        assert hashes[int(index)].startswith(prefix)
    assert hashes == derived["stepHashes"]
    assert [s["timestamp"] for s in trace["steps"]] == derived["stepTimestamps"]
    assert trace["createdAt"] == derived["createdAt"]
    assert terminal_outcome(trace).status == "success"
    assert terminal_outcome(trace).final_answer == derived["finalAnswer"]
    assert tool_call_sequence(trace) == documented["toolCallSequence"]
    tools = trace["steps"][0]["payload"]["tools"]
    assert [t["name"] for t in tools] == derived["observedToolDefinitions"]
    assert {t["description"] for t in tools} == {derived["observedToolDescription"]}
    text = dumps_trace(trace)
    assert "toolu_example" not in text and "msg_example" not in text  # provider ids replaced by call-N


def test_claude_code_small_session(vector_text: Callable[[str], str], expectations: dict[str, Any]) -> None:
    trace = import_claude_code(vector_text(SMALL_SESSION), trace_id="small")
    derived = expectations["imports"][SMALL_SESSION]["derived"]
    assert [s["hash"] for s in trace["steps"]] == derived["stepHashes"]
    assert [s["type"] for s in trace["steps"]] == derived["stepTypes"]
    for index, payload in derived["stepPayloads"].items():
        assert trace["steps"][int(index)]["payload"] == payload
    assert trace["createdAt"] == derived["createdAt"]


def _line(kind: str, second: int, content: Any, message_id: str | None = None, **extra: Any) -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if message_id:
        message["id"] = message_id
    return json.dumps(
        {"type": kind, "timestamp": f"2026-01-01T00:00:{second:02d}.000Z", "message": message, **extra}
    )


def _use(use_id: str, name: str = "Read") -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name, "input": {"path": MARKER}}


def _result(use_id: str, content: Any = MARKER, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use_id, "content": content, **extra}


def _session(*lines: str) -> str:
    return "\n".join(lines) + "\n"


BASE = 1767225600000  # 2026-01-01T00:00:00Z


def test_claude_code_unfinished_last_round_keeps_completed_results() -> None:
    trace = import_claude_code(
        _session(
            _line("user", 0, "Look."),
            _line("assistant", 1, [_use("u1"), _use("u2", "Bash")], "m1"),
            _line("user", 3, [_result("u2", "ok")]),
        ),
        trace_id="t",
    )
    assert [s["type"] for s in trace["steps"]] == [
        "model_input",
        "model_output",
        "tool_call",
        "tool_call",
        "tool_result",
    ]
    assert [s["timestamp"] - BASE for s in trace["steps"]] == [1000, 1000, 1000, 3000, 3000]
    assert terminal_outcome(trace).status == "incomplete"


@pytest.mark.parametrize("text", ["Are you done?", ""])
def test_claude_code_trailing_unanswered_user_message_is_kept(text: str) -> None:
    trace = import_claude_code(
        _session(
            _line("user", 0, "Look."),
            _line("assistant", 1, [{"type": "text", "text": "Nothing to do."}], "m1"),
            _line("user", 5, text),
        ),
        trace_id="t",
    )
    assert [s["type"] for s in trace["steps"]] == ["model_input", "model_output", "model_input"]
    last = trace["steps"][-1]
    assert last["timestamp"] == BASE + 5000
    assert last["payload"]["messages"] == [
        {"role": "user", "content": "Look."},
        {"role": "assistant", "content": "Nothing to do."},
        {"role": "user", "content": text},
    ]
    assert terminal_outcome(trace).status == "incomplete"


def test_claude_code_blocks_and_results() -> None:
    trace = import_claude_code(
        _session(
            _line("user", 0, [{"type": "text", "text": "See"}, {"type": "image", "source": {}}]),
            _line("assistant", 1, [{"type": "thinking", "thinking": MARKER}], "m1"),
            _line("assistant", 2, [_use("u1")], "m1"),
            _line("user", 4, [_result("u1", [{"type": "text", "text": '{"a":1}'}, {"type": "image"}])]),
            _line("assistant", 6, [_use("u2")], "m2"),
            _line("user", 5, [_result("u2", None, is_error=True)]),
            _line("assistant", 7, [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}], "m3"),
        ),
        trace_id="t",
    )
    steps = trace["steps"]
    assert steps[0]["payload"]["messages"] == [{"role": "user", "content": "See\n[image omitted]"}]
    assert steps[0]["timestamp"] == BASE + 1000  # the merged turn sits at its first (thinking) line
    assert steps[3]["payload"]["result"] == '{"a":1}\n[image omitted]'
    assert steps[7]["payload"] == {"toolCallId": "call-1", "toolName": "Read", "error": ""}
    assert steps[7]["timestamp"] == BASE + 6000  # max(result line, turn)
    assert steps[9]["payload"] == {"type": "final_answer", "text": "A\n\nB"}
    assert steps[10]["payload"]["result"] == "A\n\nB"
    assert MARKER not in json.dumps(steps[1]["payload"]["calls"][0]["toolCallId"])


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ('{"err": 1}', '{"err":1}'),  # JSON text is parsed and written back compactly, as the original does
        ('{"b": 2, "10": 1, "2": [1.0, 1e2]}', '{"2":[1,100],"10":1,"b":2}'),
        ('"quoted"', "quoted"),
        ("null", "null"),
        ("Exit code 1: not JSON", "Exit code 1: not JSON"),
        ([{"type": "text", "text": "line"}, {"type": "image"}], "line\n[image omitted]"),
    ],
)
def test_claude_code_error_results_read_their_content_like_the_original(content: Any, error: str) -> None:
    trace = import_claude_code(
        _session(
            _line("user", 0, "Go."),
            _line("assistant", 1, [_use("u1")], "m1"),
            _line("user", 2, [_result("u1", content, is_error=True)]),
            _line("assistant", 3, [{"type": "text", "text": "Stopped."}], "m2"),
        ),
        trace_id="t",
    )
    assert trace["steps"][3]["payload"] == {"toolCallId": "call-0", "toolName": "Read", "error": error}
    answer = trace["steps"][4]["payload"]["messages"][-1]["content"][0]
    assert answer == {"type": "tool_result", "toolCallId": "call-0", "toolName": "Read", "error": error}


def test_claude_code_sidechain_lines_are_skipped_in_a_main_session() -> None:
    trace = import_claude_code(
        _session(
            _line("user", 0, "Main."),
            _line("user", 1, "Side.", isSidechain=True),
            _line("assistant", 2, [{"type": "text", "text": "Side answer."}], "s1", isSidechain=True),
            _line("assistant", 3, [{"type": "text", "text": "Main answer."}], "m1"),
        ),
        trace_id="t",
    )
    assert trace["steps"][0]["payload"]["messages"] == [{"role": "user", "content": "Main."}]
    assert terminal_outcome(trace).final_answer == "Main answer."
    assert trace["createdAt"] == BASE


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            [
                _line("user", 0, "Hi."),
                "{" + MARKER,
                _line("assistant", 1, [{"type": "text", "text": "x"}], "m"),
            ],
            "Claude Code JSONL line 2 is not valid JSON",
        ),
        (
            ['{"type": "system", "note": "' + MARKER + '"}', json.dumps({"type": "summary"})],
            "Claude Code transcript contains no user/assistant messages",
        ),
        (
            [
                _line("user", 0, "Hi."),
                _line("assistant", 1, [_use("u1")], "m1"),
                _line("user", 2, [_result("u1")]),
                _line("user", 3, [_result("u1")]),
            ],
            "Claude Code JSONL line 4 has a second tool_result for a call already answered on line 3",
        ),
        (
            [_line("user", 0, "Hi."), _line("user", 2, [_result(MARKER)])],
            "Claude Code JSONL line 2 has a tool_result for a tool call that no assistant line made "
            "(unknown tool_use_id)",
        ),
        (
            [
                _line("user", 0, "Hi."),
                _line("assistant", 1, [_use("u1", "Grep")], "m1"),
                _line("assistant", 2, [{"type": "text", "text": MARKER}], "m2"),
            ],
            'Claude Code transcript has no result for "Grep" (called at events[1], JSONL line 2); '
            "only the last model turn may be unfinished",
        ),
        (
            [
                _line("user", 0, "Hi."),
                _line("assistant", 1, [_use("u1", MARKER + " <b>")], "m1"),
                _line("assistant", 2, [{"type": "text", "text": "x"}], "m2"),
            ],
            'Claude Code transcript has no result for "(unnamed tool)" (called at events[1], '
            "JSONL line 2); only the last model turn may be unfinished",
        ),
        (
            [json.dumps({"type": "user", "timestamp": MARKER, "message": {"role": "user", "content": "x"}})],
            "Claude Code JSONL line 1 has no valid timestamp "
            "(expected ISO 8601, e.g. 2026-09-29T16:49:16.889Z)",
        ),
        (
            [json.dumps({"type": "assistant", "timestamp": "2026-01-01T00:00:00Z", "message": {MARKER: 1}})],
            "Claude Code JSONL line 1 is an assistant line without message.content",
        ),
        (
            [
                _line("user", 0, "Hi."),
                _line("assistant", 1, [_use("u1")], "m1"),
                _line("assistant", 2, [_use("u1")], "m2"),
            ],
            "Claude Code JSONL line 3 reuses the id of a tool call made on line 2",
        ),
    ],
)
def test_claude_code_refusals(lines: list[str], message: str) -> None:
    with pytest.raises(TranscriptImportError) as caught:
        import_claude_code(_session(*lines), trace_id="t")
    assert str(caught.value) == message
    assert MARKER not in str(caught.value)


def test_claude_code_timestamps_with_offsets() -> None:
    line = json.dumps(
        {
            "type": "user",
            "timestamp": "2026-01-01T02:00:00.5+02:00",
            "message": {"role": "user", "content": "x"},
        }
    )
    trace = import_claude_code(line, trace_id="t")
    assert trace["createdAt"] == BASE + 500
