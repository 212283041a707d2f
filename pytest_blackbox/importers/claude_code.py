"""Import a Claude Code session transcript (``--from claude-code``).

A model response may be split over several JSONL lines sharing ``message.id``, and its tool results
arrive in later lines keyed by ``tool_use_id``; the importer rebuilds the turns from that. See
docs/fork-demo-import.md#claude-code-jsonl.
"""

from __future__ import annotations

import copy
import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import BlackboxError, TranscriptImportError
from ..trace.canonical import js_stringify
from ..trace.io import parse_json
from ..trace.model import Trace
from ..trace.payloads import run_completed
from ..trace.recorder import TraceRecorder
from .checked import verified

__all__ = ["OBSERVED_TOOL_DESCRIPTION", "import_claude_code"]

OBSERVED_TOOL_DESCRIPTION = "Observed in Claude Code transcript; original definition unavailable."

_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})")
_SHOWABLE_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


@dataclass
class _Line:
    number: int  # 1-based line of the file
    event: int  # 0-based position among the kept user/assistant lines
    kind: str
    timestamp: int
    message: dict[str, Any]


@dataclass
class _Result:
    line: _Line
    content: Any
    is_error: bool


@dataclass
class _ModelTurn:
    line: _Line
    texts: list[str] = field(default_factory=list)
    uses: list[tuple[_Line, dict[str, Any]]] = field(default_factory=list)


@dataclass
class _HumanTurn:
    line: _Line
    text: str


def import_claude_code(text: str, *, trace_id: str) -> Trace:
    """Convert Claude Code session JSONL into a trace with id ``trace_id``."""
    try:
        lines = _kept_lines(text)
        turns, results = _turns(lines)
        _check_results(turns, results)
        return verified(_Emitter(trace_id, lines[0].timestamp, turns, results).run())
    except RecursionError:
        raise TranscriptImportError(
            "the transcript nests its values too deeply to import; no cassette was written"
        ) from None


def _kept_lines(text: str) -> list[_Line]:
    """The user/assistant lines, without a subagent's sidechain lines unless they are all there is."""
    raw: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = parse_json(line)
        except BlackboxError:
            raise TranscriptImportError(f"Claude Code JSONL line {number} is not valid JSON") from None
        if isinstance(value, dict) and value.get("type") in ("user", "assistant"):
            raw.append((number, value))
    if not all(value.get("isSidechain") is True for _, value in raw):
        raw = [(number, value) for number, value in raw if value.get("isSidechain") is not True]
    if not raw:
        raise TranscriptImportError("Claude Code transcript contains no user/assistant messages")
    return [_line(event, number, value) for event, (number, value) in enumerate(raw)]


def _line(event: int, number: int, value: dict[str, Any]) -> _Line:
    message = value.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content"), (str, list)):
        article = "an" if value["type"] == "assistant" else "a"
        raise TranscriptImportError(
            f"Claude Code JSONL line {number} is {article} {value['type']} line without message.content"
        )
    return _Line(number, event, value["type"], _epoch_ms(value.get("timestamp"), number), message)


def _epoch_ms(stamp: Any, number: int) -> int:
    if isinstance(stamp, int) and not isinstance(stamp, bool):
        return stamp
    match = _ISO.fullmatch(stamp) if isinstance(stamp, str) else None
    if match is None:
        raise TranscriptImportError(
            f"Claude Code JSONL line {number} has no valid timestamp (expected ISO 8601, e.g. "
            "2026-09-29T16:49:16.889Z)"
        )
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    millis = int(((match.group(7) or "") + "000")[:3])
    zone = match.group(8)
    offset = _dt.timedelta(0)
    if zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = _dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        offset = offset if zone[0] == "+" else -offset
    try:
        moment = _dt.datetime(year, month, day, hour, minute, second, tzinfo=_dt.timezone(offset))
    except ValueError:
        raise TranscriptImportError(f"Claude Code JSONL line {number} has an impossible timestamp") from None
    return (moment - _EPOCH) // _dt.timedelta(milliseconds=1) + millis


def _blocks(line: _Line) -> list[dict[str, Any]]:
    content = line.message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block if isinstance(block, dict) else {"type": "unknown"} for block in content]


def _turns(lines: list[_Line]) -> tuple[list[_ModelTurn | _HumanTurn], dict[str, _Result]]:
    """Model turns (merged by ``message.id``) and human turns in order, and every result by call id."""
    turns: list[_ModelTurn | _HumanTurn] = []
    by_message_id: dict[str, _ModelTurn] = {}
    results: dict[str, _Result] = {}
    for line in lines:
        if line.kind == "assistant":
            _add_model_line(line, turns, by_message_id)
            continue
        human = _add_results(line, results)
        if human is not None:
            turns.append(human)
    return turns, results


def _add_model_line(line: _Line, turns: list[_ModelTurn | _HumanTurn], by_id: dict[str, _ModelTurn]) -> None:
    message_id = line.message.get("id")
    turn = by_id.get(message_id) if isinstance(message_id, str) else None
    if turn is None:
        turn = _ModelTurn(line)
        turns.append(turn)
        if isinstance(message_id, str):
            by_id[message_id] = turn
    for block in _blocks(line):
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            turn.texts.append(block["text"])
        elif block.get("type") == "tool_use":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise TranscriptImportError(
                    f"Claude Code JSONL line {line.number} has a tool_use block without an id or a name"
                )
            turn.uses.append((line, block))


def _add_results(line: _Line, results: dict[str, _Result]) -> _HumanTurn | None:
    """Index the line's tool results; return its human text turn, if it has one."""
    content = line.message["content"]
    if isinstance(content, str):
        return _HumanTurn(line, content)
    texts: list[str] = []
    answered = False
    for block in _blocks(line):
        if block.get("type") != "tool_result":
            texts.append(_block_text(block))
            continue
        answered = True
        use_id = block.get("tool_use_id")
        if not isinstance(use_id, str):
            raise TranscriptImportError(
                f"Claude Code JSONL line {line.number} has a tool_result without a tool_use_id"
            )
        if use_id in results:
            raise TranscriptImportError(
                f"Claude Code JSONL line {line.number} has a second tool_result for a call already answered "
                f"on line {results[use_id].line.number}"
            )
        results[use_id] = _Result(line, block.get("content"), block.get("is_error") is True)
    if answered and not texts:
        return None
    return _HumanTurn(line, "\n".join(texts))


def _block_text(block: dict[str, Any]) -> str:
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    kind = block.get("type")
    return f"[{kind if isinstance(kind, str) else 'unknown'} omitted]"


def _check_results(turns: list[_ModelTurn | _HumanTurn], results: dict[str, _Result]) -> None:
    """Every result must answer a known call; every call but those of the last model turn needs a result."""
    used: dict[str, _Line] = {}
    for turn in turns:
        for line, block in turn.uses if isinstance(turn, _ModelTurn) else ():
            if block["id"] in used:
                raise TranscriptImportError(
                    f"Claude Code JSONL line {line.number} reuses the id of a tool call made on line "
                    f"{used[block['id']].number}"
                )
            used[block["id"]] = line
    for use_id, result in results.items():
        if use_id not in used:
            raise TranscriptImportError(
                f"Claude Code JSONL line {result.line.number} has a tool_result for a tool call that no "
                "assistant line made (unknown tool_use_id)"
            )
    model_turns = [t for t in turns if isinstance(t, _ModelTurn) and (t.uses or "".join(t.texts))]
    for turn in model_turns[:-1]:
        for line, block in turn.uses:
            if block["id"] not in results:
                raise TranscriptImportError(
                    f'Claude Code transcript has no result for "{_shown_name(block["name"])}" (called at '
                    f"events[{line.event}], JSONL line {line.number}); only the last model turn may be "
                    "unfinished"
                )


def _shown_name(name: str) -> str:
    """A tool name is quoted only when it looks like one, so a diagnostic never carries arbitrary content."""
    return name if _SHOWABLE_NAME.fullmatch(name) else "(unnamed tool)"


def _result_value(content: Any) -> Any:
    """A JSON string is parsed, a block array becomes its text; missing content is ``""``."""
    if content is None:
        return ""
    if isinstance(content, str):
        try:
            return parse_json(content)
        except BlackboxError:
            return content
    if isinstance(content, list):
        blocks = [block if isinstance(block, dict) else {"type": "unknown"} for block in content]
        return "\n".join(_block_text(block) for block in blocks)
    return content


def _error_text(content: Any) -> str:
    """The error of an ``is_error`` result: its value as for a result, JSON text written compactly.

    The original Blackbox (arda-ulas/blackbox) parses JSON content here too and writes it back with
    ``JSON.stringify``, so ``'{"err": 1}'`` becomes ``{"err":1}``; the hashes from that step on
    depend on it.
    """
    value = _result_value(content)
    return value if isinstance(value, str) else js_stringify(value)


class _Emitter:
    """Walks the turns once, writing steps and growing the conversation history as it goes."""

    def __init__(
        self,
        trace_id: str,
        created_at: int,
        turns: list[_ModelTurn | _HumanTurn],
        results: dict[str, _Result],
    ) -> None:
        self.recorder = TraceRecorder(trace_id, created_at)
        self.turns = turns
        self.results = results
        self.history: list[dict[str, Any]] = []
        self.tools = self._definitions()
        self.calls = 0

    def _definitions(self) -> list[dict[str, Any]]:
        names: list[str] = []
        for turn in self.turns:
            for _, block in turn.uses if isinstance(turn, _ModelTurn) else ():
                if block["name"] not in names:
                    names.append(block["name"])
        return [{"name": name, "description": OBSERVED_TOOL_DESCRIPTION} for name in names]

    def run(self) -> Trace:
        final: tuple[str, int] | None = None
        unanswered: _HumanTurn | None = None
        for turn in self.turns:
            if isinstance(turn, _HumanTurn):
                self.history.append({"role": "user", "content": turn.text})
                unanswered = turn
                continue
            text = "\n\n".join(turn.texts)
            if turn.uses:
                self._tool_round(turn, text)
                final, unanswered = None, None
            elif text:
                self._model_input(turn.line.timestamp)
                self.recorder.append(
                    "model_output", {"type": "final_answer", "text": text}, turn.line.timestamp
                )
                self.history.append({"role": "assistant", "content": text})
                final, unanswered = (text, turn.line.timestamp), None
        if unanswered is not None:
            self._model_input(unanswered.line.timestamp)
        elif final is not None:
            self.recorder.append("metadata", run_completed(final[0]), final[1])
        return self.recorder.trace()

    def _model_input(self, timestamp: int) -> None:
        payload = {"messages": copy.deepcopy(self.history), "tools": copy.deepcopy(self.tools)}
        self.recorder.append("model_input", payload, timestamp)

    def _tool_round(self, turn: _ModelTurn, text: str) -> None:
        calls = []
        for _, block in turn.uses:
            tool_input = block.get("input", {})
            calls.append(
                {"toolCallId": f"call-{self.calls}", "toolName": block["name"], "toolInput": tool_input}
            )
            self.calls += 1
        output: dict[str, Any] = {"type": "tool_calls", "calls": copy.deepcopy(calls)}
        if text:
            output["text"] = text
        self._model_input(turn.line.timestamp)
        self.recorder.append("model_output", output, turn.line.timestamp)
        assistant: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        answers: list[dict[str, Any]] = []
        for call, (_, block) in zip(calls, turn.uses, strict=True):
            assistant.append({"type": "tool_use", **copy.deepcopy(call)})
            answer = self._call_steps(turn, call, self.results.get(block["id"]))
            if answer is not None:
                answers.append({"type": "tool_result", **answer})
        self.history.append({"role": "assistant", "content": assistant})
        if answers:
            self.history.append({"role": "user", "content": answers})

    def _call_steps(
        self, turn: _ModelTurn, call: dict[str, Any], result: _Result | None
    ) -> dict[str, Any] | None:
        """The call's ``tool_call`` and (if the transcript has it) ``tool_result`` steps."""
        stamp = turn.line.timestamp if result is None else max(result.line.timestamp, turn.line.timestamp)
        self.recorder.append("tool_call", copy.deepcopy(call), stamp)
        if result is None:
            return None
        answer: dict[str, Any] = {"toolCallId": call["toolCallId"], "toolName": call["toolName"]}
        if result.is_error:
            answer["error"] = _error_text(result.content)
        else:
            answer["result"] = _result_value(result.content)
        self.recorder.append("tool_result", copy.deepcopy(answer), stamp)
        return answer
