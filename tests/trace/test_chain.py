"""The hash chain: every edit to a step is caught at that step, edits outside the hash are not,
and messages say where the chain broke without quoting what was stored."""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.trace.canonical import pretty_json
from pytest_blackbox.trace.chain import validate_chain
from pytest_blackbox.trace.errors import CassetteError, HashChainError
from pytest_blackbox.trace.io import load_trace, parse_json, parse_trace
from pytest_blackbox.trace.recorder import TraceRecorder
from pytest_blackbox.trace.schema import validate_schema

from .conftest import SECRET, planted_trace

EDITED = "stored hash does not match its contents (the cassette was edited or corrupted after recording)"
MOVED = "index does not match its position in the file (steps were removed, reordered or inserted)"


def _chain_error(trace: Any, path: str | None = "run.json") -> HashChainError:
    with pytest.raises(HashChainError) as caught:
        validate_chain(trace, path=path)
    assert SECRET not in str(caught.value)
    assert "\n" not in str(caught.value)
    assert caught.value.path == path
    return caught.value


def test_every_vector_chain_is_intact(cassette_path: Path) -> None:
    validate_chain(load_trace(cassette_path), path=str(cassette_path))


def test_a_recorded_trace_is_intact() -> None:
    validate_chain(planted_trace())


def test_an_edited_payload_is_caught_at_its_step() -> None:
    trace = planted_trace()
    trace["steps"][4]["payload"]["messages"][0]["content"] = "changed " + SECRET
    error = _chain_error(trace)
    assert str(error) == f"`run.json` failed its hash-chain check: step 4: {EDITED}"
    assert error.step_index == 4


@pytest.mark.parametrize("field", ["timestamp", "type", "index"])
def test_every_hashed_field_is_covered(field: str) -> None:
    trace = planted_trace()
    step = trace["steps"][2]
    if field == "timestamp":
        step["timestamp"] = 1
    elif field == "type":
        step["type"] = "tool_result"
    else:  # a renumbered run: the index matches its position but the hash was made for another index
        trace["steps"] = trace["steps"][1:]
        for position, kept in enumerate(trace["steps"]):
            kept["index"] = position
        trace["steps"][0]["prevHash"] = None
    error = _chain_error(trace)
    assert error.step_index == (2 if field != "index" else 0)
    assert str(error).endswith(EDITED)


def test_a_removed_step() -> None:
    trace = planted_trace()
    del trace["steps"][3]
    error = _chain_error(trace, path=None)
    assert str(error) == f"the cassette failed its hash-chain check: step 3: {MOVED}"
    assert error.step_index == 3


def test_a_removed_step_with_renumbered_indexes() -> None:
    trace = planted_trace()
    del trace["steps"][3]
    for position, step in enumerate(trace["steps"]):
        step["index"] = position
    error = _chain_error(trace)
    assert str(error) == (
        "`run.json` failed its hash-chain check: step 3: prevHash does not match the hash of step 2 "
        "(a step was removed, reordered or edited)"
    )


def test_swapped_steps() -> None:
    trace = planted_trace()
    trace["steps"][1], trace["steps"][2] = trace["steps"][2], trace["steps"][1]
    assert _chain_error(trace).step_index == 1


def test_a_first_step_with_a_prev_hash() -> None:
    trace = planted_trace()
    trace["steps"][0]["prevHash"] = trace["steps"][1]["hash"]
    assert str(_chain_error(trace)) == (
        "`run.json` failed its hash-chain check: step 0: prevHash must be null on the first step"
    )


@pytest.mark.parametrize(
    ("mutation", "detail"),
    [
        (
            lambda s: s.__setitem__("type", SECRET),
            "unknown step type (expected one of model_input, model_output, tool_call, tool_result, metadata)",
        ),
        (lambda s: s.pop("hash"), "has no hash field"),
        (lambda s: s.pop("payload"), "has no payload field"),
        (lambda s: s.__setitem__("index", True), MOVED),
        (lambda s: s.__setitem__("index", "1"), MOVED),
        (
            lambda s: s["payload"].__setitem__("text", math.nan),
            "its contents cannot be hashed: Cannot canonicalize a non-finite number (NaN or Infinity)",
        ),
        (lambda s: s.__setitem__("hash", SECRET), EDITED),
    ],
)
def test_malformed_steps_in_memory(mutation: Any, detail: str) -> None:
    trace = planted_trace()
    trace["steps"][1]["payload"] = {"type": "final_answer", "text": "x"}
    mutation(trace["steps"][1])
    error = _chain_error(trace)
    assert str(error) == f"`run.json` failed its hash-chain check: step 1: {detail}"
    assert error.step_index == 1


def test_not_a_step_or_not_a_trace() -> None:
    trace: Any = planted_trace()
    trace["steps"][2] = [SECRET]
    assert str(_chain_error(trace)).endswith("step 2: is not a step object")
    assert (
        str(_chain_error({"steps": {}}))
        == "`run.json` failed its hash-chain check: the trace has no list of steps"
    )
    assert _chain_error([]).step_index is None


def test_a_fork_prefix_copied_verbatim_stays_intact() -> None:
    parent = planted_trace()
    child = TraceRecorder("child", 5, parent_id="planted", forked_from_step_id="planted:3")
    for step in parent["steps"][:3]:
        child.copy_step(step)
    child.append("tool_result", {"toolCallId": "call-0", "toolName": "lookup", "result": 2}, 1004)
    validate_chain(child.trace())
    validate_schema(child.trace())


# ----------------------------------------------------------------------------------------------
# Edits on the files themselves


def test_ids_and_created_at_are_outside_the_chain(cassette_path: Path) -> None:
    doc = json.loads(cassette_path.read_bytes())
    doc["id"] = "renamed"
    doc["createdAt"] = 12345
    for step in doc["steps"]:
        step["id"] = "renamed:" + step["id"]
    reparsed = parse_trace(pretty_json(doc))
    assert [s["hash"] for s in reparsed["steps"]] == [s["hash"] for s in load_trace(cassette_path)["steps"]]


def _spans(text: str, trace: Any) -> list[tuple[int, str, int, int]]:
    """(step index, field, start, end) of every step's payload, prevHash and hash text in the file."""
    found = []
    cursor = 0
    for step in trace["steps"]:
        block = pretty_json(step).replace("\n", "\n    ")
        start = text.index(block, cursor)
        cursor = start + len(block)
        for field in ("payload", "prevHash", "hash"):
            value = pretty_json(step[field]).replace("\n", "\n      ")
            label = f'"{field}": '
            at = text.index(label + value, start, cursor) + len(label)
            found.append((step["index"], field, at, at + len(value)))
    return found


def _flip(char: str) -> str:
    if char.isdigit():
        return "7" if char != "7" else "3"
    if char.isalpha():
        return "q" if char != "q" else "z"
    return "x"  # punctuation or white space: the text stops being the same JSON value


def test_flipping_any_character_of_a_step_is_caught(cassette_path: Path, cassette: str) -> None:
    text = cassette_path.read_bytes().decode("utf-8")
    trace = load_trace(cassette_path)
    spans = _spans(text, trace)
    rng = random.Random(cassette)
    exhaustive = cassette.endswith("success-final-answer.v2.json")
    chain_failures = 0
    for index, _field, start, end in spans:
        positions = range(start, end) if exhaustive else rng.sample(range(start, end), min(4, end - start))
        for position in positions:
            edited = text[:position] + _flip(text[position]) + text[position + 1 :]
            with pytest.raises(CassetteError) as caught:
                parse_trace(edited, path="edited.json")
            if _is_schema_valid_json(edited):
                assert isinstance(caught.value, HashChainError), (index, position)
                assert caught.value.step_index == index, position
                chain_failures += 1
    assert chain_failures > len(spans)


def _is_schema_valid_json(text: str) -> bool:
    try:
        validate_schema(parse_json(text))
    except CassetteError:
        return False
    return True


def test_the_chain_check_runs_through_load(tmp_path: Path) -> None:
    trace = planted_trace()
    trace["steps"][5]["payload"]["text"] = "edited " + SECRET
    path = tmp_path / "run.json"
    path.write_text(pretty_json(copy.deepcopy(trace)), encoding="utf-8")
    with pytest.raises(HashChainError) as caught:
        load_trace(path)
    assert str(caught.value) == f"`{path}` failed its hash-chain check: step 5: {EDITED}"
    assert caught.value.step_index == 5
