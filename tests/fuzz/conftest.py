"""Shared pieces of the fuzz suite: profiles, the vectors, input mutators and the error contract.

Every target has the same contract: a bad input ends in a typed ``BlackboxError`` whose message is
one line and never quotes the input (a cassette or a transcript may hold a secret), and no single
call takes longer than :data:`CALL_LIMIT_S` of CPU time on an input under 1 MB (stretched by the
machine's measured speed, ``tests/machine.py``: CPU time too grows on a loaded machine). Hypothesis'
own wall-clock deadline is off: the per-call limit is the guard against blow-ups, and a wall clock
measures the load more than the code. The mutators start from the
shared vectors, so most generated inputs are *almost* valid and reach the deep checks instead of
failing at the first byte.

Profiles: the default runs a few dozen to a few hundred derandomized examples per target, so CI is
reproducible and quick; ``long`` (``BLACKBOX_FUZZ=long`` or ``--hypothesis-profile=long`` with
``tests/fuzz`` on the command line) runs :data:`LONG_EXAMPLES` random examples per target.
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from pytest_blackbox.trace.errors import BlackboxError
from pytest_blackbox.trace.io import dumps_trace, parse_trace
from pytest_blackbox.trace.model import Trace
from pytest_blackbox.trace.recorder import TraceRecorder
from tests import vector_text
from tests.machine import scaled

T = TypeVar("T")


#: Planted in generated inputs; no error message may contain any 12-character run of it.
MARKER = "SECRETMARKER123456"
MARKER_RUNS = tuple(MARKER[start : start + 12] for start in range(len(MARKER) - 11))

#: No single call may use more CPU time than this on an input under 1 MB.
CALL_LIMIT_S = 2.0
LONG_EXAMPLES = 10_000
SMALL_CASSETTE = "fixtures/traces/success-final-answer.v2.json"
TRANSCRIPTS = {
    "claude-code": (
        "fixtures/import/claude-code-session.jsonl",
        "examples/claude-code-session/session.jsonl",
    ),
    "chat-json": ("fixtures/external/chat-tool-use.foreign.json",),
}

_SUPPRESSED = (HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much)

settings.register_profile(
    "long",
    max_examples=LONG_EXAMPLES,
    deadline=None,
    derandomize=False,
    database=None,
    print_blob=True,
    suppress_health_check=_SUPPRESSED,
)


def long_run() -> bool:
    """Whether the long profile was asked for, by environment or by ``--hypothesis-profile``."""
    return os.environ.get("BLACKBOX_FUZZ") == "long" or settings.get_current_profile_name() == "long"


def fuzz_settings(ci_examples: int) -> settings:
    """The long profile when asked for, else Hypothesis' derandomized ``ci`` profile with ``ci_examples``."""
    if long_run():
        return settings.get_profile("long")
    return settings(
        settings.get_profile("ci"),
        max_examples=ci_examples,
        deadline=None,
        suppress_health_check=_SUPPRESSED,
    )


# ----------------------------------------------------------------------------------------------
# Vectors


@cache
def cassette_names() -> tuple[str, ...]:
    """Every cassette vector, as ``expectations.json`` lists them."""
    return tuple(sorted(json.loads(vector_text("expectations.json"))["cassettes"]))


@cache
def normalization_vectors() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(vector_text("normalization-vectors.json"))["vectors"])


def reseal(doc: dict[str, Any], steps: list[tuple[Any, Any, Any]] | None = None) -> Trace:
    """A valid trace with ``doc``'s trace-level fields and the given (type, payload, timestamp) steps."""
    recorder = TraceRecorder(
        doc["id"],
        doc["createdAt"],
        parent_id=doc.get("parentId"),
        forked_from_step_id=doc.get("forkedFromStepId"),
    )
    if steps is None:
        steps = [(step["type"], step["payload"], step["timestamp"]) for step in doc["steps"]]
    for type_, payload, timestamp in steps:
        recorder.append(type_, payload, timestamp)
    return recorder.trace()


_PLANTED_STRINGS = ("text", "content", "result", "systemPrompt", "description", "error")


def _plant(value: Any) -> Any:
    """``value`` with the marker added to user text and to every tool input."""
    if isinstance(value, list):
        return [_plant(item) for item in value]
    if not isinstance(value, dict):
        return value
    planted = {key: _plant(item) for key, item in value.items()}
    for key in _PLANTED_STRINGS:
        if isinstance(planted.get(key), str):
            planted[key] = f"{planted[key]} {MARKER}"
    if isinstance(planted.get("toolInput"), dict):
        planted["toolInput"] = {**planted["toolInput"], MARKER: MARKER}
    return planted


@cache
def planted_cassette(name: str) -> str:
    """The vector re-recorded with the marker in its trace id, step ids, texts and tool inputs."""
    doc = copy.deepcopy(cast("dict[str, Any]", parse_trace(vector_text(name))))
    doc["id"] = f"{MARKER}-{doc['id']}"
    steps = [(step["type"], _plant(step["payload"]), step["timestamp"]) for step in doc["steps"]]
    return dumps_trace(reseal(doc, steps))


# ----------------------------------------------------------------------------------------------
# The error contract


def assert_clean_message(error: BaseException) -> str:
    """A typed error's message: non-empty, one line, no run of the planted marker."""
    assert isinstance(error, BlackboxError), f"{type(error).__name__} is not a BlackboxError"
    message = str(error)
    assert message.strip(), "empty error message"
    assert "\n" not in message and "\r" not in message, f"multi-line message: {message!r}"
    leaked = [run for run in MARKER_RUNS if run in message]
    assert not leaked, f"the message quotes the input ({leaked[0]!r}): {message!r}"
    return message


def note(outcome: str) -> None:
    """Count an outcome in Hypothesis' statistics (``--hypothesis-show-statistics``), when inside a test."""
    if currently_in_test_context():
        event(outcome)


def timed(call: Callable[[], T]) -> T:
    """Run ``call``, failing the test if it used more CPU time than the per-call limit (raised or not)."""
    start = time.process_time()
    try:
        return call()
    finally:
        used, limit = time.process_time() - start, scaled(CALL_LIMIT_S)
        if used > limit:
            pytest.fail(
                f"a single call took {used:.2f} s of CPU time (limit {limit:.2f} s on this machine now)"
            )


def attempt(call: Callable[[], T], allowed: type[BaseException] = BlackboxError) -> T | BaseException:
    """The call's result, or the ``allowed`` error it raised (checked against the error contract).

    Any other exception propagates, so Hypothesis reports and shrinks it as a failure.
    """
    try:
        return timed(call)
    except allowed as error:
        assert_clean_message(error)
        return error


class Scratch:
    """One reusable file per name in a private directory.

    Rewriting goes through ``r+`` and ``truncate`` instead of ``w``: replacing a file's content by
    truncating it to zero makes some filesystems flush on close, which is ~30x slower.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def write(self, data: bytes, name: str = "cassette.json") -> Path:
        path = self.directory / name
        with open(path, "r+b" if path.exists() else "wb") as handle:
            handle.write(data)
            handle.truncate()
        return path


@pytest.fixture(scope="session")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Scratch:
    return Scratch(tmp_path_factory.mktemp("fuzz"))


# ----------------------------------------------------------------------------------------------
# JSON values

_FORMAT_KEYS = (
    "version", "id", "createdAt", "steps", "parentId", "forkedFromStepId", "index", "type", "timestamp",
    "payload", "prevHash", "hash", "messages", "tools", "role", "content", "text", "toolCallId", "toolName",
    "toolInput", "result", "error", "event", "status", "reason", "calls", "stop", "name", "description",
    "inputSchema", "model", "params", "systemPrompt",
)  # fmt: skip
EDGE_NUMBERS = (
    0, -0.0, 1, -1, 0.2, 1.5, 1e21, 1e-7, 5e-324, 1.7976931348623157e308,
    2**53, 2**53 + 1, -(2**53) - 1, 2**64, -(2**63), 10**20, 10**400,
)  # fmt: skip

keys = st.sampled_from(_FORMAT_KEYS) | st.text(max_size=10) | st.just(MARKER)
texts = st.text(max_size=30) | st.just(MARKER) | st.text(max_size=8).map(lambda s: f"{s}{MARKER}{s}")
finite_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
#: Every scalar a Python value may hold, including those JSON cannot (NaN) or a double cannot (10**400).
scalars = finite_scalars | st.sampled_from(EDGE_NUMBERS) | st.floats()


def json_values(leaves: st.SearchStrategy[Any] = scalars, max_leaves: int = 16) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaves,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
        max_leaves=max_leaves,
    )


def json_paths(value: Any) -> list[tuple[str | int, ...]]:
    """Every path in ``value`` (the root is ``()``), in document order."""
    paths: list[tuple[str | int, ...]] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        paths.append(path)
        children: list[tuple[str | int, Any]] = []
        if isinstance(item, dict):
            children = list(item.items())
        elif isinstance(item, list):
            children = list(enumerate(item))
        stack.extend(((*path, key), child) for key, child in reversed(children))
    return paths


def get_at(value: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def replaced_at(value: Any, path: tuple[str | int, ...], new: Any) -> Any:
    """A deep copy of ``value`` with the value at ``path`` replaced (the root when ``path`` is empty)."""
    if not path:
        return new
    copied = copy.deepcopy(value)
    get_at(copied, path[:-1])[path[-1]] = new
    return copied


def deleted_at(value: Any, path: tuple[str | int, ...]) -> Any:
    copied = copy.deepcopy(value)
    del get_at(copied, path[:-1])[path[-1]]
    return copied


#: One value of every JSON type (and a few edge numbers) to swap in at a path.
SWAP_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, 1.5, 2**53 + 2, "", MARKER, [], {}, [MARKER], {MARKER: MARKER},
)  # fmt: skip


@st.composite
def structural_mutant(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with one value swapped for another type, removed, or given an extra member."""
    path = draw(st.sampled_from(json_paths(doc)))
    target = get_at(doc, path)
    kinds = ["swap", "random"]
    if path:
        kinds.append("delete")
    if isinstance(target, (dict, list)):
        kinds.append("extra")
    kind = draw(st.sampled_from(kinds))
    if kind == "swap":
        return replaced_at(doc, path, draw(st.sampled_from(SWAP_VALUES)))
    if kind == "random":
        return replaced_at(doc, path, draw(json_values(finite_scalars, 6)))
    if kind == "delete":
        return deleted_at(doc, path)
    extra = draw(json_values(finite_scalars, 4))
    if isinstance(target, dict):
        return replaced_at(doc, path, {**target, draw(keys): extra})
    return replaced_at(doc, path, [*target, extra])


# ----------------------------------------------------------------------------------------------
# Text and byte mutators

#: Fragments that stress a strict JSON reader when spliced in anywhere.
TOKENS = (
    "{", "}", "[", "]", ",", ":", '"', "\\", " ", "\n", "\t", "null", "true", "false", "-", "0", "01",
    "1e999", "-1e999", "1e-999", "NaN", "Infinity", "-Infinity", "9007199254740993", "1" * 400, "1" * 5000,
    "0.1e1", "\ud800", '"\\ud800"', '"\\udc00\\ud800"', '"\\u0000"', '"\\x"', "\ufeff", "\x00", "\u2028",
    f'"{MARKER}"', f'"{MARKER}": 1,', f'"{MARKER}": "{MARKER}"', '"version": 1,', '"version": 2,',
    '"steps": [],', '"index": 0,', '"prevHash": null,', '"hash": "' + "a" * 64 + '",', '"type": "metadata",',
    '"payload": {},', "[" * 3000, "{\"a\":" * 3000,
)  # fmt: skip
TEXT_OPS = (
    "replace",
    "delete",
    "insert",
    "duplicate_line",
    "swap_lines",
    "truncate",
    "bom",
    "nest",
    "number",
)


def _lines_op(text: str, first: int, second: int, swap: bool) -> str:
    lines = text.split("\n")
    first, second = first % len(lines), second % len(lines)
    if swap:
        lines[first], lines[second] = lines[second], lines[first]
    else:
        lines.insert(first, lines[first])  # a duplicated member line is a duplicate key
    return "\n".join(lines)


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    """``text`` after one to four random edits (see :data:`TEXT_OPS`)."""
    for op in draw(st.lists(st.sampled_from(TEXT_OPS), min_size=1, max_size=4)):
        at = draw(st.integers(0, len(text)))
        if op == "replace" and text:
            at = min(at, len(text) - 1)
            text = text[:at] + draw(st.characters()) + text[at + 1 :]
        elif op == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 64)) :]
        elif op == "insert":
            fragment = draw(st.sampled_from(TOKENS) | st.text(max_size=8))
            text = text[:at] + fragment + text[at:]
        elif op in ("duplicate_line", "swap_lines"):
            text = _lines_op(text, at, draw(st.integers(0, 10_000)), op == "swap_lines")
        elif op == "truncate":
            text = text[:at]
        elif op == "bom":
            text = "\ufeff" + text
        elif op == "nest":
            depth = draw(st.integers(1, 5000))
            text = "[" * depth + text + "]" * depth
        elif op == "number":
            digits = next((i for i in range(at, len(text)) if text[i].isdigit()), None)
            if digits is not None:
                end = digits
                while end < len(text) and text[end].isdigit():
                    end += 1
                text = text[:digits] + json.dumps(draw(st.sampled_from(EDGE_NUMBERS))) + text[end:]
    return text


#: Byte sequences that are not UTF-8 (or are, but should not be there).
BAD_BYTES = (b"\xff", b"\xfe", b"\x80", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x00")
BYTE_OPS = ("flip", "insert", "delete", "truncate", "bom")


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` after one to four byte-level edits: bit flips, invalid UTF-8, BOM, truncation."""
    for op in draw(st.lists(st.sampled_from(BYTE_OPS), min_size=1, max_size=4)):
        at = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            at = min(at, len(data) - 1)
            data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
        elif op == "insert":
            data = data[:at] + draw(st.sampled_from(BAD_BYTES) | st.binary(max_size=4)) + data[at:]
        elif op == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 64)) :]
        elif op == "truncate":
            data = data[:at]
        elif op == "bom":
            data = b"\xef\xbb\xbf" + data
    return data


def documents() -> st.SearchStrategy[str]:
    """Random JSON texts (NaN and unsafe integers included), some shaped like a trace."""
    trace_like = st.fixed_dictionaries(
        {"version": st.sampled_from([2, 2, 1, 3, "2", 2.5]), "id": texts, "createdAt": scalars},
        optional={"steps": st.lists(json_values(), max_size=3), "parentId": texts},
    )
    value = json_values() | trace_like
    return st.builds(
        lambda v, indent, ascii_only: json.dumps(v, indent=indent, ensure_ascii=ascii_only),
        value,
        st.sampled_from([None, 2]),
        st.booleans(),
    )


# ----------------------------------------------------------------------------------------------
# Valid random traces

user_data = json_values(finite_scalars, 8)
call_ids = st.sampled_from(["call-0", "call-1", "call-2"]) | texts
tool_names = st.sampled_from(["search", "calendar", "booking", MARKER]) | st.text(min_size=1, max_size=12)
calls = st.fixed_dictionaries({"toolCallId": call_ids, "toolName": tool_names, "toolInput": user_data})
text_part = st.fixed_dictionaries({"type": st.just("text"), "text": texts})
tool_use_part = st.fixed_dictionaries(
    {"type": st.just("tool_use"), "toolCallId": call_ids, "toolName": tool_names, "toolInput": user_data}
)
tool_result_part = st.fixed_dictionaries(
    {"type": st.just("tool_result"), "toolCallId": call_ids, "toolName": tool_names},
) .flatmap(lambda part: st.one_of(
    st.builds(lambda value: {**part, "result": value}, user_data),
    st.builds(lambda error: {**part, "error": error}, texts),
))  # fmt: skip
messages = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant"]),
        "content": texts | st.lists(text_part | tool_use_part | tool_result_part, max_size=3),
    }
)
tool_definitions = st.fixed_dictionaries(
    {"name": tool_names, "description": texts}, optional={"inputSchema": user_data}
)
model_inputs = st.fixed_dictionaries(
    {"messages": st.lists(messages, max_size=3), "tools": st.lists(tool_definitions, max_size=2)},
    optional={
        "systemPrompt": texts,
        "model": texts,
        "params": st.dictionaries(st.text(max_size=8), user_data, max_size=3),
    },
)
model_outputs = st.one_of(
    st.builds(lambda call: {"type": "tool_call", **call}, calls),
    st.fixed_dictionaries(
        {"type": st.just("tool_calls"), "calls": st.lists(calls, min_size=1, max_size=3)},
        optional={"text": texts, "stop": st.just("length")},
    ),
    st.fixed_dictionaries(
        {"type": st.just("final_answer"), "text": texts},
        optional={"stop": st.sampled_from(["length", "refusal"])},
    ),
)
tool_results = st.fixed_dictionaries({"toolCallId": call_ids, "toolName": tool_names}).flatmap(
    lambda base: (
        st.builds(lambda value: {**base, "result": value}, user_data)
        | st.builds(lambda error: {**base, "error": error}, texts)
    )
)
metadata = st.one_of(
    st.builds(lambda result: {"event": "run_completed", "status": "success", "result": result}, texts),
    st.builds(
        lambda message: {
            "event": "run_failed",
            "status": "error",
            "reason": "agent_error",
            "message": message,
        },
        texts,
    ),
    st.builds(
        lambda name: {"event": "run_failed", "status": "error", "reason": "unknown_tool", "toolName": name},
        tool_names,
    ),
    st.builds(
        lambda code: {"event": "run_failed", "status": "error", "reason": "process_exit", "exitCode": code},
        st.integers(-255, 255),
    ),
    st.builds(
        lambda extra: {**extra, "event": "note"}, st.dictionaries(st.text(max_size=8), user_data, max_size=3)
    ),
)
step_specs = st.one_of(
    st.tuples(st.just("model_input"), model_inputs),
    st.tuples(st.just("model_output"), model_outputs),
    st.tuples(st.just("tool_call"), calls),
    st.tuples(st.just("tool_result"), tool_results),
    st.tuples(st.just("metadata"), metadata),
)
timestamps = st.integers(0, 2**41) | st.floats(0, 2**41, allow_nan=False) | st.sampled_from([0, 1.5, 1e15])


@st.composite
def random_steps(draw: st.DrawFn, max_size: int = 6) -> list[tuple[str, Any, Any]]:
    specs = draw(st.lists(step_specs, max_size=max_size))
    return [(type_, payload, draw(timestamps)) for type_, payload in specs]


def record(trace_id: str, created_at: Any, steps: list[tuple[Any, Any, Any]], prefix: Trace | None = None,
           prefix_length: int = 0) -> Trace:  # fmt: skip
    """A trace of ``steps``, after ``prefix_length`` steps copied verbatim from ``prefix`` (a fork)."""
    recorder = TraceRecorder(trace_id, created_at)
    if prefix is not None:
        for step in prefix["steps"][:prefix_length]:
            recorder.copy_step(step)
    for type_, payload, timestamp in steps:
        recorder.append(type_, payload, timestamp)
    return recorder.trace()


random_traces = st.builds(record, texts, timestamps, random_steps())
