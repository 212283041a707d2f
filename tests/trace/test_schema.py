"""The trace v2 JSON Schema: it accepts every real cassette, refuses each bad shape with a precise
pointer, and the fast compiled check agrees with ``jsonschema`` itself."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]

from pytest_blackbox.trace import schema as schema_module
from pytest_blackbox.trace.errors import CassetteSchemaError
from pytest_blackbox.trace.io import dumps_trace, load_trace, parse_trace
from pytest_blackbox.trace.model import Stop
from pytest_blackbox.trace.recorder import TraceRecorder
from pytest_blackbox.trace.schema import schema_path, validate_schema

from .conftest import SECRET, planted_trace, read_text

REPO_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "trace-v2.schema.json"


def _schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(REPO_SCHEMA.read_text(encoding="utf-8"))
    return loaded


def test_the_schema_is_a_valid_2020_12_schema() -> None:
    schema = _schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_schema_path_finds_the_schema_in_this_checkout() -> None:
    assert schema_path().is_file()
    assert json.loads(schema_path().read_text(encoding="utf-8")) == _schema()


def test_every_vector_is_valid_under_plain_jsonschema(cassette_path: Path) -> None:
    document = json.loads(read_text(cassette_path))
    assert list(Draft202012Validator(_schema()).iter_errors(document)) == []
    validate_schema(document, path=str(cassette_path))


def _wrap(step_type: str, payload: Any) -> dict[str, Any]:
    recorder = TraceRecorder("t", 0)
    recorder.append(step_type, payload, 0)  # type: ignore[arg-type]
    return dict(recorder.trace())


def test_normalized_provider_payloads_are_valid(vectors_dir: Path) -> None:
    vectors = json.loads(read_text(vectors_dir / "normalization-vectors.json"))["vectors"]
    kinds = {"response_to_model_output": "model_output", "request_to_model_input": "model_input"}
    checked = 0
    for vector in vectors:
        if vector["direction"] in kinds:
            validate_schema(_wrap(kinds[vector["direction"]], vector["expected"]))
            checked += 1
        elif "normalizesBackTo" in vector["expected"]:
            validate_schema(_wrap("model_output", vector["expected"]["normalizesBackTo"]))
            checked += 1
    assert checked == 10


@pytest.mark.parametrize(
    "payload",
    [
        {"event": "run_completed", "status": "success", "result": "done"},
        {"event": "run_failed", "status": "error", "reason": "agent_error", "message": "boom"},
        {"event": "run_failed", "status": "error", "reason": "process_exit", "exitCode": 1},
        {"event": "run_failed", "status": "error", "reason": "calls_in_flight", "exitCode": 0, "inFlight": 1},
        {"event": "run_failed", "status": "error", "reason": "max_steps_exceeded", "maxSteps": 20},
        {"event": "run_failed", "status": "error", "reason": "unknown_tool", "toolName": "flights"},
        {
            "event": "run_failed",
            "status": "error",
            "reason": "unknown_tool",
            "toolName": "f",
            "toolCallId": "call-0",
        },
        {"event": "checkpoint", "anything": [1, {"goes": None}]},
    ],
)
def test_every_documented_metadata_payload_is_valid(payload: dict[str, Any]) -> None:
    validate_schema(_wrap("metadata", payload))


def _fresh() -> dict[str, Any]:
    """The planted trace as plain JSON data, free to mutate."""
    fresh: dict[str, Any] = json.loads(dumps_trace(planted_trace()))
    return fresh


def _set(pointer: str, value: Any) -> Callable[[dict[str, Any]], None]:
    *parents, last = pointer.strip("/").split("/")

    def mutate(doc: dict[str, Any]) -> None:
        target: Any = doc
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return mutate


def _delete(pointer: str) -> Callable[[dict[str, Any]], None]:
    *parents, last = pointer.strip("/").split("/")

    def mutate(doc: dict[str, Any]) -> None:
        target: Any = doc
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        del target[last]

    return mutate


def _then(*mutations: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        for mutation in mutations:
            mutation(doc)

    return mutate


ALLOWED_RESULT = "allowed: toolCallId, toolName, result, error"
ONE_OF_RESULT = "must have exactly one of 'result' or 'error'"
STEP_TYPES = '"model_input", "model_output", "tool_call", "tool_result", "metadata"'
REASONS = '"agent_error", "process_exit", "calls_in_flight", "max_steps_exceeded", "unknown_tool"'

# (mutation, pointer, reason); the planted trace's steps are: 0 model_input, 1 model_output
# tool_calls, 2 tool_call, 3 tool_result, 4 model_input, 5 final_answer, 6 metadata
BAD_SHAPES: list[tuple[Callable[[dict[str, Any]], None], str, str]] = [
    (_set("/steps/2/index", "2"), "/steps/2/index", "must be an integer"),
    (_set("/steps/2/index", -1), "/steps/2/index", "must be 0 or more"),
    (_set("/steps/2/index", 2.5), "/steps/2/index", "must be an integer"),
    (_set("/steps/2/hash", SECRET), "/steps/2/hash", "must be 64 lowercase hexadecimal characters"),
    (_set("/steps/2/hash", "A" * 64), "/steps/2/hash", "must be 64 lowercase hexadecimal characters"),
    (_set("/steps/2/hash", "a" * 64 + "\n"), "/steps/2/hash", "must be 64 lowercase hexadecimal characters"),
    (_set("/steps/2/prevHash", 7), "/steps/2/prevHash", "must be a string or null"),
    (_set("/steps/2/prevHash", "0" * 63), "/steps/2/prevHash", "must be 64 lowercase hexadecimal characters"),
    (_delete("/steps/2/hash"), "/steps/2", "is missing required field 'hash'"),
    (_set("/steps/2/type", SECRET), "/steps/2/type", f"must be one of {STEP_TYPES}"),
    (_set("/steps/2/timestamp", "0"), "/steps/2/timestamp", "must be a number"),
    (_set("/steps/2/id", 2), "/steps/2/id", "must be a string"),
    (
        _set("/steps/2/" + SECRET, 1),
        "/steps/2",
        "has a field the format does not allow (allowed: id, index, "
        "type, timestamp, payload, prevHash, hash)",
    ),
    (_set("/steps/3/payload/error", SECRET), "/steps/3/payload", ONE_OF_RESULT),
    (_delete("/steps/3/payload/result"), "/steps/3/payload", ONE_OF_RESULT),
    (
        _then(_delete("/steps/3/payload/result"), _set("/steps/3/payload/error", 5)),
        "/steps/3/payload/error",
        "must be a string",
    ),
    (
        _set("/steps/3/payload/" + SECRET, 5),
        "/steps/3/payload",
        f"has a field the format does not allow ({ALLOWED_RESULT})",
    ),
    (_set("/steps/2/payload/toolName", None), "/steps/2/payload/toolName", "must be a string"),
    (_delete("/steps/2/payload/toolInput"), "/steps/2/payload", "is missing required field 'toolInput'"),
    (
        _set("/steps/1/payload/type", SECRET),
        "/steps/1/payload/type",
        'must be one of "tool_call", "tool_calls", "final_answer"',
    ),
    (_set("/steps/1/payload/calls", []), "/steps/1/payload/calls", "must hold at least 1 item"),
    (_set("/steps/1/payload/stop", "refusal"), "/steps/1/payload/stop", 'must be "length"'),
    (
        _delete("/steps/1/payload/calls/0/toolCallId"),
        "/steps/1/payload/calls/0",
        "is missing required field 'toolCallId'",
    ),
    (
        _set("/steps/5/payload/stop", SECRET),
        "/steps/5/payload/stop",
        "must be one of " + ", ".join(f'"{stop}"' for stop in get_args(Stop)),
    ),
    (_set("/steps/5/payload/text", ["x"]), "/steps/5/payload/text", "must be a string"),
    (
        _set("/steps/5/payload/reasoning", {"reasoningContent": 3}),
        "/steps/5/payload/reasoning/reasoningContent",
        "must be a string",
    ),
    (
        _set("/steps/5/payload/reasoning", {"thought": "x"}),
        "/steps/5/payload/reasoning",
        "has a field the format does not allow (allowed: reasoningContent, reasoning)",
    ),
    (
        _set("/steps/0/payload/messages/0/role", "system"),
        "/steps/0/payload/messages/0/role",
        'must be one of "user", "assistant"',
    ),
    (
        _set("/steps/0/payload/messages/0/content", {"text": SECRET}),
        "/steps/0/payload/messages/0/content",
        "must be a string or an array",
    ),
    (
        _delete("/steps/0/payload/tools/0/description"),
        "/steps/0/payload/tools/0",
        "is missing required field 'description'",
    ),
    (_set("/steps/0/payload/params", [SECRET]), "/steps/0/payload/params", "must be an object"),
    (_delete("/steps/0/payload/tools"), "/steps/0/payload", "is missing required field 'tools'"),
    (
        _set("/steps/4/payload/messages/1/content/1/type", "image"),
        "/steps/4/payload/messages/1/content/1/type",
        'must be one of "text", "tool_use", "tool_result", "server_tool_use", "server_tool_result", '
        '"compaction", "media"',
    ),
    (
        _set("/steps/4/payload/messages/2/content/0/error", "e"),
        "/steps/4/payload/messages/2/content/0",
        ONE_OF_RESULT,
    ),
    (
        _set("/steps/4/payload/messages/1/content/0/text", 3),
        "/steps/4/payload/messages/1/content/0/text",
        "must be a string",
    ),
    (_set("/steps/6/payload/status", "error"), "/steps/6/payload/status", 'must be "success"'),
    (_set("/steps/6/payload/event", "run_failed"), "/steps/6/payload", "is missing required field 'reason'"),
    (
        _set("/steps/6/payload", {"event": "run_failed", "status": "error", "reason": SECRET}),
        "/steps/6/payload/reason",
        f"must be one of {REASONS}",
    ),
    (
        _set("/steps/6/payload", {"event": "run_failed", "status": "error", "reason": "unknown_tool"}),
        "/steps/6/payload",
        "is missing required field 'toolName'",
    ),
    (
        _set(
            "/steps/6/payload",
            {
                "event": "run_failed",
                "status": "error",
                "reason": "process_exit",
                "exitCode": 1,
                "maxSteps": 3,
            },
        ),
        "/steps/6/payload",
        "has a field the format does not allow (allowed: event, status, reason, exitCode)",
    ),
    (
        _set(
            "/steps/6/payload",
            {
                "event": "run_failed",
                "status": "error",
                "reason": "calls_in_flight",
                "exitCode": 0,
                "inFlight": 0,
            },
        ),
        "/steps/6/payload/inFlight",
        "must be 1 or more",
    ),
    (
        _set("/steps/6/payload", {"status": "success"}),
        "/steps/6/payload",
        "is missing required field 'event'",
    ),
    (_set("/steps/6/payload", SECRET), "/steps/6/payload", "must be an object"),
    (_set("/steps/6", [SECRET]), "/steps/6", "must be an object"),
]

TOP_LEVEL: list[tuple[Callable[[dict[str, Any]], None], str]] = [
    (_set("/version", 3), "must be 2"),
    (_set("/createdAt", SECRET), "must be a number"),
    (_set("/id", None), "must be a string"),
    (_set("/parentId", 5), "must be a string"),
    (_set("/steps", {"0": SECRET}), "must be an array"),
    (_delete("/steps"), "is missing required field 'steps'"),
    (
        _set("/" + SECRET, 1),
        "has a field the format does not allow (allowed: version, id, createdAt, steps, "
        "parentId, forkedFromStepId)",
    ),
]


@pytest.mark.parametrize(("mutate", "pointer", "reason"), BAD_SHAPES)
def test_bad_step_shapes_name_the_pointer_and_the_step(
    mutate: Callable[[dict[str, Any]], None], pointer: str, reason: str
) -> None:
    document = _fresh()
    mutate(document)
    assert not Draft202012Validator(_schema()).is_valid(document)
    with pytest.raises(CassetteSchemaError) as caught:
        validate_schema(document, path="run.json")
    step = int(pointer.split("/")[2])
    assert (
        str(caught.value)
        == f"`run.json` does not match the trace v2 schema at {pointer} (step {step}): {reason}"
    )
    assert caught.value.pointer == pointer
    assert caught.value.step_index == step
    assert caught.value.path == "run.json"
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(("mutate", "reason"), TOP_LEVEL)
def test_bad_top_level_fields(mutate: Callable[[dict[str, Any]], None], reason: str) -> None:
    document = _fresh()
    mutate(document)
    with pytest.raises(CassetteSchemaError) as caught:
        validate_schema(document)
    message = str(caught.value)
    assert message.startswith("the cassette does not match the trace v2 schema at ")
    assert message.endswith(": " + reason)
    assert caught.value.step_index is None
    assert SECRET not in message


def test_parse_trace_checks_the_schema_before_the_chain() -> None:
    document = _fresh()
    document["steps"][3]["payload"]["error"] = "also"
    with pytest.raises(CassetteSchemaError, match=r"at /steps/3/payload \(step 3\): must have exactly one"):
        parse_trace(json.dumps(document), path="x.json")


def test_the_first_bad_step_is_reported() -> None:
    document = _fresh()
    document["steps"][5]["payload"]["text"] = 1
    del document["steps"][2]["hash"]
    with pytest.raises(CassetteSchemaError) as caught:
        validate_schema(document)
    assert caught.value.pointer == "/steps/2"


def test_the_generated_checks_are_the_compiled_schema() -> None:
    """The shipped module is what the compiler writes for the schema file, and is the one used."""
    shipped = Path(schema_module.__file__).with_name("schema_checks.py").read_text(encoding="utf-8")
    command = "python -m pytest_blackbox.trace.schema > pytest_blackbox/trace/schema_checks.py"
    assert shipped == schema_module.checks_module_text(), f"the schema changed: run {command}"
    assert schema_module._compiled()[1].__module__ == "pytest_blackbox.trace.schema_checks"


def test_a_schema_the_checks_were_not_generated_from_is_compiled_when_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_blackbox.trace import schema_checks

    schema_module._compiled.cache_clear()
    monkeypatch.setattr(schema_checks, "SCHEMA_SHA256", "0" * 64)
    try:
        assert schema_module._compiled()[1].__code__.co_filename == "<trace v2 schema>"
        document = _fresh()
        validate_schema(document)
        document["steps"][2]["payload"]["text"] = 1
        with pytest.raises(CassetteSchemaError):
            validate_schema(document)
    finally:
        schema_module._compiled.cache_clear()


def test_an_unsupported_schema_keyword_stops_the_compiler() -> None:
    with pytest.raises(ValueError, match="unsupported keywords"):
        schema_module._Compiler({"type": "object", "maxProperties": 3})
    with pytest.raises(ValueError, match="unsupported"):
        schema_module._Compiler({"additionalProperties": {"type": "string"}})


# ----------------------------------------------------------------------------------------------
# The fast check and jsonschema agree on mutated cassettes.

_json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([1.5, 2.0, -0.5]),
    st.sampled_from(
        [
            "",
            "x",
            "call-0",
            "success",
            "error",
            "length",
            "refusal",
            "text",
            "tool_use",
            "tool_result",
            "user",
            "run_failed",
            "run_completed",
            "unknown_tool",
            "agent_error",
            "process_exit",
            "calls_in_flight",
            "max_steps_exceeded",
            "tool_call",
            "tool_calls",
            "final_answer",
            "metadata",
            "model_input",
            "a" * 64,
        ]
    ),
)
_json_any = st.recursive(
    _json_leaf,
    lambda c: (
        st.lists(c, max_size=2)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "text",
                    "result",
                    "error",
                    "toolName",
                    "toolCallId",
                    "toolInput",
                    "event",
                    "status",
                    "reason",
                    "x",
                ]
            ),
            c,
            max_size=3,
        )
    ),
    max_leaves=6,
)


def _containers(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_containers(item, (*path, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_containers(item, (*path, index)))
    return found


@st.composite
def mutated_documents(draw: st.DrawFn) -> dict[str, Any]:
    document = _fresh()
    for _ in range(draw(st.integers(1, 2))):
        paths = _containers(document)
        where = draw(st.sampled_from(paths))
        parent: Any = document
        for part in where[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if not where:
            break
        if action == "replace":
            parent[where[-1]] = draw(_json_any)
        elif action == "delete" and isinstance(parent, dict):
            del parent[where[-1]]
        elif isinstance(parent[where[-1]], dict):
            key = draw(st.sampled_from(["result", "error", "stop", "text", "x", "calls", "toolCallId"]))
            parent[where[-1]][key] = draw(_json_any)
    return document


@settings(max_examples=300, deadline=None)
@given(mutated_documents())
def test_fast_check_agrees_with_jsonschema(document: dict[str, Any]) -> None:
    reference = Draft202012Validator(_schema()).is_valid(document)
    assert schema_module._is_valid_fast(document) is reference
    if reference:
        validate_schema(document)
    else:
        with pytest.raises(CassetteSchemaError):
            validate_schema(document)


def test_fast_check_agrees_on_every_vector(cassette_path: Path) -> None:
    assert schema_module._is_valid_fast(load_trace(cassette_path)) is True


_MEDIA_DIGEST = "0" * 64


@pytest.mark.parametrize(
    ("part", "valid"),
    [
        (
            {
                "type": "media",
                "kind": "image",
                "mediaType": "image/png",
                "sha256": _MEDIA_DIGEST,
                "byteLength": 3,
            },
            True,
        ),
        ({"type": "media", "kind": "image", "sha256": _MEDIA_DIGEST, "byteLength": 3, "data": "AAAA"}, True),
        ({"type": "media", "kind": "document", "url": "https://example.com/a.pdf", "title": "A"}, True),
        ({"type": "media", "kind": "document", "content": [{"type": "text", "text": "x"}]}, True),
        ({"type": "media", "kind": "image", "url": "u", "fileId": "f"}, False),  # two sources
        ({"type": "media", "kind": "image"}, False),  # no source
        ({"type": "media", "kind": "video", "url": "u"}, False),
        ({"type": "media", "kind": "image", "sha256": "ABC", "byteLength": 3}, False),
        ({"type": "media", "kind": "image", "url": "u", "raw": {}}, False),
    ],
)
def test_media_parts_have_one_source_and_only_their_fields(part: dict[str, Any], valid: bool) -> None:
    """The fast check (compiled from the schema) and jsonschema agree on media parts."""
    recorder = TraceRecorder("media", 1000)
    recorder.append("model_input", {"messages": [{"role": "user", "content": [part]}], "tools": []}, 1000)
    trace = recorder.trace()
    assert (not list(Draft202012Validator(_schema()).iter_errors(trace))) is valid
    if valid:
        validate_schema(trace)
    else:
        with pytest.raises(CassetteSchemaError):
            validate_schema(trace)
