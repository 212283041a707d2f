"""Import a simple OpenAI-style chat transcript (``--from chat-json``).

Only the run shape the single-call ``tool_call`` output represents faithfully is accepted, anything
else refused rather than guessed at; only the fields a cassette needs are read, so provider ids and
usage can never reach it. See docs/fork-demo-import.md#chat-json.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..engine import to_json_value
from ..errors import BlackboxError, TranscriptImportError
from ..trace.io import parse_json
from ..trace.model import Trace
from ..trace.payloads import run_completed
from ..trace.recorder import TraceRecorder
from .checked import verified

__all__ = ["import_chat_json"]

_ROLES = ("user", "assistant", "tool")
_SHAPE = 'expected {"tools": [...], "messages": [...]}'


def _fail(detail: str) -> TranscriptImportError:
    return TranscriptImportError(f"chat JSON transcript: {detail}")


def import_chat_json(text_or_obj: str | Mapping[str, Any], *, trace_id: str) -> Trace:
    """Convert a chat JSON transcript (text or already-parsed object) into a trace with id ``trace_id``."""
    try:
        return verified(_import(text_or_obj, trace_id))
    except RecursionError:
        raise _fail("the transcript nests its values too deeply to import") from None


def _import(text_or_obj: str | Mapping[str, Any], trace_id: str) -> Trace:
    doc = _document(text_or_obj)
    messages = doc.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _fail(f"there are no messages; {_SHAPE}")
    _check_messages(messages)
    tools = _tool_definitions(doc.get("tools"))
    recorder = TraceRecorder(trace_id, messages[0]["timestamp"])
    history: list[dict[str, Any]] = [{"role": "user", "content": messages[0]["content"]}]
    seen_ids: set[str] = set()
    index = 1
    while True:
        if index >= len(messages):
            raise _fail("it ends without a final assistant answer; the last message must be the answer")
        message = messages[index]
        if message["role"] != "assistant":
            raise _fail(
                f"messages[{index}] is a {message['role']} message where an assistant message was expected "
                "(the run must be: user, then assistant tool call → tool result rounds, then an assistant "
                "answer)"
            )
        if message.get("tool_calls"):
            _tool_round(recorder, history, messages, index, tools, seen_ids)
            index += 2
            continue
        _final_answer(recorder, history, messages, index, tools)
        return recorder.trace()


def _document(text_or_obj: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(text_or_obj, str):
        try:
            doc = parse_json(text_or_obj)
        except BlackboxError as exc:
            raise _fail(f"not valid JSON ({_reason(exc)})") from None
    else:
        try:
            doc = to_json_value(text_or_obj, "the transcript")
        except BlackboxError as exc:
            raise _fail(str(exc)) from None
    if not isinstance(doc, dict):
        raise _fail(f"the top level is not an object; {_SHAPE}")
    return doc


def _reason(exc: BlackboxError) -> str:
    """The parser's own diagnosis after its subject (it names a line and column, never content)."""
    return str(exc).split(": ", 1)[-1]


def _check_messages(messages: list[Any]) -> None:
    previous: int | None = None
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _fail(f"messages[{index}] is not an object")
        if message.get("role") not in _ROLES:
            raise _fail(f"messages[{index}] has a role other than user, assistant or tool")
        stamp = message.get("timestamp")
        if isinstance(stamp, bool) or not isinstance(stamp, int):
            raise _fail(f"messages[{index}] has no integer timestamp (epoch milliseconds)")
        if previous is not None and stamp < previous:
            raise _fail(
                f"messages[{index}].timestamp is earlier than the one before it; timestamps must not decrease"
            )
        previous = stamp
    first = messages[0]
    if first["role"] != "user" or not isinstance(first.get("content"), str) or not first["content"]:
        raise _fail("messages[0] must be a user message with non-empty text content")


def _tool_definitions(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise _fail("tools is not an array")
    definitions = []
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(function, dict) or not isinstance(name, str) or not name:
            raise _fail(f"tools[{index}] has no function.name")
        description = function.get("description")
        definition: dict[str, Any] = {
            "name": name,
            "description": description if isinstance(description, str) else "",
        }
        if function.get("parameters") is not None:
            definition["inputSchema"] = function["parameters"]
        definitions.append(definition)
    return definitions


def _model_input(history: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"messages": copy.deepcopy(history), "tools": copy.deepcopy(tools)}


def _tool_round(
    recorder: TraceRecorder,
    history: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    index: int,
    tools: list[dict[str, Any]],
    seen_ids: set[str],
) -> None:
    call_id, name, arguments = _single_call(messages[index], index, seen_ids)
    answer = _tool_answer(messages, index, call_id)
    stamp = messages[index]["timestamp"]
    call = {"toolCallId": f"call-{len(seen_ids)}", "toolName": name, "toolInput": arguments}
    seen_ids.add(call_id)
    recorder.append("model_input", _model_input(history, tools), stamp)
    recorder.append("model_output", {"type": "tool_call", **copy.deepcopy(call)}, stamp)
    recorder.append("tool_call", copy.deepcopy(call), stamp)
    result = {"toolCallId": call["toolCallId"], "toolName": name, "result": answer}
    recorder.append("tool_result", copy.deepcopy(result), messages[index + 1]["timestamp"])
    history.append({"role": "assistant", "content": [{"type": "tool_use", **copy.deepcopy(call)}]})
    history.append({"role": "user", "content": [{"type": "tool_result", **copy.deepcopy(result)}]})


def _single_call(message: dict[str, Any], index: int, seen_ids: set[str]) -> tuple[str, str, Any]:
    calls = message["tool_calls"]
    if not isinstance(calls, list):
        raise _fail(f"messages[{index}].tool_calls is not an array")
    if len(calls) != 1:
        raise _fail(
            f"messages[{index}] makes {len(calls)} tool calls; only one call per assistant message is "
            "supported"
        )
    content = message.get("content")
    if content is not None and content != "":
        raise _fail(f"messages[{index}] mixes text and a tool call; put the text in its own final message")
    call = calls[0]
    function = call.get("function") if isinstance(call, dict) else None
    call_id = call.get("id") if isinstance(call, dict) else None
    if not isinstance(call_id, str) or not call_id:
        raise _fail(f"messages[{index}].tool_calls[0] has no id")
    if call_id in seen_ids:
        raise _fail(f"messages[{index}].tool_calls[0] reuses the id of an earlier tool call")
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(function, dict) or not isinstance(name, str) or not name:
        raise _fail(f"messages[{index}].tool_calls[0] has no function.name")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        raise _fail(f"messages[{index}].tool_calls[0].function.arguments is not a JSON string")
    try:
        return call_id, name, parse_json(arguments)
    except BlackboxError:
        raise _fail(f"messages[{index}].tool_calls[0].function.arguments is not valid JSON") from None


def _tool_answer(messages: list[dict[str, Any]], index: int, call_id: str) -> Any:
    if index + 1 >= len(messages) or messages[index + 1]["role"] != "tool":
        raise _fail(f"the tool call in messages[{index}] is not answered by a tool message right after it")
    answer = messages[index + 1]
    if answer.get("tool_call_id") != call_id:
        raise _fail(
            f"messages[{index + 1}].tool_call_id does not match the id of the call in messages[{index}]"
        )
    content = answer.get("content")
    if not isinstance(content, str):
        raise _fail(f"messages[{index + 1}].content is not a string")
    try:
        return parse_json(content)
    except BlackboxError:
        return content


def _final_answer(
    recorder: TraceRecorder,
    history: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    index: int,
    tools: list[dict[str, Any]],
) -> None:
    text = messages[index].get("content")
    if not isinstance(text, str) or not text:
        raise _fail(f"messages[{index}] has neither a tool call nor text")
    if index != len(messages) - 1:
        raise _fail(
            f"messages[{index}] is the final answer but {len(messages) - 1 - index} message(s) follow it"
        )
    stamp = messages[index]["timestamp"]
    recorder.append("model_input", _model_input(history, tools), stamp)
    recorder.append("model_output", {"type": "final_answer", "text": text}, stamp)
    recorder.append("metadata", run_completed(text), stamp)
