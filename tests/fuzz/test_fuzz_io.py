"""``parse_trace`` / ``load_trace`` on hostile input: a valid trace or a one-line ``CassetteError``.

A trace that is accepted must also survive a write/read round trip unchanged, and a change to any
step (other than dropping steps from the end, which a hash chain cannot see) must be refused.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_blackbox.trace.canonical import canonical_json
from pytest_blackbox.trace.errors import (
    CassetteError,
    CassetteReadError,
    CassetteSchemaError,
    CassetteVersionError,
)
from pytest_blackbox.trace.io import dumps_trace, load_trace, parse_trace
from pytest_blackbox.trace.model import Trace
from tests import vector_text

from .conftest import (
    MARKER,
    SMALL_CASSETTE,
    SWAP_VALUES,
    Scratch,
    assert_clean_message,
    attempt,
    cassette_names,
    documents,
    fuzz_settings,
    json_paths,
    long_run,
    mutated_bytes,
    mutated_text,
    note,
    planted_cassette,
    replaced_at,
    reseal,
    structural_mutant,
    timed,
)


def _check(result: Any) -> Any:
    """The property every reader result must have; returns the trace, or ``None`` for an error."""
    note(type(result).__name__)
    if isinstance(result, BaseException):
        assert isinstance(result, CassetteError), f"{type(result).__name__} is not a CassetteError"
        return None
    assert isinstance(result, dict)
    again = timed(lambda: parse_trace(dumps_trace(cast(Trace, result))))
    assert canonical_json(again) == canonical_json(result)
    return result


def _hashed(steps: list[Any]) -> list[Any]:
    return [{key: value for key, value in step.items() if key != "id"} for step in steps]


def _is_prefix(steps: Any, original: list[Any]) -> bool:
    """Whether ``steps`` is ``original`` with zero or more steps dropped from its end (step ids aside)."""
    if not isinstance(steps, list) or len(steps) > len(original):
        return False
    return canonical_json(_hashed(steps)) == canonical_json(_hashed(original[: len(steps)]))


def test_planted_cassettes_are_valid_and_carry_the_marker() -> None:
    for name in cassette_names():
        text = planted_cassette(name)
        trace = parse_trace(text)
        assert MARKER in text
        assert len(trace["steps"]) == len(parse_trace(vector_text(name))["steps"])


@fuzz_settings(75)
@given(documents())
def test_random_documents(text: str) -> None:
    _check(attempt(lambda: parse_trace(text)))


@fuzz_settings(200)
@given(st.sampled_from(cassette_names()), st.data())
def test_mutated_vector_text(name: str, data: st.DataObject) -> None:
    text = data.draw(mutated_text(planted_cassette(name)))
    _check(attempt(lambda: parse_trace(text)))


@fuzz_settings(100)
@given(st.sampled_from(cassette_names()), st.data())
def test_mutated_vector_bytes_from_a_file(scratch: Scratch, name: str, data: st.DataObject) -> None:
    raw = data.draw(mutated_bytes(planted_cassette(name).encode("utf-8")))
    path = scratch.write(raw)
    result = attempt(lambda: load_trace(path))
    if isinstance(result, CassetteError):
        assert result.path == str(path)
        assert f"`{path}`" in str(result)
    _check(result)


@fuzz_settings(150)
@given(st.sampled_from(cassette_names()), st.data())
def test_structurally_mutated_vectors(name: str, data: st.DataObject) -> None:
    doc = json.loads(planted_cassette(name))
    mutant = data.draw(structural_mutant(doc))
    text = json.dumps(mutant, indent=2, ensure_ascii=False)
    trace = _check(attempt(lambda: parse_trace(text)))
    if trace is not None:
        assert _is_prefix(trace["steps"], doc["steps"]), "a changed step was accepted"


def test_truncation_at_every_length_of_the_small_vector() -> None:
    text = planted_cassette(SMALL_CASSETTE)
    for length in range(len(text)):
        with pytest.raises(CassetteReadError) as caught:
            timed(partial(parse_trace, text[:length]))
        assert_clean_message(caught.value)


def _swap_expected_valid(path: tuple[str | int, ...], value: Any) -> bool:
    """Only the unhashed fields may change (with their own type), or the steps may all go."""
    step_id = len(path) == 3 and path[0] == "steps" and path[2] == "id"
    if step_id or path in (("id",), ("parentId",), ("forkedFromStepId",)):
        return isinstance(value, str)
    if path == ("createdAt",):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return path == ("steps",) and value == []


EXHAUSTIVE_SWAPS = (
    cassette_names() if long_run() else (SMALL_CASSETTE, "fixtures/traces/error-unknown-tool.v2.json")
)


@pytest.mark.parametrize("name", EXHAUSTIVE_SWAPS)
def test_type_swap_at_every_json_path(name: str) -> None:
    doc = json.loads(planted_cassette(name))
    checked = 0
    for path in json_paths(doc):
        for value in SWAP_VALUES:
            mutant = replaced_at(doc, path, value)
            if canonical_json(mutant) == canonical_json(doc):
                continue
            text = json.dumps(mutant, indent=2, ensure_ascii=False)
            result = attempt(partial(parse_trace, text))
            valid = not isinstance(result, BaseException)
            assert valid == _swap_expected_valid(path, value), (path, value, result)
            checked += 1
    assert checked > 10 * len(doc["steps"])


def _with_timestamp(token: str) -> str:
    """The small vector with its first step's timestamp spelled as ``token``."""
    text = planted_cassette(SMALL_CASSETTE)
    return text.replace('"timestamp": 0', f'"timestamp": {token}', 1)


SPECIAL_TEXTS = [
    ("", CassetteReadError),
    (" \n\t", CassetteReadError),
    ("\ufeff" + planted_cassette(SMALL_CASSETTE), CassetteReadError),
    ("[" * 100_000, CassetteReadError),
    ('{"a":' * 50_000, CassetteReadError),
    ("[" * 400 + "]" * 400, CassetteSchemaError),
    (_with_timestamp("NaN"), CassetteReadError),
    (_with_timestamp("Infinity"), CassetteReadError),
    (_with_timestamp("-Infinity"), CassetteReadError),
    (_with_timestamp("1e999"), CassetteReadError),
    (_with_timestamp("1" * 400), CassetteReadError),
    (_with_timestamp("1" * 5000), CassetteReadError),
    (_with_timestamp("9007199254740993"), CassetteReadError),
    ("null", CassetteSchemaError),
    ("[]", CassetteSchemaError),
    ('"' + MARKER + '"', CassetteSchemaError),
    ("{}", CassetteVersionError),
    ('{"version": 1}', CassetteVersionError),
    ('{"version": 1e300}', CassetteVersionError),
    ('{"version": "' + MARKER + '"}', CassetteVersionError),
    ('{"version": 2, "' + MARKER + '": 1, "' + MARKER + '": 2}', CassetteReadError),
    ("[" + "1," * 300_000 + "NaN]", CassetteReadError),
    ('{"a": "' + "x" * 900_000, CassetteReadError),
    ('"' + "\\" * 900_000, CassetteReadError),
]


@pytest.mark.parametrize(
    ("text", "error"), SPECIAL_TEXTS, ids=[f"case{i}" for i in range(len(SPECIAL_TEXTS))]
)
def test_special_inputs_are_refused_with_the_right_error(text: str, error: type[CassetteError]) -> None:
    with pytest.raises(error) as caught:
        timed(lambda: parse_trace(text))
    assert type(caught.value) is error
    assert_clean_message(caught.value)


SPECIAL_BYTES = [
    b"\xef\xbb\xbf" + planted_cassette(SMALL_CASSETTE).encode(),
    b"\xff" + planted_cassette(SMALL_CASSETTE).encode(),
    planted_cassette(SMALL_CASSETTE).encode().replace(b"capital", b"capit\xc3l", 1),
    planted_cassette(SMALL_CASSETTE).encode().replace(b"capital", b"\xed\xa0\x80", 1),
    b"",
]


@pytest.mark.parametrize(
    "data", SPECIAL_BYTES, ids=["bom", "leading-ff", "bad-utf8", "encoded-surrogate", "empty"]
)
def test_special_files_are_refused(scratch: Scratch, data: bytes) -> None:
    path = scratch.write(data, "special.json")
    with pytest.raises(CassetteReadError) as caught:
        timed(lambda: load_trace(path))
    assert caught.value.path == str(path)
    assert_clean_message(caught.value)


def test_a_large_valid_cassette_reads_in_time() -> None:
    """Just under 1 MB of payload text: reading it stays far below the per-call limit."""
    doc = json.loads(planted_cassette(SMALL_CASSETTE))
    steps = [(step["type"], step["payload"], step["timestamp"]) for step in doc["steps"]]
    note = {"event": "note", "text": ("°—x" + MARKER) * 40_000}
    text = dumps_trace(reseal(doc, [*steps[:2], ("metadata", note, 5), steps[2]]))
    assert 900_000 < len(text.encode()) < 1_000_000
    trace = timed(lambda: parse_trace(text))
    assert trace["steps"][2]["payload"] == note


@pytest.mark.parametrize("path", ["run\x00.json", "\ud800.json"], ids=["nul-byte", "lone-surrogate"])
def test_unopenable_path_strings_are_refused(path: str) -> None:
    with pytest.raises(CassetteReadError) as caught:
        load_trace(path)
    assert_clean_message(caught.value)


def test_a_path_with_a_newline_gives_a_one_line_message(scratch: Scratch) -> None:
    with pytest.raises(CassetteReadError) as caught:
        load_trace(scratch.directory / "missing\nrun.json")
    assert_clean_message(caught.value)
