"""``diff_traces`` / ``diff_outcome`` / ``render_diff`` on random valid traces and on edited vectors.

Besides "only a ``BlackboxError`` or a result", the verdict is checked against a direct oracle:
the integrity diff diverges at the first unequal hash, the semantic one at the first unequal
(type, payload), and a rendered diff never shows a secret it was given.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_blackbox.analysis.diff import diff_outcome, diff_traces, render_diff
from pytest_blackbox.trace.canonical import canonical_json
from pytest_blackbox.trace.io import parse_trace
from pytest_blackbox.trace.model import Trace
from pytest_blackbox.trace.payloads import terminal_outcome, tool_call_sequence

from .conftest import (
    MARKER,
    MARKER_RUNS,
    attempt,
    cassette_names,
    finite_scalars,
    fuzz_settings,
    get_at,
    json_paths,
    json_values,
    note,
    planted_cassette,
    random_steps,
    random_traces,
    record,
    replaced_at,
    reseal,
    texts,
    timed,
    timestamps,
)

VERDICTS = (
    "outcome flipped: parent ",
    "same final status (",
    "same outcome, but the tool-call path changed",
    "no behavioral change: the divergence did not alter the run outcome",
)


def _first(length: int, differs: Any) -> int | None:
    return next((index for index in range(length) if differs(index)), None)


def expected_divergence(parent: Trace, child: Trace, semantic: bool) -> int | None:
    """The oracle: first index whose hash (or type and payload) differs, or where one side has no step."""
    left, right = parent["steps"], child["steps"]

    def key(step: Any) -> Any:
        return (step["type"], canonical_json(step["payload"])) if semantic else step["hash"]

    shorter = min(len(left), len(right))
    found = _first(shorter, lambda index: key(left[index]) != key(right[index]))
    if found is not None:
        return found
    return None if len(left) == len(right) else shorter


def check_diff(parent: Trace, child: Trace, secrets: tuple[str, ...] = (MARKER,)) -> None:
    for semantic in (False, True):
        diff = attempt(partial(diff_traces, parent, child, semantic=semantic))
        if isinstance(diff, BaseException):
            note(type(diff).__name__)
            continue
        expected = expected_divergence(parent, child, semantic)
        assert diff.first_divergence_index == expected
        assert diff.has_divergence is (expected is not None)
        if expected is not None:
            assert diff.shared_prefix_length == expected
        note("diverges" if diff.has_divergence else "identical")
        json.dumps(diff.to_json())
        outcome = attempt(lambda: diff_outcome(parent, child))
        if isinstance(outcome, BaseException):
            continue
        assert outcome.verdict.startswith(VERDICTS)
        assert outcome.status_changed is (terminal_outcome(parent).status != terminal_outcome(child).status)
        assert outcome.tools_changed is (tool_call_sequence(parent) != tool_call_sequence(child))
        json.dumps(outcome.to_json())
        text = attempt(partial(render_diff, diff, outcome, secrets))
        if isinstance(text, str) and secrets:
            assert not any(run in text for run in MARKER_RUNS), "a secret reached the rendered diff"


@fuzz_settings(100)
@given(random_traces, random_traces)
def test_independent_random_traces(parent: Trace, child: Trace) -> None:
    check_diff(parent, child)


@fuzz_settings(100)
@given(random_traces, st.data())
def test_forked_random_traces(parent: Trace, data: st.DataObject) -> None:
    shared = data.draw(st.integers(0, len(parent["steps"])))
    tail = data.draw(random_steps())
    child = record(data.draw(texts), parent["createdAt"], tail, parent, shared)
    check_diff(parent, child)
    check_diff(child, parent)


@fuzz_settings(25)
@given(random_traces)
def test_a_trace_does_not_diverge_from_itself(trace: Trace) -> None:
    for semantic in (False, True):
        diff = timed(partial(diff_traces, trace, trace, semantic=semantic))
        assert diff.first_divergence_index is None
        assert diff.shared_prefix_length == len(trace["steps"])
    assert timed(lambda: diff_outcome(trace, trace)).verdict == VERDICTS[3]


def _edited_vector(data: st.DataObject, name: str) -> tuple[Trace, Trace]:
    """The planted vector, and a re-recorded copy with one value inside a step's payload replaced."""
    doc = json.loads(planted_cassette(name))
    parent = parse_trace(planted_cassette(name))
    payload_paths = [path for path in json_paths(doc) if len(path) >= 3 and path[2] == "payload"]
    path = data.draw(st.sampled_from(payload_paths))
    value: Any = data.draw(st.sampled_from([None, 0, "", MARKER, [], {}]) | json_values(finite_scalars, 6))
    edited = replaced_at(doc, path, value)
    if data.draw(st.booleans()):
        index = data.draw(st.integers(0, len(doc["steps"]) - 1))
        edited = replaced_at(edited, ("steps", index, "timestamp"), data.draw(timestamps))
    note("same value" if get_at(doc, path) == value else "edited")
    return parent, reseal(edited)


@fuzz_settings(50)
@given(st.sampled_from(cassette_names()), st.data())
def test_edited_vectors(name: str, data: st.DataObject) -> None:
    parent, child = _edited_vector(data, name)
    check_diff(parent, child)
    check_diff(child, parent, ())


@pytest.mark.parametrize("child_name", cassette_names())
@pytest.mark.parametrize("parent_name", cassette_names())
def test_pairs_of_vectors(parent_name: str, child_name: str) -> None:
    check_diff(parse_trace(planted_cassette(parent_name)), parse_trace(planted_cassette(child_name)))
