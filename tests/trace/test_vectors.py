"""Every cassette vector loads, re-serializes byte for byte and matches its frozen expectations."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pytest_blackbox.trace.canonical import step_hash
from pytest_blackbox.trace.io import dumps_trace, load_trace
from pytest_blackbox.trace.payloads import terminal_outcome, tool_call_sequence

from .conftest import cassette_files, read_text


def test_vector_files_are_unchanged(vectors_dir: Path) -> None:
    manifest = json.loads(read_text(vectors_dir / "manifest.json"))
    assert len(manifest["files"]) == 16
    for entry in manifest["files"]:
        data = (vectors_dir / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["file"]
        assert len(data) == entry["bytes"], entry["file"]


def test_expectations_list_every_cassette_shaped_file(vectors_dir: Path) -> None:
    shaped = sorted(
        str(p.relative_to(vectors_dir))
        for p in vectors_dir.rglob("*.json")
        if p.parent.name in ("traces", "cassettes") or p.name.endswith(".converted.v2.json")
    )
    assert shaped == cassette_files()
    assert len(shaped) == 9


def test_vector_loads_and_matches_its_file_hash(
    cassette_path: Path, cassette: str, expectations: dict[str, Any]
) -> None:
    expected = expectations["cassettes"][cassette]
    assert hashlib.sha256(cassette_path.read_bytes()).hexdigest() == expected["fileSha256"]
    trace = load_trace(cassette_path)
    assert trace["version"] == expected["version"] == 2
    assert trace["id"] == expected["traceId"]
    assert trace["createdAt"] == expected["createdAt"]
    assert trace.get("parentId") == expected.get("parentId")
    assert trace.get("forkedFromStepId") == expected.get("forkedFromStepId")
    assert [s["type"] for s in trace["steps"]] == expected["stepTypes"]
    assert len(trace["steps"]) == expected["stepCount"]


def test_dumps_reproduces_the_file_bytes(cassette_path: Path, cassette_text: str) -> None:
    trace = load_trace(cassette_path)
    assert dumps_trace(trace) == cassette_text
    assert not cassette_text.endswith("\n")


def test_every_step_hash_recomputes(cassette_path: Path, cassette: str, expectations: dict[str, Any]) -> None:
    expected = expectations["cassettes"][cassette]
    steps = load_trace(cassette_path)["steps"]
    recomputed = [
        step_hash(s["index"], s["type"], s["timestamp"], s["payload"], s["prevHash"]) for s in steps
    ]
    assert recomputed == [s["hash"] for s in steps] == expected["stepHashes"]
    assert recomputed[-1] == expected["finalHash"]
    assert steps[0]["prevHash"] is None
    assert [s["prevHash"] for s in steps[1:]] == recomputed[:-1]


def test_outcome_and_tool_sequence(cassette_path: Path, cassette: str, expectations: dict[str, Any]) -> None:
    expected = expectations["cassettes"][cassette]
    trace = load_trace(cassette_path)
    outcome = terminal_outcome(trace)
    assert outcome.status == expected["status"]
    assert outcome.final_answer == expected.get("finalAnswer")
    assert outcome.failure_reason == expected.get("failureReason")
    assert tool_call_sequence(trace) == expected["toolCallSequence"]


def test_upstream_frozen_hashes(vectors_dir: Path, expectations: dict[str, Any]) -> None:
    frozen = expectations["upstreamFrozen"]
    for name, final in frozen["finalHash"].items():
        assert load_trace(vectors_dir / name)["steps"][-1]["hash"] == final
    chain = [
        s["hash"] for s in load_trace(vectors_dir / "fixtures/traces/success-final-answer.v2.json")["steps"]
    ]
    assert chain == frozen["successFinalAnswerChain"]
