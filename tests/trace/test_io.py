"""Reading and writing cassette files: strict JSON, typed one-line errors that never quote content,
byte-exact output and atomic writes."""

from __future__ import annotations

import copy
import errno
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.trace.errors import (
    CassetteError,
    CassetteReadError,
    CassetteSchemaError,
    CassetteVersionError,
    HashChainError,
)
from pytest_blackbox.trace.io import dumps_trace, load_trace, parse_json, parse_trace, save_trace
from pytest_blackbox.trace.nesting import TOO_DEEP
from tests.fuzz.test_fuzz_depth import deep_cassette

from .conftest import SECRET, conversation, planted_trace, read_text


def _write(tmp_path: Path, text: str | bytes, name: str = "run.json") -> Path:
    path = tmp_path / name
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8", newline="")
    else:
        path.write_bytes(text)
    return path


def _load_error(path: Path, kind: type[CassetteError] = CassetteError) -> str:
    with pytest.raises(kind) as caught:
        load_trace(path)
    message = str(caught.value)
    assert "\n" not in message
    assert SECRET not in message
    assert caught.value.path == str(path)
    assert f"`{path}`" in message
    return message


# ----------------------------------------------------------------------------------------------
# parse_json


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1.0}', {"a": 1}),
        ('{"a": 1E2}', {"a": 100}),
        ('{"a": -0.0}', {"a": 0}),
        ('{"a": 1.5}', {"a": 1.5}),
        ('{"a": 1e-400}', {"a": 0}),
        ('{"a": 9007199254740992.0}', {"a": 9007199254740992}),
        ('{"a": 9007199254740994}', {"a": 9007199254740994}),
        ('{"a": -9007199254740994}', {"a": -9007199254740994}),
        ('{"a": 18446744073709551616}', {"a": 18446744073709551616}),
        ('{"a": 1e21}', {"a": 1e21}),
        ('{"a": "\\ud800"}', {"a": "\ud800"}),
    ],
)
def test_numbers_are_read_by_value(text: str, expected: dict[str, Any]) -> None:
    parsed = parse_json(text)
    assert parsed == expected
    assert type(parsed["a"]) is type(expected["a"])


def test_integral_floats_become_ints() -> None:
    parsed = parse_json("[1.0, 1E0, 100e-2, -0.0, 2.5]")
    assert [type(v) for v in parsed] == [int, int, int, int, float]


def test_javascripts_spelling_of_a_large_double_reads_as_that_double() -> None:
    # JSON.stringify(2 ** 64) is "18446744073709552000": not exact as an integer, but JavaScript wrote it.
    assert parse_json("[18446744073709552000]") == [2.0**64]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '{"a": 1,\n "a": 2}',
            "duplicate object key at line 2, column 2 (each key may appear only once in an object)",
        ),
        (
            '{"x": [{"k": 1}, {"b": 1, "c": {"d": 1}, "b": 2}]}',
            "duplicate object key at line 1, column 42 (each key may appear only once in an object)",
        ),
        ('{"a": [1, NaN]}', "NaN or Infinity at line 1, column 11: JSON has no such numbers"),
        ('{"a":\n  Infinity}', "NaN or Infinity at line 2, column 3: JSON has no such numbers"),
        ('{"a": -Infinity}', "NaN or Infinity at line 1, column 7: JSON has no such numbers"),
        ('{"a": 1e400}', "a number at line 1, column 7 is too large for a double (it would become Infinity)"),
        (
            '{"a": -1.5E999}',
            "a number at line 1, column 7 is too large for a double (it would become Infinity)",
        ),
        (
            '{"a": 9007199254740993}',
            "an integer at line 1, column 7 cannot be stored exactly as a double (beyond 2**53); "
            "store it as a string",
        ),
        (
            '{"s": "1e400 NaN", "a": ' + "9" * 400 + "}",
            "an integer at line 1, column 25 cannot be stored exactly as a double (beyond 2**53); "
            "store it as a string",
        ),
    ],
)
def test_ambiguous_json_is_refused_with_its_location(text: str, problem: str) -> None:
    with pytest.raises(CassetteReadError) as caught:
        parse_json(text, path="c.json")
    assert str(caught.value) == f"`c.json` is not valid cassette JSON: {problem}"


def test_a_duplicate_key_is_not_quoted() -> None:
    with pytest.raises(CassetteReadError) as caught:
        parse_json(f'{{"payload": {{"{SECRET}": 1, "{SECRET}": 2}}}}')
    assert str(caught.value) == (
        "the cassette is not valid cassette JSON: duplicate object key at line 1, column 68 "
        "(each key may appear only once in an object)"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"a": "' + SECRET, "Unterminated string starting at line 1, column 7"),
        ('{"a": [1, 2', "Expecting ',' delimiter at line 1, column 12"),
        ('{"a": 1} ' + SECRET, "Extra data at line 1, column 10"),
        ("{'a': 1}", "Expecting property name enclosed in double quotes at line 1, column 2"),
        ('{"a": "x\ny"}', "Invalid control character at line 1, column 9"),
    ],
)
def test_malformed_json_names_line_and_column(text: str, problem: str) -> None:
    with pytest.raises(CassetteReadError) as caught:
        parse_json(text, path="c.json")
    assert str(caught.value) == f"`c.json` is not valid JSON: {problem}"


def test_deep_nesting_is_a_read_error() -> None:
    with pytest.raises(CassetteReadError) as caught:
        parse_json("[" * 200_000 + "]" * 200_000, path="c.json")
    assert str(caught.value) == f"`c.json` is {TOO_DEEP}"


@pytest.mark.parametrize("depth", [199, 900])
def test_a_step_beyond_the_nesting_limit_is_refused_by_load_and_by_verify(tmp_path: Path, depth: int) -> None:
    """One limit: what loading (and so replay) refuses, verify fails too; just below it both accept."""
    fits, deep = tmp_path / "fits.json", tmp_path / "deep.json"
    fits.write_text(deep_cassette(198, 1), encoding="utf-8")
    deep.write_text(deep_cassette(depth, 1), encoding="utf-8")
    load_trace(fits)
    assert verify_trace(fits).ok
    with pytest.raises(CassetteReadError) as caught:
        load_trace(deep)
    assert str(caught.value) == f"`{deep}` step 0 is {TOO_DEEP}"
    failure = verify_trace(deep).first_failure
    assert failure is not None
    assert (failure.name, failure.detail, failure.step_index) == (
        "schema_version",
        f"step 0 is {TOO_DEEP}",
        0,
    )


# ----------------------------------------------------------------------------------------------
# load_trace: the file-level bad inputs


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    assert _load_error(path, CassetteReadError) == f"`{path}` does not exist"


def test_directory(tmp_path: Path) -> None:
    assert _load_error(tmp_path, CassetteReadError) == f"`{tmp_path}` is a directory, not a cassette file"


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, dumps_trace(planted_trace()))

    def denied(self: Path) -> bytes:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", denied)
    assert _load_error(path, CassetteReadError) == f"`{path}` cannot be read: permission denied"


def test_non_utf8_bytes(tmp_path: Path) -> None:
    data = dumps_trace(planted_trace()).encode("utf-8")
    path = _write(tmp_path, data[:40] + b"\xff\xfe" + data[40:])
    assert _load_error(path, CassetteReadError) == f"`{path}` is not UTF-8 text (invalid byte at offset 40)"


def test_empty_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "  \n")
    assert _load_error(path, CassetteReadError) == f"`{path}` is empty: it holds no JSON"


def test_a_bom_prefixed_file_is_named_as_such(tmp_path: Path) -> None:
    path = _write(tmp_path, b"\xef\xbb\xbf" + dumps_trace(planted_trace()).encode())
    assert _load_error(path, CassetteReadError) == (
        f"`{path}` starts with a byte order mark (BOM), which JSON does not allow; "
        "save it as UTF-8 without a BOM"
    )


def test_truncated_file(tmp_path: Path) -> None:
    text = dumps_trace(planted_trace())
    cut = text.index(SECRET) + 10
    path = _write(tmp_path, text[:cut])
    message = _load_error(path, CassetteReadError)
    assert message == f"`{path}` is not valid JSON: Unterminated string starting at line 15, column 24"


def test_top_level_must_be_an_object(tmp_path: Path) -> None:
    path = _write(tmp_path, f'["{SECRET}"]')
    message = _load_error(path, CassetteSchemaError)
    assert message == f"`{path}` does not match the trace v2 schema at the top level: must be an object"


@pytest.mark.parametrize(
    ("version", "problem"),
    [
        (None, "version field is missing"),
        (1, "version 1 is unreadable: re-record the run (there is no v1 → v2 migration)"),
        (3, "version 3 is not supported (expected 2)"),
        (2.5, "version 2.5 is not supported (expected 2)"),
        ("2", "version field is not a number"),
        (True, "version field is not a number"),
        ("absent-null", "version field is not a number"),
    ],
)
def test_version_is_checked_first(tmp_path: Path, version: Any, problem: str) -> None:
    doc: dict[str, Any] = dict(planted_trace())
    doc["steps"] = [{"garbage": SECRET}]  # the version is reported before the schema is looked at
    if version is None:
        del doc["version"]
    else:
        doc["version"] = None if version == "absent-null" else version
    path = _write(tmp_path, dumps_trace(doc))  # type: ignore[arg-type]
    assert _load_error(path, CassetteVersionError) == f"`{path}` is not a v2 cassette: {problem}"


def test_version_message_without_a_path() -> None:
    with pytest.raises(CassetteVersionError) as caught:
        parse_trace('{"version": 1, "id": "x", "createdAt": 0, "steps": []}')
    assert str(caught.value) == (
        "the cassette is not a v2 cassette: version 1 is unreadable: "
        "re-record the run (there is no v1 → v2 migration)"
    )
    assert caught.value.path is None


def test_load_accepts_str_and_pathlike(tmp_path: Path) -> None:
    path = _write(tmp_path, dumps_trace(planted_trace()))
    assert load_trace(path) == load_trace(str(path)) == planted_trace()


def test_empty_trace_is_valid() -> None:
    assert parse_trace('{"version": 2, "id": "x", "createdAt": 0, "steps": []}')["steps"] == []


# ----------------------------------------------------------------------------------------------
# shared=True: each message and tool the model_input steps repeat is one object


def test_a_shared_load_is_the_same_trace_with_each_repeated_item_read_once(tmp_path: Path) -> None:
    path = _write(tmp_path, dumps_trace(conversation(6)))
    plain, shared = load_trace(path), load_trace(path, shared=True)
    assert shared == plain
    assert dumps_trace(shared) == dumps_trace(plain) == read_text(path)
    first, last = shared["steps"][0]["payload"], shared["steps"][5]["payload"]
    assert last["messages"][0] is first["messages"][0] and last["tools"][0] is first["tools"][0]
    before = shared["steps"][4]["payload"]["messages"]
    assert all(a is b for a, b in zip(last["messages"][: len(before)], before, strict=True))
    assert plain["steps"][5]["payload"]["messages"][0] is not plain["steps"][0]["payload"]["messages"][0]


@pytest.mark.parametrize(
    ("earlier", "later"),
    [(True, 1), (False, 0), (1, True), ({"a": 1, "b": 2}, {"b": 2, "a": 1}), ({"x": [True]}, {"x": [1]})],
    ids=["true-1", "false-0", "1-true", "key-order", "nested"],
)
def test_values_equal_to_python_but_not_the_same_json_are_never_shared(earlier: Any, later: Any) -> None:
    """``True == 1`` and dicts compare without order in Python: each step keeps its own value."""
    trace = conversation(3, [{"v": earlier}, {"v": later}, None])
    assert earlier == later  # to Python
    text = dumps_trace(trace)
    shared = parse_trace(text, shared=True)
    messages = shared["steps"][2]["payload"]["messages"]
    assert shared == parse_trace(text) == trace
    for message, value in zip(messages[1:], (earlier, later), strict=True):
        stored = message["content"][0]["result"]["v"]
        assert type(stored) is type(value) and stored == value
        assert json.dumps(stored) == json.dumps(value)  # key order and nested types too
    assert messages[1] is not messages[2]
    assert messages[2] is shared["steps"][2]["payload"]["messages"][2]


def test_a_message_edited_deep_in_a_long_history_fails_a_shared_load_at_that_step() -> None:
    """The copy in step 120 of a message every later step repeats is edited: the shared load names
    step 120, as the plain load does, however many equal copies follow."""
    trace = conversation(150)
    text = dumps_trace(trace)
    at = text.index('"n": 7\n', text.index('"index": 120,'))
    edited = text[:at] + '"n": 8' + text[at + len('"n": 7') :]
    errors = []
    for shared in (False, True):
        with pytest.raises(HashChainError) as caught:
            parse_trace(edited, path="long.json", shared=shared)
        errors.append((str(caught.value), caught.value.step_index))
    assert errors[0] == errors[1] and errors[0][1] == 120
    assert "step 120: stored hash does not match its contents" in errors[0][0]


# ----------------------------------------------------------------------------------------------
# dumps_trace


def test_dumps_reorders_keys_into_the_writers_order(vectors_dir: Path) -> None:
    path = vectors_dir / "fixtures/traces/fork-child.v2.json"
    trace = load_trace(path)
    shuffled = {k: trace[k] for k in reversed(list(trace))}  # type: ignore[literal-required]
    shuffled["steps"] = [{k: s[k] for k in reversed(list(s))} for s in trace["steps"]]  # type: ignore[literal-required]
    assert next(iter(shuffled)) == "forkedFromStepId"
    assert dumps_trace(shuffled) == read_text(path)  # type: ignore[arg-type]


def test_dumps_keeps_payload_key_order() -> None:
    trace = planted_trace()
    payload = trace["steps"][3]["payload"]
    assert list(payload) == ["toolCallId", "toolName", "result"]
    reversed_trace = copy.deepcopy(trace)
    reversed_trace["steps"][3]["payload"] = dict(reversed(list(payload.items())))
    text = dumps_trace(reversed_trace)
    assert text != dumps_trace(trace)
    assert '"payload": {\n        "result": {' in text
    assert parse_trace(text) == reversed_trace  # key order is not hashed


def test_dumps_keeps_unknown_keys_after_the_known_ones() -> None:
    trace: dict[str, Any] = {"extra": 1, "steps": [], "id": "x", "version": 2, "createdAt": 0}
    expected = '{\n  "version": 2,\n  "id": "x",\n  "createdAt": 0,\n  "steps": [],\n  "extra": 1\n}'
    assert dumps_trace(trace) == expected  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------
# save_trace


def test_save_writes_the_exact_file_bytes(tmp_path: Path, cassette_path: Path) -> None:
    target = tmp_path / "nested" / "dir" / cassette_path.name
    save_trace(load_trace(cassette_path), target)
    assert target.read_bytes() == cassette_path.read_bytes()
    assert os.listdir(target.parent) == [cassette_path.name]


def test_save_then_load_round_trips(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    save_trace(planted_trace(), str(target))
    assert load_trace(target) == planted_trace()


def _boom(error: int) -> Any:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise OSError(error, os.strerror(error))

    return fail


@pytest.mark.parametrize(
    ("function", "error"),
    [("replace", errno.ENOSPC), ("fsync", errno.EIO), ("open", errno.EROFS), ("makedirs", errno.EACCES)],
)
def test_a_failed_save_keeps_the_previous_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, function: str, error: int
) -> None:
    target = tmp_path / "run.json"
    target.write_text("previous content", encoding="utf-8")
    monkeypatch.setattr(os, function, _boom(error))
    with pytest.raises(CassetteError) as caught:
        save_trace(planted_trace(), target)
    monkeypatch.undo()
    assert str(caught.value) == (
        f"could not write `{target}`: {os.strerror(error)}; any previous file there is unchanged"
    )
    assert caught.value.path == str(target)
    assert target.read_text(encoding="utf-8") == "previous content"
    assert os.listdir(tmp_path) == ["run.json"]


def test_a_trace_without_a_json_form_is_not_written(tmp_path: Path) -> None:
    trace = planted_trace()
    trace["steps"][5]["payload"]["score"] = math.inf
    target = tmp_path / "run.json"
    with pytest.raises(CassetteError) as caught:
        save_trace(trace, target)
    assert str(caught.value) == (
        f"could not write `{target}`: Cannot canonicalize a non-finite number (NaN or Infinity)"
    )
    assert os.listdir(tmp_path) == []


def test_an_interrupted_save_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_trace(planted_trace(), tmp_path / "run.json")
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


def test_saving_over_a_directory_fails_cleanly(tmp_path: Path) -> None:
    target = tmp_path / "cassette.json"
    target.mkdir()
    with pytest.raises(CassetteError, match=r"^could not write `.*cassette\.json`: Is a directory;"):
        save_trace(planted_trace(), target)
    assert sorted(os.listdir(tmp_path)) == ["cassette.json"]


def test_save_keeps_the_permission_bits_of_the_file_it_replaces(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    save_trace(planted_trace(), target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        save_trace(planted_trace(), tmp_path / "run.json")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "run.json").stat().st_mode) == 0o640
