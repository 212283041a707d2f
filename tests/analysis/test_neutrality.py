"""Provider neutrality: structural positions are strict, user data only flags real credentials."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.analysis.neutrality import find_markers, scan_trace
from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.trace.io import dumps_trace
from pytest_blackbox.trace.model import Trace

from .conftest import CASSETTES, read_trace, rechain

ANT_KEY = "sk-ant-api03-" + "Zq7_" * 6 + "end"  # 40 characters
TOOLU_ID = "toolu_01A09q90qw90lq917835lq9"


def test_vectors_hold_no_marker_and_no_forbidden_substring(
    vectors_dir: Path, expectations: dict[str, Any]
) -> None:
    for name in CASSETTES:
        raw = (vectors_dir / name).read_text(encoding="utf-8")
        for substring in expectations["neutralityForbiddenSubstrings"]:
            assert substring not in raw
        assert scan_trace(json.loads(raw), text=raw).markers == []
        assert find_markers(json.loads(raw)) == []


@pytest.mark.parametrize(
    ("value", "markers"),
    [
        ({"toolCallId": TOOLU_ID}, ["toolu_"]),
        ({"id": "msg_01XFDUDYJgAACzvnptvVoYEL"}, ["msg_"]),
        ({"toolCallId": "call_" + "a1" * 12}, ["call_"]),
        ({"toolCallId": "call_short"}, []),
        ({"toolCallId": "call-0"}, []),
        ({"id": "chatcmpl-8abcDEF12"}, ["chatcmpl-"]),
        ({"id": "resp_" + "b" * 16}, ["resp_"]),
        ({"usage": {"input_tokens": 3}}, ["usage"]),
        ({"stop_reason": "end_turn", "finish_reason": "stop"}, ["stop_reason", "finish_reason"]),
        ({"stop_sequence": None, "system_fingerprint": "fp_1"}, ["stop_sequence", "system_fingerprint"]),
        ({"ANTHROPIC_API_KEY": "x"}, ["ANTHROPIC_API_KEY"]),
        ({"description": "needs OPENAI_API_KEY"}, ["OPENAI_API_KEY"]),
        ({"description": "sk-ant"}, ["sk-ant"]),  # structure: even a short prefix counts
        ({"model": "sk-proj-abc"}, ["sk-proj"]),
        ({"header": "Bearer abcdefghijklmnopq"}, ["bearer-token"]),
        ({"header": "Bearer\u00a0abcdefghijklmnopq"}, ["bearer-token"]),  # JavaScript's \s
        ({"model": "sk-" + "k" * 20}, ["sk-"]),
        ({"toolCallId": "toolu_\u0663"}, []),  # \d is ASCII in JavaScript
        ({"toolu_01x": 1}, ["toolu_"]),  # keys are structure too
    ],
)
def test_structural_positions(value: Any, markers: list[str]) -> None:
    assert find_markers(value) == markers


@pytest.mark.parametrize(
    "key", ["toolInput", "result", "error", "inputSchema", "text", "content", "systemPrompt"]
)
def test_user_data_only_flags_realistic_credentials(key: str) -> None:
    harmless = {key: {"usage": 42, "source": f"const id = '{TOOLU_ID}'; // ANTHROPIC_API_KEY", "k": "sk-ant"}}
    assert find_markers(harmless) == []
    assert find_markers({key: {"nested": [f"leaked {ANT_KEY}"]}}) == ["sk-ant", "sk-"]
    assert find_markers({key: "sk-proj-" + "q" * 20}) == ["sk-proj"]
    assert find_markers({key: "sk-" + "q" * 32}) == ["sk-"]
    assert find_markers({key: "sk-" + "q" * 31}) == []
    assert find_markers({key: "Authorization: Bearer " + "t" * 16}) == ["bearer-token"]


def test_a_realistic_anthropic_key_is_also_a_long_generic_key() -> None:
    """Each rule is tested on its own, as in the original: the key matches ``sk-ant`` and ``sk-``."""
    assert find_markers({"note": ANT_KEY}) == ["sk-ant", "sk-"]
    assert find_markers({"result": "sk-" + "g" * 40}) == ["sk-"]


def test_labels_come_in_the_originals_order() -> None:
    """Document order (a key, then its value, then the next key), and rule order inside one string."""
    assert find_markers({"note": TOOLU_ID, "usage": {}}) == ["toolu_", "usage"]
    assert find_markers({"usage": {"id": TOOLU_ID}}) == ["usage", "toolu_"]
    assert find_markers({"header": "Bearer abcdefghijklmnopq for msg_01 toolu_01"}) == [
        "toolu_",
        "msg_",
        "bearer-token",
    ]


def test_literal_api_key_is_flagged_anywhere_as_a_label() -> None:
    key = "plain-key-value-123"
    assert find_markers({"result": {"echo": key}}, [key]) == ["<api-key-value>"]
    assert find_markers({key: 1}, [key + "\n"]) == ["<api-key-value>"]
    assert find_markers({"result": "abc"}, ["abc"]) == []  # shorter than 4: not looked for


def _planted(trace: Trace, index: int, payload: Any) -> Trace:
    trace["steps"][index]["payload"] = payload
    return rechain(trace)


def _error_trace() -> Trace:
    return read_trace("fixtures/traces/error-unknown-tool.v2.json")


def test_scan_names_the_first_step_with_a_marker() -> None:
    trace = _error_trace()
    trace["steps"][2]["payload"]["toolCallId"] = TOOLU_ID
    trace["steps"][3]["payload"]["toolCallId"] = TOOLU_ID
    scan = scan_trace(rechain(trace))
    assert scan.markers == ["toolu_"] and scan.step_index == 2


def test_trace_level_marker_has_no_step() -> None:
    trace = _error_trace()
    trace["id"] = "msg_01abc"
    scan = scan_trace(trace)
    assert scan.markers == ["msg_"] and scan.step_index is None


@pytest.mark.parametrize("with_text", [True, False])
def test_fast_and_slow_paths_agree(with_text: bool) -> None:
    trace = _error_trace()
    trace["steps"][3]["payload"] = {"toolCallId": "call-0", "toolName": "flights", "result": {"k": ANT_KEY}}
    trace["steps"][2]["payload"]["toolCallId"] = TOOLU_ID
    trace = rechain(trace)
    text = dumps_trace(trace) if with_text else None
    assert scan_trace(trace, text=text).markers == ["toolu_", "sk-ant", "sk-"]
    assert scan_trace(trace, text=text).step_index == 2


def test_unicode_escapes_cannot_hide_a_marker(write_trace: Callable[[Trace, str], Path]) -> None:
    trace = _error_trace()
    trace["steps"][3]["payload"] = {"toolCallId": "call-0", "toolName": "flights", "result": ANT_KEY}
    trace = rechain(trace)
    path = write_trace(trace, "escaped.json")
    text = path.read_text(encoding="utf-8").replace('"sk-ant-', '"\\u0073k-ant-')
    path.write_text(text, encoding="utf-8")
    report = verify_trace(path)
    assert report.first_failure is not None
    assert (report.first_failure.name, report.first_failure.detail) == (
        "provider_neutrality",
        "markers: sk-ant, sk-",
    )
    assert report.first_failure.step_index == 3


def test_verify_flags_planted_provider_id_in_structure() -> None:
    trace = _error_trace()
    trace["steps"][2]["payload"]["toolCallId"] = TOOLU_ID
    report = verify_trace(rechain(trace))
    assert [(r.name, r.status, r.detail) for r in report.invariants] == [
        ("schema_version", "pass", "version 2"),
        ("hash_chain", "pass", "5 step(s), chain intact"),
        ("provider_neutrality", "fail", "markers: toolu_"),
        ("replayability", "skip", "skipped"),
    ]
    assert report.first_failure is not None and report.first_failure.step_index == 2


def test_verify_flags_usage_key_in_structure_but_not_in_a_tool_result() -> None:
    trace = _error_trace()
    marker = {"event": "checkpoint", "usage": {"input_tokens": 12, "output_tokens": 3}}
    trace["steps"].insert(4, {**trace["steps"][4], "payload": marker})
    failing = verify_trace(rechain(trace))
    assert failing.first_failure is not None
    assert (failing.first_failure.name, failing.first_failure.detail) == (
        "provider_neutrality",
        "markers: usage",
    )
    assert failing.first_failure.step_index == 4

    trace = _error_trace()
    payload = {"toolCallId": "call-0", "toolName": "flights", "result": {"usage": 42, "code": TOOLU_ID}}
    assert verify_trace(_planted(trace, 3, payload)).ok


def test_verify_flags_a_key_in_a_tool_result_without_echoing_it() -> None:
    trace = _error_trace()
    payload = {"toolCallId": "call-0", "toolName": "flights", "result": {"config": {"key": ANT_KEY}}}
    report = verify_trace(_planted(trace, 3, payload))
    assert not report.ok
    assert report.first_failure is not None
    assert report.first_failure.detail == "markers: sk-ant, sk-"
    assert ANT_KEY not in json.dumps(report.to_json())
    assert "Zq7_" not in json.dumps(report.to_json())


def test_escaped_slash_cannot_hide_a_known_key(write_trace: Callable[[Trace, str], Path]) -> None:
    key = "team/key/0123456789abcdef"
    trace = _error_trace()
    trace["steps"][3]["payload"] = {"toolCallId": "call-0", "toolName": "flights", "result": key}
    path = write_trace(rechain(trace), "slash.json")
    text = path.read_text(encoding="utf-8").replace("team/key/", "team\\/key\\/")
    path.write_text(text, encoding="utf-8")
    report = verify_trace(path, api_keys=[key])
    assert report.first_failure is not None
    assert report.first_failure.detail == "markers: <api-key-value>"


@pytest.mark.parametrize("as_file", [False, True], ids=["trace", "file"])
def test_members_outside_the_hash_are_checked_too(
    as_file: bool, write_trace: Callable[[Trace, str], Path]
) -> None:
    """A step's id and hash are not hashed, so the hashed text alone cannot clear them."""
    key = "plain-key-value-123"
    trace = rechain(_error_trace())
    trace["steps"][1]["id"] = "run:" + TOOLU_ID
    trace["steps"][3]["id"] = f"run:{key}"
    report = verify_trace(write_trace(trace, "ids.json") if as_file else trace, api_keys=[key])
    assert report.first_failure is not None
    assert (report.first_failure.detail, report.first_failure.step_index) == (
        "markers: toolu_, <api-key-value>",
        1,
    )
