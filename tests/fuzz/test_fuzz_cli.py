"""``blackbox inspect`` and ``blackbox list`` on damaged and on odd-but-valid cassettes.

The command line is where a user meets a bad file, so the contract is strict: exit 0 or 1, never a
traceback, a failure is one ``blackbox <command>: …`` line on stderr, and with the API key in the
environment no output shows it (the planted cassettes carry the key in ids, texts and tool inputs).
Standard output shows cassette content by design, so there only the whole key is looked for (a
damaged copy of it is no longer the key); stderr must not quote content at all.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from functools import partial
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_blackbox.cli import main
from pytest_blackbox.trace.errors import CassetteError
from pytest_blackbox.trace.io import dumps_trace, load_trace
from pytest_blackbox.trace.model import Trace

from .conftest import (
    MARKER,
    MARKER_RUNS,
    Scratch,
    attempt,
    cassette_names,
    fuzz_settings,
    mutated_bytes,
    mutated_text,
    note,
    planted_cassette,
    random_traces,
    timed,
)


@pytest.fixture(autouse=True, scope="module")
def _api_key_in_the_environment() -> Iterator[None]:
    with mock.patch.dict(os.environ, {"ANTHROPIC_API_KEY": MARKER, "NO_COLOR": "1"}):
        os.environ.pop("OPENAI_API_KEY", None)
        yield


def run(*argv: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one ``blackbox`` call, checked against the CLI contract."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = timed(lambda: main(list(argv)))
    stdout, stderr = out.getvalue(), err.getvalue()
    assert code in (0, 1), code
    assert "Traceback" not in stderr
    if code == 1:
        assert stderr.startswith(f"blackbox {argv[0]}: ") and stderr.count("\n") == 1, stderr
    else:
        assert stderr == ""
    assert MARKER not in stdout, "the API key reached the output"
    assert not any(run in stderr for run in MARKER_RUNS), "the error message quotes the cassette"
    note(f"exit {code}")
    return code, stdout, stderr


def _mutated(data: st.DataObject, name: str) -> bytes:
    if data.draw(st.booleans()):
        return data.draw(mutated_bytes(planted_cassette(name).encode("utf-8")))
    return data.draw(mutated_text(planted_cassette(name))).encode("utf-8", "surrogatepass")


@fuzz_settings(100)
@given(st.sampled_from(cassette_names()), st.data(), st.integers(-2, 20) | st.none())
def test_inspect_damaged_cassettes(
    scratch: Scratch, name: str, data: st.DataObject, step: int | None
) -> None:
    path = scratch.write(_mutated(data, name))
    code, _, _ = run("inspect", str(path), *(["--step", str(step)] if step is not None else []))
    loaded = attempt(lambda: load_trace(path), CassetteError)
    if not isinstance(loaded, BaseException):
        assert code == (0 if step is None or 0 <= step < len(loaded["steps"]) else 1)
    else:
        assert code == 1


@fuzz_settings(75)
@given(random_traces, st.integers(-1, 7) | st.none())
def test_inspect_random_valid_cassettes(scratch: Scratch, trace: Trace, step: int | None) -> None:
    path = scratch.write(dumps_trace(trace).encode("utf-8", "surrogatepass"))
    code, stdout, _ = run("inspect", str(path), *(["--step", str(step)] if step is not None else []))
    in_range = step is None or 0 <= step < len(trace["steps"])
    assert code == (0 if in_range else 1)
    if step is None:
        assert f"Steps:        {len(trace['steps'])}\n" in stdout


@fuzz_settings(50)
@given(
    st.lists(st.tuples(st.sampled_from(cassette_names()), st.booleans()), min_size=1, max_size=4), st.data()
)
def test_list_a_directory_of_damaged_cassettes(
    scratch: Scratch, files: list[tuple[str, bool]], data: st.DataObject
) -> None:
    directory = scratch.directory / "listing"
    directory.mkdir(exist_ok=True)
    for old in directory.iterdir():
        old.unlink()
    valid = 0
    for position, (name, damaged) in enumerate(files):
        raw = _mutated(data, name) if damaged else planted_cassette(name).encode("utf-8")
        path = directory / f"{position}.json"
        path.write_bytes(raw)
        valid += not isinstance(attempt(partial(load_trace, path), CassetteError), BaseException)
    code, stdout, _ = run("list", str(directory))
    assert code == 0
    lines = stdout.splitlines()
    assert lines[-1] == f"{valid} of {len(files)} trace(s) valid, {len(files) - valid} warning(s)."
    assert len(lines) == len(files) + 1
    assert sum(line.startswith("warning: ") for line in lines) == len(files) - valid
