"""``fork_run``: the demo fork reproduces ``fork-child.v2.json`` and refuses every unsound fork."""

from __future__ import annotations

import copy
import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.analysis.diff import diff_traces
from pytest_blackbox.demo.agent import ScriptedDemoModel, run_demo
from pytest_blackbox.demo.fork import ForkResult, fork_run, next_call_index
from pytest_blackbox.errors import ForkError
from pytest_blackbox.importers import import_claude_code
from pytest_blackbox.trace.io import dumps_trace, same_file
from pytest_blackbox.trace.payloads import terminal_outcome

NO_HOTELS = {"results": [], "available": False, "message": "No hotels available for that date."}
CHILD_ANSWER = (
    "No hotels available for Alice this weekend. The area is fully booked — consider a different date."
)


def pinned() -> int:
    return 0


def _fixture_fork(parent: Any) -> ForkResult:
    return fork_run(
        parent,
        4,
        "fixture-fork-parent-fork",
        tool_result_mutations={3: copy.deepcopy(NO_HOTELS)},
        model=ScriptedDemoModel([{"type": "final_answer", "text": CHILD_ANSWER}]),
        clock=pinned,
    )


def test_reproduces_the_fork_child_fixture(
    fork_parent: Any, fork_child_text: str, expectations: dict[str, Any]
) -> None:
    result = _fixture_fork(fork_parent)
    child = result.child_trace
    expected = expectations["cassettes"]["fixtures/traces/fork-child.v2.json"]
    assert [step["hash"] for step in child["steps"]] == expected["stepHashes"]
    assert child["parentId"] == "fixture-fork-parent"
    assert child["forkedFromStepId"] == "fixture-fork-parent:4"
    assert [step["id"] for step in child["steps"]][:4] == [f"fixture-fork-parent-fork:{i}" for i in range(4)]
    assert list(child["steps"][3]["payload"]) == ["toolName", "result", "toolCallId"]
    assert dumps_trace(child) == fork_child_text
    assert result.final_answer == CHILD_ANSWER
    assert result.prefix_length == 3


def test_the_demo_fork_writes_array_index_keys_first(fork_parent: Any) -> None:
    mutation = {"results": [], "10": "b", "2": "a"}
    result = fork_run(fork_parent, 4, "child", tool_result_mutations={3: mutation}, clock=pinned)
    child = json.loads(dumps_trace(result.child_trace))
    assert list(child["steps"][3]["payload"]["result"]) == ["2", "10", "results"]


def test_lineage_and_divergence(fork_parent: Any) -> None:
    child = _fixture_fork(fork_parent).child_trace
    assert [s["hash"] for s in child["steps"][:3]] == [s["hash"] for s in fork_parent["steps"][:3]]
    assert child["steps"][3]["prevHash"] == fork_parent["steps"][2]["hash"]
    assert child["steps"][3]["hash"] != fork_parent["steps"][3]["hash"]
    diff = diff_traces(fork_parent, child)
    assert (diff.first_divergence_index, diff.shared_prefix_length) == (3, 3)


def test_parent_is_not_modified(fork_parent: Any) -> None:
    before = json.dumps(fork_parent)
    child = _fixture_fork(fork_parent).child_trace
    child["steps"][0]["payload"]["messages"].append({"role": "user", "content": "edited"})
    assert json.dumps(fork_parent) == before


def test_reactive_model_is_the_default(fork_parent: Any) -> None:
    result = fork_run(fork_parent, 4, "child", tool_result_mutations={3: NO_HOTELS}, clock=pinned)
    assert result.final_answer == (
        'Based on the search result, no options are available: "No hotels available for that date.". '
        "I could not complete the booking."
    )
    assert terminal_outcome(result.child_trace).status == "success"


def test_mutated_steps_keep_their_timestamps_and_new_steps_use_the_clock() -> None:
    ticks = itertools.count(100)
    parent = run_demo("success", lambda: next(ticks))
    result = fork_run(parent, 4, "child", tool_result_mutations={3: NO_HOTELS}, clock=lambda: 9000)
    child = result.child_trace
    assert child["createdAt"] == 9000
    assert [s["timestamp"] for s in child["steps"]] == [101, 102, 103, 104, 9000, 9000, 9000]
    assert [s["hash"] for s in child["steps"][:3]] == [s["hash"] for s in parent["steps"][:3]]


def test_without_mutations_the_prefix_is_copied_up_to_the_fork_point(fork_parent: Any) -> None:
    result = fork_run(fork_parent, 4, "child", clock=pinned)
    child = result.child_trace
    assert result.prefix_length == 4
    assert [s["hash"] for s in child["steps"][:4]] == [s["hash"] for s in fork_parent["steps"][:4]]
    assert child["steps"][4]["payload"]["messages"] == [
        {"role": "user", "content": "Book a hotel for Alice this weekend."}
    ]
    assert diff_traces(fork_parent, child).first_divergence_index == 4


def test_prompt_fork_starts_fresh_from_the_new_prompt(fork_parent: Any) -> None:
    result = fork_run(fork_parent, 4, "child", prompt_mutation="Find a cheap hostel.", clock=pinned)
    steps = result.child_trace["steps"]
    assert steps[4]["payload"]["messages"] == [{"role": "user", "content": "Find a cheap hostel."}]
    assert result.final_answer == (
        'No tool results were available; responding to the request directly: "Find a cheap hostel.".'
    )
    assert [s["type"] for s in steps[4:]] == ["model_input", "model_output", "metadata"]


def test_fork_at_a_model_output_adds_a_new_model_input(fork_parent: Any) -> None:
    child = fork_run(fork_parent, 5, "child", clock=pinned).child_trace
    assert [s["hash"] for s in child["steps"][:5]] == [s["hash"] for s in fork_parent["steps"][:5]]
    assert child["steps"][5]["type"] == "model_input"
    assert child["forkedFromStepId"] == "fixture-fork-parent:5"


def test_new_calls_continue_past_the_prefix_call_ids(fork_parent: Any) -> None:
    model = ScriptedDemoModel(
        [
            {"type": "tool_call", "toolName": "calendar", "toolInput": {"date": "2024-03-16"}},
            {"type": "final_answer", "text": "done"},
        ]
    )
    child = fork_run(fork_parent, 4, "child", tool_result_mutations={3: NO_HOTELS}, model=model, clock=pinned)
    calls = [s["payload"]["toolCallId"] for s in child.child_trace["steps"] if s["type"] == "tool_call"]
    assert calls == ["call-0", "call-1"]
    assert next_call_index(fork_parent["steps"]) == 3
    assert next_call_index([]) == 0


def test_history_is_rebuilt_from_a_parallel_round(vector_text: Callable[[str], str]) -> None:
    parent = import_claude_code(vector_text("fixtures/import/claude-code-session.jsonl"), trace_id="cc")
    new_config = {"EU": {"vatIncluded": True, "rate": 0.2}}
    model = ScriptedDemoModel([{"type": "final_answer", "text": "fixed"}])
    child = fork_run(parent, 6, "cc-fork", tool_result_mutations={3: new_config}, model=model, clock=pinned)
    expected = copy.deepcopy(parent["steps"][6]["payload"]["messages"])
    expected[2]["content"][0]["result"] = new_config
    steps = child.child_trace["steps"]
    assert steps[6]["payload"]["messages"] == expected
    assert expected[1]["content"][0] == {
        "type": "text",
        "text": "I'll read the tax config and run the failing test in parallel.",
    }
    assert [s["hash"] for s in steps[:3]] == [s["hash"] for s in parent["steps"][:3]]
    assert steps[5]["hash"] != parent["steps"][5]["hash"]  # re-appended after the mutation: new chain
    assert steps[5]["payload"] == parent["steps"][5]["payload"]


@pytest.mark.parametrize("index", [-1, 15, 99])
def test_fork_index_out_of_range(fork_parent: Any, index: int) -> None:
    with pytest.raises(ForkError) as caught:
        fork_run(fork_parent, index, "child", clock=pinned)
    assert str(caught.value) == f"fork_run: fork_index {index} out of range — parent has 15 step(s)"


def test_metadata_is_not_a_fork_point(fork_parent: Any) -> None:
    with pytest.raises(ForkError, match=r"^fork_run: step 14 is a metadata step"):
        fork_run(fork_parent, 14, "child", clock=pinned)


def test_a_model_input_between_mutation_and_fork_point_is_refused(fork_parent: Any) -> None:
    with pytest.raises(ForkError) as caught:
        fork_run(fork_parent, 5, "child", tool_result_mutations={3: NO_HOTELS}, clock=pinned)
    assert str(caught.value) == (
        "fork_run: step 4 is a model_input between the mutated step 3 and the fork point 5, and it would "
        "still show the old result; fork at step 4 or earlier"
    )


def test_only_tool_results_can_be_mutated(fork_parent: Any) -> None:
    with pytest.raises(ForkError) as caught:
        fork_run(fork_parent, 4, "child", tool_result_mutations={2: NO_HOTELS}, clock=pinned)
    assert str(caught.value) == (
        "fork_run: step 2 is a tool_call step; tool_result_mutations can only replace tool results "
        "(this cassette has tool results at 3, 7, 11)"
    )


@pytest.mark.parametrize("index", [4, 7, -1])
def test_mutations_must_precede_the_fork_point(fork_parent: Any, index: int) -> None:
    with pytest.raises(
        ForkError, match=rf"^fork_run: a tool result mutation at step {index} must come before"
    ):
        fork_run(fork_parent, 4, "child", tool_result_mutations={index: NO_HOTELS}, clock=pinned)


def test_prompt_and_tool_result_mutations_are_exclusive(fork_parent: Any) -> None:
    with pytest.raises(ForkError, match=r"not both"):
        fork_run(fork_parent, 4, "child", "new prompt", {3: NO_HOTELS}, clock=pinned)


def test_a_corrupted_prefix_is_refused(fork_parent: Any) -> None:
    fork_parent["steps"][1]["payload"]["toolInput"]["query"] = "edited"
    with pytest.raises(ForkError, match=r"^fork_run: the parent's step 1 does not match its hash chain"):
        fork_run(fork_parent, 4, "child", tool_result_mutations={3: NO_HOTELS}, clock=pinned)


def test_a_mutation_that_json_cannot_hold_is_refused(fork_parent: Any) -> None:
    with pytest.raises(ForkError) as caught:
        fork_run(fork_parent, 4, "child", tool_result_mutations={3: {"tags": {1, 2}}}, clock=pinned)
    assert str(caught.value).startswith(
        "fork_run: a set in the tool result mutation for step 3 is not supported"
    )


def test_same_file_sees_through_spellings_and_links(tmp_path: Path) -> None:
    target = tmp_path / "parent.json"
    target.write_text("{}", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    os.symlink(target, tmp_path / "link.json")
    os.link(target, tmp_path / "hard.json")
    assert same_file(target, target)
    assert same_file(tmp_path / "sub" / ".." / "parent.json", target)
    assert same_file(tmp_path / "link.json", target)
    assert same_file(tmp_path / "hard.json", target)
    assert not same_file(tmp_path / "missing.json", target)
    other = tmp_path / "other.json"
    other.write_text("{}", encoding="utf-8")
    assert not same_file(other, target)
