"""Deep nesting, the classic way to turn a JSON reader's recursion into a crash.

The strict reader refuses what it cannot hold ("nested deeper than …"); whatever it accepts, every
command that reads the cassette afterwards (verify, diff, inspect) must handle too. Depths range from
ordinary to just under what ``json.loads`` itself accepts at the depth a test runs at.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from functools import partial
from typing import Any

import pytest

from pytest_blackbox.analysis.diff import diff_outcome, diff_traces, render_diff
from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.cli import main
from pytest_blackbox.errors import TranscriptImportError
from pytest_blackbox.importers import import_chat_json, import_claude_code
from pytest_blackbox.trace.canonical import sha256_hex
from pytest_blackbox.trace.errors import CassetteReadError
from pytest_blackbox.trace.io import parse_trace
from tests import vector_text

from .conftest import TRANSCRIPTS, Scratch, assert_clean_message, attempt, timed

DEPTHS = (50, 300, 600, 900, 2000)


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def deep_cassette(depth: int, leaf: int) -> str:
    """A valid cassette whose note step holds a value ``depth`` lists deep, written and hashed by hand.

    By hand because the Python encoders themselves recurse: the file must exist even at depths no
    Python value of this process could be serialized from.
    """
    value = "[" * depth + str(leaf) + "]" * depth
    payload = f'{{"event":"note","x":{value}}}'
    hashed = f'{{"index":0,"payload":{payload},"prevHash":null,"timestamp":0,"type":"metadata"}}'
    step = (
        f'{{"id":"deep:0","index":0,"type":"metadata","timestamp":0,"payload":{payload},'
        f'"prevHash":null,"hash":"{sha256_hex(hashed)}"}}'
    )
    return f'{{"version":2,"id":"deep","createdAt":0,"steps":[{step}]}}'


def run_cli(*argv: str) -> int:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = timed(lambda: main(list(argv)))
    assert code in (0, 1) and "Traceback" not in err.getvalue()
    return code


@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_cassettes_are_read_or_refused_and_then_handled(scratch: Scratch, depth: int) -> None:
    first, second = deep_cassette(depth, 1), deep_cassette(depth, 2)
    parsed = attempt(lambda: parse_trace(first))
    if isinstance(parsed, BaseException):
        assert isinstance(parsed, CassetteReadError) and "nested deeper than" in str(parsed)
        return
    left = scratch.write(first.encode(), "deep-left.json")
    right = scratch.write(second.encode(), "deep-right.json")
    for path in (left, right):
        report = timed(partial(verify_trace, path))
        assert report.ok, report.first_failure
    other = timed(lambda: parse_trace(second))
    diff = timed(lambda: diff_traces(parsed, other))
    assert diff.first_divergence_index == 0
    timed(lambda: render_diff(diff, diff_outcome(parsed, other), ["secret-value"]))
    for argv in (
        ["inspect", str(left)],
        ["inspect", str(left), "--step", "0"],
        ["diff", str(left), str(right)],
    ):
        run_cli(*argv)


def _claude_code_with_result(content: str) -> str:
    lines = [
        {"type": "user", "timestamp": 1, "message": {"role": "user", "content": "go"}},
        {"type": "assistant", "timestamp": 2, "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}},
        {"type": "user", "timestamp": 3, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": content}]}},
        {"type": "assistant", "timestamp": 4, "message": {"id": "m2", "role": "assistant", "content": [
            {"type": "text", "text": "done"}]}},
    ]  # fmt: skip
    return "\n".join(json.dumps(line) for line in lines)


def _chat_with_result(content: str) -> dict[str, Any]:
    transcript: dict[str, Any] = json.loads(vector_text(TRANSCRIPTS["chat-json"][0]))
    transcript["messages"][2]["content"] = content
    return transcript


IMPORTS = {
    "claude-code": lambda content: import_claude_code(_claude_code_with_result(content), trace_id="deep"),
    "chat-json": lambda content: import_chat_json(_chat_with_result(content), trace_id="deep"),
}


@pytest.mark.parametrize("importer", list(IMPORTS))
@pytest.mark.parametrize("depth", [50, 150])
def test_importers_take_nested_tool_results(importer: str, depth: int) -> None:
    trace = timed(lambda: IMPORTS[importer](json.dumps(nested(depth, 1))))
    assert verify_trace(trace).ok


@pytest.mark.parametrize("importer", list(IMPORTS))
def test_importers_take_a_tool_result_nested_600_deep(importer: str) -> None:
    """``parse_json`` accepts the result; the importer must then import it or refuse it cleanly."""
    try:
        trace = timed(lambda: IMPORTS[importer](json.dumps(nested(600, 1))))
    except TranscriptImportError as error:
        assert_clean_message(error)
    else:
        assert verify_trace(trace).ok
