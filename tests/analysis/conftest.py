"""Shared fixtures for the analysis-side tests: the vector files and small trace builders."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_blackbox.trace.io import dumps_trace
from pytest_blackbox.trace.model import Trace
from pytest_blackbox.trace.recorder import TraceRecorder
from tests import vector_json

#: Every cassette among the vectors (files in cassette form).
CASSETTES = (
    "fixtures/traces/success-final-answer.v2.json",
    "fixtures/traces/success-tool-use.v2.json",
    "fixtures/traces/fork-parent.v2.json",
    "fixtures/traces/fork-child.v2.json",
    "fixtures/traces/error-unknown-tool.v2.json",
    "fixtures/external/chat-tool-use.converted.v2.json",
    "examples/fleet-triage/cassettes/triage-incident.json",
    "examples/fleet-triage/cassettes/triage-hypothesis.json",
    "examples/fleet-triage/cassettes/triage-fixed.json",
)


def read_trace(relative: str) -> Trace:
    """A vector cassette as plain data (a fresh copy each time, safe to edit)."""
    trace: Trace = vector_json(relative)
    return trace


def rechain(trace: Trace) -> Trace:
    """The same steps with hashes recomputed, so a planted change is *not* a chain failure."""
    recorder = TraceRecorder(
        trace["id"],
        trace["createdAt"],
        parent_id=trace.get("parentId"),
        forked_from_step_id=trace.get("forkedFromStepId"),
    )
    for step in trace["steps"]:
        recorder.append(step["type"], copy.deepcopy(step["payload"]), step["timestamp"])
    return recorder.trace()


@pytest.fixture
def write_trace(tmp_path: Path) -> Callable[[Trace, str], Path]:
    """Write a trace as a cassette file under ``tmp_path``."""

    def write(trace: Trace, name: str = "cassette.json") -> Path:
        path = tmp_path / name
        path.write_bytes(dumps_trace(trace).encode("utf-8"))
        return path

    return write
