"""Inputs just under 1 MB, shaped to find quadratic paths: every call stays under the per-call limit.

Each shape targets one kind of work: many steps (hashing, schema), one wide object or long array
(schema, neutrality walk), text full of the substrings the neutrality scan looks for, many escapes,
and, among refused inputs, the error-locating scan (duplicate keys) and unterminated tokens.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import pytest

from pytest_blackbox.analysis.diff import diff_outcome, diff_traces, render_diff
from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.cli import main
from pytest_blackbox.trace.errors import CassetteReadError
from pytest_blackbox.trace.io import dumps_trace, parse_trace
from pytest_blackbox.trace.model import Trace

from .conftest import MARKER, Scratch, assert_clean_message, record, timed

MEGABYTE = 1_000_000


def _many_steps() -> Trace:
    answer = {"type": "final_answer", "text": "ok"}
    return record("many", 0, [("model_output", answer, index) for index in range(2_500)])


def _one_note(value: Any) -> Trace:
    return record("wide", 0, [("metadata", {"event": "note", "value": value}, 0)])


def _hinted_text() -> Trace:
    """Text packed with every neutrality hint, in user data and in a structural string (a tool name)."""
    noise = "toolu_ msg_ call_ chatcmpl- resp_ sk- Bearer _API_KEY "
    call = {"toolCallId": "call-0", "toolName": noise * 3, "toolInput": {"q": noise * 15_000}}
    return record("hints", 0, [("tool_call", call, 0)])


VALID: dict[str, Callable[[], Trace]] = {
    "many-steps": _many_steps,
    "wide-object": lambda: _one_note({f"k{index}": index for index in range(35_000)}),
    "long-array": lambda: _one_note(list(range(55_000))),
    "hinted-text": _hinted_text,
    "escapes": lambda: _one_note('\u00e9\n\t"\\\u2028\U0001f600' * 50_000),
}


@pytest.mark.parametrize("shape", list(VALID))
def test_large_valid_cassettes(scratch: Scratch, shape: str) -> None:
    trace = VALID[shape]()
    text = dumps_trace(trace)
    assert MEGABYTE // 2 < len(text.encode()) < MEGABYTE
    path = scratch.write(text.encode("utf-8", "surrogatepass"), f"{shape}.json")
    parsed = timed(lambda: parse_trace(text))
    report = timed(lambda: verify_trace(path, api_keys=[MARKER]))
    assert report.invariants[0].status == "pass" and report.invariants[1].status == "pass"
    diff = timed(lambda: diff_traces(parsed, _one_note("other"), semantic=True))
    timed(lambda: render_diff(diff, diff_outcome(parsed, _one_note("other")), [MARKER]))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert timed(lambda: main(["inspect", str(path)])) == 0


REFUSED = {
    "duplicate-keys": '{"a": 1, ' + '"b": [1, 2], ' * 70_000 + '"a": 2}',
    "late-nan": '{"version": 2, "steps": [' + "1, " * 300_000 + "NaN]}",
    "late-nan-short-tokens": "[" + "1," * 450_000 + "NaN]",
    "late-duplicate-in-many-objects": "[" + '{"a":1},' * 110_000 + '{"a":1,"a":2}]',
    "unterminated-string": '{"version": 2, "id": "' + "x" * 900_000,
    "open-brackets": "[" * 900_000,
    "open-objects": '{"a":' * 180_000,
    "many-quotes": '"\\"' * 300_000,
}


@pytest.mark.parametrize("shape", list(REFUSED))
def test_large_refused_inputs(scratch: Scratch, shape: str) -> None:
    text = REFUSED[shape]
    assert len(text) < MEGABYTE
    with pytest.raises(CassetteReadError) as caught:
        timed(lambda: parse_trace(text))
    assert_clean_message(caught.value)
    path = scratch.write(text.encode(), f"{shape}.json")
    report = timed(lambda: verify_trace(path))
    assert report.first_failure is not None and report.first_failure.name == "schema_version"
    json.dumps(report.to_json())
