"""``verify_trace`` never raises: whatever it is given, it returns a well-formed four-row report.

Its verdict must also agree with the reader: a file ``load_trace`` refuses for its JSON, version or
schema fails ``schema_version`` (unless the schema only refused provider keys, which fail
``provider_neutrality`` by name); one it refuses for the chain fails ``hash_chain`` at the same step;
one it accepts passes both. A file read step by step gets the report of the same file read whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pytest_blackbox.analysis import verify as verify_module
from pytest_blackbox.analysis.neutrality import FORBIDDEN_KEYS
from pytest_blackbox.analysis.verify import INVARIANTS, VerifyReport, render_verify_report, verify_trace
from pytest_blackbox.trace import stream
from pytest_blackbox.trace.errors import CassetteSchemaError, HashChainError
from pytest_blackbox.trace.io import load_trace

from .conftest import (
    MARKER,
    MARKER_RUNS,
    Scratch,
    attempt,
    cassette_names,
    fuzz_settings,
    json_values,
    keys,
    mutated_bytes,
    mutated_text,
    note,
    planted_cassette,
    structural_mutant,
    texts,
    timed,
)


def check_report(report: VerifyReport) -> VerifyReport:
    """Four rows in order; passes, then at most one failure, then skips; every detail one safe line."""
    assert isinstance(report, VerifyReport)
    assert [row.name for row in report.invariants] == list(INVARIANTS)
    statuses = [row.status for row in report.invariants]
    failed = statuses.index("fail") if "fail" in statuses else len(statuses)
    assert statuses[:failed] == ["pass"] * failed
    assert statuses[failed + 1 :] == ["skip"] * len(statuses[failed + 1 :])
    assert report.ok is (failed == len(statuses))
    assert report.first_failure is (None if report.ok else report.invariants[failed])
    for row in report.invariants:
        assert row.detail and "\n" not in row.detail
        assert not any(run in row.detail for run in MARKER_RUNS), row.detail
    json.dumps(report.to_json())
    render_verify_report(report, color=True)
    note("pass" if report.ok else f"fail at {report.first_failure and report.first_failure.name}")
    return report


def verify(source: Any, api_keys: tuple[str, ...] = ()) -> VerifyReport:
    return check_report(timed(lambda: verify_trace(source, api_keys=api_keys)))


trace_like = st.fixed_dictionaries(
    {"version": st.sampled_from([2, 2.0, 1, "2", None]), "id": texts, "createdAt": json_values(max_leaves=2)},
    optional={
        "steps": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    name: json_values(max_leaves=4)
                    for name in ("id", "index", "type", "timestamp", "payload", "prevHash", "hash")
                },
            ),
            max_size=3,
        )
        | json_values(max_leaves=3),
        "parentId": json_values(max_leaves=2),
    },
)


@fuzz_settings(150)
@given(st.dictionaries(keys, json_values(), max_size=5) | trace_like)
def test_any_dict_gives_a_report(source: dict[str, Any]) -> None:
    verify(source)


@fuzz_settings(150)
@given(st.sampled_from(cassette_names()), st.data(), st.booleans())
def test_mutated_vector_objects_give_a_report(name: str, data: st.DataObject, with_key: bool) -> None:
    mutant = data.draw(structural_mutant(json.loads(planted_cassette(name))))
    assume(not isinstance(mutant, str))  # a string is a path, and a path is quoted on purpose
    verify(mutant, (MARKER,) if with_key else ())


def _agrees_with_reader(report: VerifyReport, path: Any) -> None:
    loaded = attempt(lambda: load_trace(path))
    rows = {row.name: row for row in report.invariants}
    if isinstance(loaded, HashChainError):
        assert rows["schema_version"].status == "pass"
        assert rows["hash_chain"].status == "fail"
        assert rows["hash_chain"].step_index == loaded.step_index
    elif isinstance(loaded, CassetteSchemaError) and rows["schema_version"].status == "pass":
        # A provider key the schema has no room for is reported by name, under the invariant for it.
        failure = report.first_failure
        assert failure is not None and failure.name == "provider_neutrality", loaded
        assert any(f" {key}" in failure.detail for key in FORBIDDEN_KEYS), failure.detail
    elif isinstance(loaded, BaseException):
        assert rows["schema_version"].status == "fail", loaded
    else:
        assert (rows["schema_version"].status, rows["hash_chain"].status) == ("pass", "pass")


@fuzz_settings(125)
@given(st.sampled_from(cassette_names()), st.data())
def test_mutated_files_agree_with_the_reader(scratch: Scratch, name: str, data: st.DataObject) -> None:
    raw = planted_cassette(name).encode("utf-8")
    if data.draw(st.booleans()):
        raw = data.draw(mutated_bytes(raw))
    else:
        raw = data.draw(mutated_text(planted_cassette(name))).encode("utf-8", "surrogatepass")
    path = scratch.write(raw)
    report = verify(str(path), (MARKER,))
    assert report.path == str(path)
    _agrees_with_reader(report, path)


def _never_streamed(path: str) -> Iterator[Any]:
    raise stream.NotStreamable("read whole")
    yield  # a generator, like the reader it stands in for


@fuzz_settings(125)
@given(st.sampled_from(cassette_names()), st.data(), st.integers(1, 80))
def test_a_file_read_step_by_step_gets_the_report_of_the_whole_file(
    scratch: Scratch, name: str, data: st.DataObject, chunk: int
) -> None:
    """Same rows, details, steps and trace whether read in pieces of ``chunk`` bytes or whole.

    Pieces this small cut every token, string and escape somewhere, so the reader's refills are
    exercised everywhere; the whole read is the reference, as it was the only reader before.
    """
    document = json.loads(planted_cassette(name))
    raw = planted_cassette(name).encode("utf-8")
    mutation = data.draw(st.sampled_from(["none", "bytes", "text", "structure", "member order"]))
    if mutation == "bytes":
        raw = data.draw(mutated_bytes(raw))
    elif mutation == "text":
        raw = data.draw(mutated_text(planted_cassette(name))).encode("utf-8", "surrogatepass")
    elif mutation == "structure":
        raw = json.dumps(data.draw(structural_mutant(document)), ensure_ascii=False).encode("utf-8")
    elif mutation == "member order":
        keys = data.draw(st.permutations(list(document)))
        raw = json.dumps({key: document[key] for key in keys}, indent=1).encode("utf-8")
    path = scratch.write(raw)
    with mock.patch.object(stream, "CHUNK", chunk):
        streamed = verify(str(path), (MARKER,))
        kept = verify_trace(str(path), api_keys=(MARKER,), keep_trace=True)
    with mock.patch.object(verify_module, "stream_cassette", _never_streamed):
        whole = verify_trace(str(path), api_keys=(MARKER,), keep_trace=True)
    assert streamed.to_json() == whole.to_json()
    assert streamed.trace is None
    assert kept.to_json() == whole.to_json() and kept.trace == whole.trace


@fuzz_settings(50)
@given(st.text(st.characters(exclude_categories=["Cc", "Cs"], exclude_characters="/"), max_size=300))
def test_odd_file_names_give_a_report(scratch: Scratch, name: str) -> None:
    """Names that do not exist, name a directory, or are too long: all a ``schema_version`` failure."""
    empty = scratch.directory / "empty"
    empty.mkdir(exist_ok=True)
    report = verify(str(empty / name))
    assert report.first_failure is not None and report.first_failure.name == "schema_version"


@pytest.mark.parametrize("name", ["", "missing.json", "a" * 5000])
def test_unreadable_paths_fail_schema_version(scratch: Scratch, name: str) -> None:
    report = verify(str(scratch.directory / name) if name else "")
    assert report.first_failure is not None and report.first_failure.name == "schema_version"


def test_a_directory_fails_schema_version(scratch: Scratch) -> None:
    report = verify(scratch.directory)
    assert report.first_failure is not None and report.first_failure.name == "schema_version"
    assert "is a directory" in report.first_failure.detail


@fuzz_settings(75)
@given(json_values().filter(lambda value: not isinstance(value, (dict, str))))
def test_any_non_dict_value_gives_a_report(source: Any) -> None:
    report = verify(source)
    assert report.first_failure is not None and report.first_failure.name == "schema_version"


@pytest.mark.parametrize("source", [None, 0, 1.5, True, [], [{"version": 2}]])
def test_non_path_garbage_gives_a_report(source: Any) -> None:
    report = verify(source)
    assert report.first_failure is not None and report.first_failure.name == "schema_version"


@pytest.mark.parametrize("source", ["run\x00.json", "\ud800.json"], ids=["nul-byte", "lone-surrogate"])
def test_unopenable_path_strings_give_a_report(source: str) -> None:
    report = verify(source)
    assert report.first_failure is not None and report.first_failure.name == "schema_version"


def test_a_path_with_a_newline_gives_a_one_line_detail(scratch: Scratch) -> None:
    report = verify(str(scratch.directory / "run\n.json"))
    assert report.first_failure is not None and report.first_failure.name == "schema_version"
