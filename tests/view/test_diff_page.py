"""The diff page: two runs by step index, shared prefix collapsed, first divergence marked."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_blackbox.analysis.view import CHANGED_FIELDS_SHOWN, render_diff_html
from tests import vector_json

from .conftest import (
    ERROR,
    FORK_CHILD,
    FORK_PARENT,
    SUCCESS,
    TRIAGE,
    TRIAGE_FIXED,
    TRIAGE_HYPOTHESIS,
    Node,
    meta,
    parse_page,
    vector,
)


def diff_page(parent: str, child: str, **kwargs: Any) -> Node:
    return parse_page(render_diff_html(vector(parent), vector(child), **kwargs))


def changed_fields(pair: Node) -> list[tuple[str, str, str]]:
    return [
        (item.one("code", "path").text(), item.one("span", "before").text(), item.one("span", "after").text())
        for item in pair.one("div", "changes").find_all("li")
        if item.find_all("code", "path")
    ]


@pytest.mark.parametrize(
    ("parent", "child", "index"), [(FORK_PARENT, FORK_CHILD, 3), (TRIAGE, TRIAGE_HYPOTHESIS, 5)]
)
def test_fork_pairs_mark_the_first_divergence_and_collapse_the_shared_prefix(
    parent: str, child: str, index: int
) -> None:
    page = diff_page(parent, child)
    longest = max(len(vector(parent)["steps"]), len(vector(child)["steps"]))
    pairs = page.one("ol", "pairs").find_all("li", "pair")
    assert [pair.attrs["data-index"] for pair in pairs] == [str(i) for i in range(index, longest)]
    (divergence,) = page.find_all("li", "divergence")
    assert divergence.attrs["data-index"] == str(index)
    marker = divergence.one("div", "marker", id="divergence")
    assert marker.text() == f"▶ first divergence · tool_result differs at index {index}"
    shared = page.one("details", "shared")
    assert shared.find_all("summary")[0].text() == (
        f"shared prefix: {index} identical step(s) (0–{index - 1}), collapsed"
    )
    assert [row.attrs["id"] for row in shared.find_all("li", "step")] == [
        f"parent-step-{i}" for i in range(index)
    ]
    assert "open" not in shared.attrs
    assert meta(page)["First divergence"] == f"index {index}"
    assert meta(page)["Shared prefix"] == f"{index} step(s)"


def test_changed_fields_at_the_triage_divergence_match_the_documented_paths() -> None:
    page = diff_page(TRIAGE, TRIAGE_HYPOTHESIS)
    documented = vector_json("expectations.json")["forks"][1]["upstreamDocumented"]["changedFields"]
    expected = [
        (path, "(absent)" if before is None else f'"{before}"', f'"{after}"')
        for path, before, after in documented
    ]
    assert changed_fields(page.one("li", "divergence")) == expected
    sides = page.one("li", "divergence").find_all("div", "side")
    assert [side.classes for side in sides] == [["side", "parent", "changed"], ["side", "child", "changed"]]
    assert [side.one("li", "step").attrs["id"] for side in sides] == ["parent-step-5", "child-step-5"]


def test_header_names_both_runs_the_fork_point_and_the_outcome_change() -> None:
    page = diff_page(TRIAGE, TRIAGE_HYPOTHESIS, labels=("a.json", "b.json"))
    rows = meta(page)
    assert rows["Parent"] == "triage-incident a.json"
    assert rows["Child"] == "triage-hypothesis b.json"
    assert rows["Child's fork point"] == "triage-incident:5 (a step of the parent)"
    assert rows["Comparison"] == "integrity (step hashes)"
    assert rows["Outcome"] == "same final status (success), but the final answer changed"
    assert rows["Parent tools"] == "lookup_dtc → get_telemetry → get_service_history → open_work_order"
    assert rows["Child tools"] == "lookup_dtc → get_telemetry → open_work_order"


def test_a_child_turn_links_its_history_to_the_shared_prefix_rows() -> None:
    page = diff_page(TRIAGE, TRIAGE_HYPOTHESIS)
    child_turn = page.one("li", "step", id="child-step-6")
    assert child_turn.one("p", "note").one("a").attrs["href"] == "#parent-step-0"
    assert page.find_all(id="parent-step-0") != []


def test_a_step_type_change_is_named_and_a_missing_step_is_shown_as_missing() -> None:
    page = diff_page(FORK_PARENT, FORK_CHILD)
    child_length = len(vector(FORK_CHILD)["steps"])
    type_change = [
        pair
        for pair in page.find_all("li", "pair")
        for changes in pair.find_all("div", "changes")
        if changes.text().startswith("step type:")
    ]
    assert type_change, "the fork child ends earlier, so some pair must differ in step type"
    missing = page.one("li", "pair", id=f"pair-{child_length}").one("div", "child")
    assert missing.one("p", "missing").text() == f"(child run has no step {child_length})"


def test_identical_runs_under_other_ids_have_no_divergence() -> None:
    page = diff_page(SUCCESS, FORK_PARENT)
    assert page.find_all("li", "pair") == []
    assert page.find_all(id="divergence") == []
    assert page.one("p", "same").text() == "No divergence: the runs match step for step."
    assert len(page.one("details", "shared").find_all("li", "step")) == 15
    assert meta(page)["First divergence"] == "none"


def test_an_immediate_divergence_has_no_shared_prefix() -> None:
    page = diff_page(SUCCESS, ERROR)
    assert page.find_all("details", "shared") == []
    assert page.one("li", "divergence").attrs["data-index"] == "0"
    assert meta(page)["Outcome"] == "outcome flipped: parent success → child error"


def test_semantic_comparison_of_two_recordings_diverges_where_payloads_do() -> None:
    integrity = diff_page(TRIAGE, TRIAGE_FIXED)
    assert integrity.one("li", "divergence").attrs["data-index"] == "0"
    semantic = diff_page(TRIAGE, TRIAGE_FIXED, semantic=True)
    assert semantic.one("li", "divergence").attrs["data-index"] == "5"
    assert meta(semantic)["Comparison"].startswith("semantic (step type + payload")
    first_pair_after_prefix = integrity.one("li", "pair", id="pair-0")
    assert first_pair_after_prefix.one("div", "changes").text() == (
        "same payload; only the timestamp or the hash chain differs"
    )


def test_many_changed_fields_are_capped() -> None:
    parent, child = vector(SUCCESS), vector(SUCCESS)
    count = CHANGED_FIELDS_SHOWN + 5
    parent["steps"][0] = {**parent["steps"][0], "payload": {"extra": {f"k{n}": 0 for n in range(count)}}}
    child["steps"][0] = {**child["steps"][0], "payload": {"extra": {f"k{n}": 1 for n in range(count)}}}
    page = parse_page(render_diff_html(parent, child, semantic=True))
    changes = page.one("li", "divergence").one("div", "changes")
    assert changed_fields(page.one("li", "divergence"))[:2] == [
        ("extra.k0", "0", "1"),
        ("extra.k1", "0", "1"),
    ]
    assert len(changed_fields(page.one("li", "divergence"))) == CHANGED_FIELDS_SHOWN
    assert changes.find_all("li")[-1].text() == "… and 5 more changed field(s)"


def test_markup_in_a_changed_value_is_escaped() -> None:
    parent, child = vector(FORK_PARENT), vector(FORK_CHILD)
    child["steps"][3]["payload"]["result"] = "<script>window.__pwned=1</script>"
    page = parse_page(render_diff_html(parent, child))
    assert len(page.find_all("script")) == 1
    ((path, _, after),) = changed_fields(page.one("li", "divergence"))
    assert (path, after) == ("result", '"<script>window.__pwned=1</script>"')
