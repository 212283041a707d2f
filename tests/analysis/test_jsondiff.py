"""first_difference, changed_leaf_paths and render_value."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_blackbox.analysis.jsondiff import (
    ABSENT,
    Difference,
    LeafChange,
    changed_leaf_paths,
    compact_json,
    first_difference,
    format_path,
    render_value,
)

from .conftest import read_trace


def test_equal_values_have_no_difference() -> None:
    assert first_difference({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]}) is None


@pytest.mark.parametrize(
    ("expected", "actual", "difference"),
    [
        (1, 2, Difference("(root)", 1, 2)),
        (
            {"messages": [{"role": "user", "content": "hi"}]},
            {"messages": [{"role": "user", "content": "ho"}]},
            Difference("messages[0].content", "hi", "ho"),
        ),
        ({"params": {"maxTokens": 5}}, {"params": {"maxTokens": 6}}, Difference("params.maxTokens", 5, 6)),
        ({"params": {}}, {"params": {"topK": 3}}, Difference("params.topK", ABSENT, 3)),
        ({"b": 1, "a": 1}, {"b": 2, "a": 2}, Difference("a", 1, 2)),  # keys in sorted order
        ([1, 2], [1, 2, 3], Difference("[2]", ABSENT, 3)),
        ({"a key": 1}, {"a key": 2}, Difference('["a key"]', 1, 2)),
        ({"x": {"é": 1}}, {"x": {"é": 2}}, Difference('x["é"]', 1, 2)),
        ({"v": True}, {"v": 1}, Difference("v", True, 1)),
        ({"v": [1]}, {"v": {"0": 1}}, Difference("v", [1], {"0": 1})),
    ],
)
def test_first_difference(expected: Any, actual: Any, difference: Difference) -> None:
    assert first_difference(expected, actual) == difference


def test_format_path() -> None:
    assert format_path([]) == "(root)"
    assert (
        format_path(["tools", 2, "inputSchema", "properties", "a-b"])
        == 'tools[2].inputSchema.properties["a-b"]'
    )
    assert format_path([0, "_x", "$y"]) == "[0]._x.$y"


def test_absent_is_a_singleton_with_a_readable_repr() -> None:
    assert repr(ABSENT) == "ABSENT"
    assert type(ABSENT)() is ABSENT


def test_render_value() -> None:
    assert render_value(ABSENT) == "(absent)"
    assert render_value("91") == '"91"'
    assert render_value({"tempC": 24, "sky": "sunny"}) == '{"tempC":24,"sky":"sunny"}'
    assert render_value([1.5, 1e-7, 1e21, None, True]) == "[1.5,1e-7,1e+21,null,true]"
    assert render_value('line\nbreak "q" °') == '"line\\nbreak \\"q\\" °"'
    long = {"data": "x" * 300}
    assert render_value(long) == '{"data":"' + "x" * 190 + "…"
    assert len(render_value(long)) == 200


def test_render_value_masks_before_cutting() -> None:
    key = "sk-ant-api03-" + "k" * 40
    value = {"pad": "p" * 170, "key": key}  # the raw key straddles the 200-character cut
    assert len(compact_json(value)) > 200
    assert render_value(value) == '{"pad":"' + "p" * 170 + '","key":"[redacted]"}'
    secret = "customer-secret-value"
    cut = render_value("a" * 195 + secret + "b" * 100, [secret])
    assert cut == '"' + "a" * 195 + "[re…"
    assert "customer" not in render_value({"k": secret}, [secret])


def test_compact_json_budget_stops_early() -> None:
    big = [{"i": i} for i in range(10_000)]
    assert len(compact_json(big, 50)) < 70
    assert compact_json({"a": [1, {"b": "c"}]}) == '{"a":[1,{"b":"c"}]}'


def test_changed_leaf_paths_of_the_triage_fork(expectations: dict[str, Any]) -> None:
    parent = read_trace("examples/fleet-triage/cassettes/triage-incident.json")["steps"][5]["payload"]
    child = read_trace("examples/fleet-triage/cassettes/triage-hypothesis.json")["steps"][5]["payload"]
    documented = expectations["forks"][1]["upstreamDocumented"]["changedFields"]
    changes = changed_leaf_paths(parent["result"], child["result"], ["result"])
    assert [(c.path, None if c.before is ABSENT else c.before, c.after) for c in changes] == [
        tuple(entry) for entry in documented
    ]
    assert changes[4] == LeafChange("result.data[2].dp.value[0]", ABSENT, "P0217")


def test_changed_leaf_paths_order_and_shapes() -> None:
    before = {"b": 1, "a": {"x": 1}, "gone": [1]}
    after = {"b": 1, "a": {"x": 2, "new": True}, "added": "v"}
    assert changed_leaf_paths(before, after) == [
        LeafChange("a.x", 1, 2),
        LeafChange("a.new", ABSENT, True),
        LeafChange("gone", [1], ABSENT),
        LeafChange("added", ABSENT, "v"),
    ]
    assert changed_leaf_paths({"a": 1}, {"a": 1}) == []
    assert changed_leaf_paths(1, "1") == [LeafChange("(root)", 1, "1")]
