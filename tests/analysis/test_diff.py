"""diff: integrity and semantic divergence, outcome verdicts, and the report layout."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.analysis.diff import diff_outcome, diff_traces, render_diff
from pytest_blackbox.trace.io import dumps_trace, load_trace
from pytest_blackbox.trace.model import Trace
from tests.trace.conftest import conversation

from .conftest import read_trace, rechain


def _pairs(expectations: dict[str, Any]) -> list[dict[str, Any]]:
    return [*expectations["forks"], *expectations["otherComparisons"]]


def test_expected_pairs(expectations: dict[str, Any]) -> None:
    pairs = _pairs(expectations)
    assert len(pairs) == 5
    for pair in pairs:
        parent, child = read_trace(pair["parent"]), read_trace(pair["child"])
        diff = diff_traces(parent, child)
        assert diff.parent_trace_id == pair["parentTraceId"]
        assert diff.child_trace_id == pair["childTraceId"]
        assert diff.has_divergence is pair["hasDivergence"]
        assert diff.first_divergence_index == pair["firstDivergenceIndex"]
        assert diff.shared_prefix_length == pair["sharedPrefixLength"]
        assert (
            diff_traces(parent, child, semantic=True).first_divergence_index
            == pair["semanticFirstDivergenceIndex"]
        )
        if pair["hasDivergence"]:
            assert diff.summary == pair["summary"]
            assert diff.parent_step is not None and diff.child_step is not None
            assert diff.parent_step["hash"] == pair["parentStepHashAtDivergence"]
            assert diff.child_step["hash"] == pair["childStepHashAtDivergence"]
            outcome = diff_outcome(parent, child)
            assert outcome.verdict == pair["outcomeVerdict"]
            assert (outcome.parent.status, outcome.child.status) == (
                pair["parentStatus"],
                pair["childStatus"],
            )
            assert outcome.parent_tools == pair["parentToolCallSequence"]
            assert outcome.child_tools == pair["childToolCallSequence"]
        else:
            assert diff.summary == "no divergence"
            assert diff.parent_step is None and diff.child_step is None


def test_independent_recordings_integrity_zero_semantic_five(expectations: dict[str, Any]) -> None:
    pair = expectations["otherComparisons"][2]
    parent, child = read_trace(pair["parent"]), read_trace(pair["child"])
    assert diff_traces(parent, child).first_divergence_index == 0
    semantic = diff_traces(parent, child, semantic=True)
    assert (semantic.first_divergence_index, semantic.shared_prefix_length) == (5, 5)
    assert semantic.summary == "tool_result differs at index 5"


def test_fork_pair_report_exact() -> None:
    parent = read_trace("fixtures/traces/fork-parent.v2.json")
    child = read_trace("fixtures/traces/fork-child.v2.json")
    text = render_diff(diff_traces(parent, child), diff_outcome(parent, child))
    assert text.splitlines() == [
        "--- trace diff ---",
        "Parent:         fixture-fork-parent",
        "Child:          fixture-fork-parent-fork",
        "Shared prefix:  3 step(s)",
        "",
        "Summary:        tool_result differs at index 3",
        "First divergence at index 3",
        "  parent  tool result     a201c469  Tool result: search → ok",
        "  child   tool result     bbf0f149  Tool result: search → ok",
        "  changed value (result):",
        '    parent: {"results":[{"title":"Fixture result A for \\"weekend hotels\\"","snippet":"First '
        'deterministic result."},{"title":"Fixture result B for \\"weekend hotels\\"","snippet":"Second '
        'deterministic result."}]}',
        '    child:  {"results":[],"available":false,"message":"No hotels available for that date."}',
        "",
        "Outcome:        same final status (success), but the final answer changed",
        "  parent answer: Hotel booked for Alice on 2024-03-15 at 14:00.",
        "  child answer:  No hotels available for Alice this weekend. The area is fully booked — consider a "
        "different date.",
        "  parent tools:  search → calendar → booking",
        "  child tools:   search",
    ]


def test_triage_report_lists_changed_fields(expectations: dict[str, Any]) -> None:
    parent = read_trace("examples/fleet-triage/cassettes/triage-incident.json")
    child = read_trace("examples/fleet-triage/cassettes/triage-hypothesis.json")
    lines = render_diff(diff_traces(parent, child), diff_outcome(parent, child)).splitlines()
    start = lines.index("  changed fields:")
    documented = expectations["forks"][1]["upstreamDocumented"]["changedFields"]
    shown = [
        f'    {path}: {"(absent)" if before is None else chr(34) + before + chr(34)} → "{after}"'
        for path, before, after in documented
    ]
    assert lines[start + 1 : start + 1 + len(shown)] == shown
    assert lines[start + 1] == '    result.data[0].dp.value: "91" → "124"'
    assert lines[start + 5] == '    result.data[2].dp.value[0]: (absent) → "P0217"'
    assert lines[-2:] == [
        "  parent tools:  lookup_dtc → get_telemetry → get_service_history → open_work_order",
        "  child tools:   lookup_dtc → get_telemetry → open_work_order",
    ]


def test_semantic_report_names_the_comparison() -> None:
    parent = read_trace("examples/fleet-triage/cassettes/triage-incident.json")
    child = read_trace("examples/fleet-triage/cassettes/triage-fixed.json")
    lines = render_diff(diff_traces(parent, child, semantic=True), diff_outcome(parent, child)).splitlines()
    assert lines[:6] == [
        "--- trace diff ---",
        "Parent:         triage-incident",
        "Child:          triage-fixed",
        "Comparison:      semantic (step type + payload; timestamps and hash-chain fields ignored)",
        "Shared prefix:  5 step(s)",
        "",
    ]
    assert (
        '    result.cache_rejected: (absent) → "snapshot captured 2026-09-28T17:05:00Z, before P0217 was set '
        'at 2026-09-29T07:58:00Z"'
    ) in lines


def test_no_divergence_report() -> None:
    """The original's verdict words: "Traces are identical", then "no behavioral change"."""
    parent = read_trace("fixtures/traces/success-tool-use.v2.json")
    child = read_trace("fixtures/traces/fork-parent.v2.json")
    assert render_diff(diff_traces(parent, child), diff_outcome(parent, child)).splitlines() == [
        "--- trace diff ---",
        "Parent:         fixture-success-tool-use",
        "Child:          fixture-fork-parent",
        "Shared prefix:  15 step(s)",
        "",
        "Traces are identical (no divergence)",
        "",
        "Outcome:        no behavioral change: the divergence did not alter the run outcome",
        "  parent tools:  search → calendar → booking",
        "  child tools:   search → calendar → booking",
    ]


def _truncated(trace: Trace, length: int) -> Trace:
    shorter = copy.deepcopy(trace)
    shorter["steps"] = shorter["steps"][:length]
    return shorter


def test_strict_prefixes() -> None:
    full = read_trace("fixtures/traces/success-tool-use.v2.json")
    short = _truncated(full, 6)
    child_ended = diff_traces(full, short)
    assert child_ended.summary == "child ended before parent at index 6"
    assert child_ended.is_child_strict_prefix_of_parent and not child_ended.is_parent_strict_prefix_of_child
    assert (child_ended.shared_prefix_length, child_ended.child_step) == (6, None)
    parent_ended = diff_traces(short, full)
    assert parent_ended.summary == "parent ended before child at index 6"
    assert parent_ended.is_parent_strict_prefix_of_child
    lines = render_diff(parent_ended, diff_outcome(short, full)).splitlines()
    assert lines[7:11] == [
        "  parent  <no step>",
        "  child   tool call       defbd702  Tool called: calendar",
        "  (parent is a strict prefix of child)",
        "",
    ]
    assert "Outcome:        outcome flipped: parent incomplete → child success" in lines
    lines = render_diff(child_ended, diff_outcome(full, short)).splitlines()
    assert lines[7:10] == [
        "  parent  tool call       defbd702  Tool called: calendar",
        "  child   <no step>",
        "  (child is a strict prefix of parent)",
    ]


def test_type_mismatch_summary() -> None:
    parent = read_trace("fixtures/traces/success-final-answer.v2.json")
    child = copy.deepcopy(parent)
    child["steps"][1] = {
        **child["steps"][1],
        "type": "tool_call",
        "payload": {"toolCallId": "call-0", "toolName": "x", "toolInput": {}},
    }
    diff = diff_traces(parent, rechain(child))
    assert diff.summary == "model_output vs tool_call at index 1"


def _with_outcome(name: str, last_payload: dict[str, Any]) -> Trace:
    trace = read_trace(name)
    trace["steps"][-1]["payload"] = last_payload
    return rechain(trace)


def test_outcome_verdicts() -> None:
    base = read_trace("fixtures/traces/success-tool-use.v2.json")
    same = diff_outcome(
        base, _with_outcome("fixtures/traces/success-tool-use.v2.json", base["steps"][-1]["payload"])
    )
    assert same.verdict == "no behavioral change: the divergence did not alter the run outcome"
    failed = {"event": "run_failed", "status": "error", "reason": "max_steps_exceeded", "maxSteps": 3}
    other_reason = {"event": "run_failed", "status": "error", "reason": "process_exit", "exitCode": 1}
    a = _with_outcome("fixtures/traces/success-tool-use.v2.json", failed)
    b = _with_outcome("fixtures/traces/success-tool-use.v2.json", other_reason)
    assert diff_outcome(a, b).verdict == "same final status (error), but the failure reason changed"
    assert diff_outcome(base, a).verdict == "outcome flipped: parent success → child error"
    fewer_tools = copy.deepcopy(base)
    fewer_tools["steps"][2]["payload"]["toolName"] = "lookup"
    path = diff_outcome(base, rechain(fewer_tools))
    assert path.verdict == "same outcome, but the tool-call path changed"
    assert path.to_json() == {
        "verdict": "same outcome, but the tool-call path changed",
        "parentStatus": "success",
        "childStatus": "success",
        "statusChanged": False,
        "resultChanged": False,
        "toolsChanged": True,
        "parentToolCallSequence": ["search", "calendar", "booking"],
        "childToolCallSequence": ["lookup", "calendar", "booking"],
    }


def test_long_changes_are_capped_and_masked() -> None:
    key = "sk-proj-" + "w" * 40
    base = read_trace("fixtures/traces/error-unknown-tool.v2.json")
    base["steps"][3]["payload"] = {"toolCallId": "call-0", "toolName": "flights", "result": {}}
    parent = rechain(base)
    child = copy.deepcopy(base)
    child["steps"][3]["payload"]["result"] = {f"k{i}": f"value {i} {key}" for i in range(30)}
    child = rechain(child)
    lines = render_diff(diff_traces(parent, child), diff_outcome(parent, child)).splitlines()
    assert key not in "\n".join(lines) and "wwww" not in "\n".join(lines)
    start = lines.index("  changed fields:")
    assert lines[start + 1] == '    result.k0: (absent) → "value 0 [redacted]"'
    assert lines[start + 20] == '    result.k19: (absent) → "value 19 [redacted]"'
    assert lines[start + 21] == "    … and 10 more changed field(s)"


def test_values_up_to_240_characters_are_shown_whole() -> None:
    base = read_trace("fixtures/traces/error-unknown-tool.v2.json")
    base["steps"][3]["payload"] = {"toolCallId": "call-0", "toolName": "flights", "result": "a" * 100}
    parent = rechain(base)
    base["steps"][3]["payload"]["result"] = "b" * 238  # 240 characters with its quotes
    assert render_diff(diff_traces(parent, rechain(base))).splitlines()[-3:] == [
        "  changed value (result):",
        '    parent: "' + "a" * 100 + '"',
        '    child:  "' + "b" * 238 + '"',
    ]
    base["steps"][3]["payload"]["result"] = "b" * 239
    assert render_diff(diff_traces(parent, rechain(base))).splitlines()[-2:] == [
        "  changed fields:",
        '    result: "' + "a" * 100 + '" → "' + "b" * 198 + "…",
    ]


def test_unchanged_salient_field_shows_the_whole_payload() -> None:
    parent = read_trace("fixtures/traces/error-unknown-tool.v2.json")
    child = copy.deepcopy(parent)
    child["steps"][2]["payload"]["toolName"] = "hotels"
    assert render_diff(diff_traces(parent, rechain(child))).splitlines()[-5:] == [
        "  parent  tool call       06306ddf  Tool called: flights",
        "  child   tool call       5d071d81  Tool called: hotels",
        "  changed value (payload):",
        '    parent: {"toolCallId":"call-0","toolName":"flights","toolInput":{"destination":"Tokyo"}}',
        '    child:  {"toolCallId":"call-0","toolName":"hotels","toolInput":{"destination":"Tokyo"}}',
    ]


def test_steps_differing_only_in_timestamps_say_so_instead_of_an_empty_change_list() -> None:
    parent = read_trace("fixtures/traces/success-tool-use.v2.json")
    child = copy.deepcopy(parent)
    child["id"] = "rerun"
    for step in child["steps"]:
        step["timestamp"] = 1_700_000_000_000 + step["index"]
    child = rechain(child)
    assert render_diff(diff_traces(parent, child), diff_outcome(parent, child)).splitlines()[5:] == [
        "Summary:        model_input differs at index 0",
        "First divergence at index 0",
        "  parent  model input     0e91489d  Model called with 1 message(s)",
        "  child   model input     2358d824  Model called with 1 message(s)",
        "  changed fields: none — the payloads are equal; "
        "the timestamps differ (parent 0, child 1700000000000)",
        "",
        "Outcome:        no behavioral change: the divergence did not alter the run outcome",
        "  parent tools:  search → calendar → booking",
        "  child tools:   search → calendar → booking",
    ]


def test_steps_with_equal_payloads_name_the_type_or_the_hash_as_the_difference() -> None:
    parent = read_trace("fixtures/traces/success-final-answer.v2.json")
    retyped = copy.deepcopy(parent)
    retyped["steps"][1]["type"] = "tool_result"
    lines = render_diff(diff_traces(parent, rechain(retyped))).splitlines()
    assert lines[-1] == "  changed fields: none — the payloads are equal; the step types differ"
    tampered = copy.deepcopy(parent)
    tampered["steps"][1]["hash"] = "0" * 64
    lines = render_diff(diff_traces(parent, tampered)).splitlines()
    assert lines[-1] == (
        "  changed fields: none — the payloads are equal; "
        "only the stored hashes differ (run blackbox verify on both cassettes)"
    )


@pytest.mark.parametrize(
    ("before", "after"), [({"n": 3}, {"n": 4}), (True, 1), ({"a": 1, "b": 2}, {"a": 1, "c": 2})]
)
def test_a_message_changed_in_a_long_history_diverges_where_it_first_differs(
    tmp_path: Path, before: Any, after: Any
) -> None:
    """Read with ``shared=True``, each file holds each repeated message once and the items are compared
    pair by pair; the child's message 4 differs from step 30 on (``true`` against ``1`` too)."""
    answers = [{"v": before} if turn == 3 else {"n": turn} for turn in range(50)]
    changed = [{"v": after} if turn == 3 else {"n": turn} for turn in range(50)]
    parent, child = conversation(50, answers), conversation(50, answers)
    for step in child["steps"][30:]:
        step["payload"]["messages"][4]["content"][0]["result"] = changed[3]
    child = rechain(child)
    for trace, name in ((parent, "parent.json"), (child, "child.json")):
        (tmp_path / name).write_text(dumps_trace(trace), encoding="utf-8")
    loaded = [load_trace(tmp_path / name, shared=True) for name in ("parent.json", "child.json")]
    assert (
        loaded[1]["steps"][49]["payload"]["messages"][4] is loaded[1]["steps"][30]["payload"]["messages"][4]
    )
    diff = diff_traces(*loaded, semantic=True)
    assert (diff.first_divergence_index, diff.shared_prefix_length) == (30, 30)
    again = load_trace(tmp_path / "parent.json", shared=True)
    assert diff_traces(loaded[0], again, semantic=True).first_divergence_index is None
