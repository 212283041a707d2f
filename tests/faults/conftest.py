"""Shared pieces of the fault-injection tests: bulky valid traces and the temporary-file naming rule.

The tests run writers in forked processes (forking is what makes twenty kill -9 rounds fit in a few
seconds: a fresh interpreter would spend most of each round importing), so they need ``os.fork``.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_blackbox.trace.io import dumps_trace
from pytest_blackbox.trace.model import Trace
from pytest_blackbox.trace.recorder import TraceRecorder

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext

#: The name ``save_trace`` gives its temporary file for a cassette called ``run.json``.
TEMP_NAME = re.compile(r"\.run\.json\.[0-9a-f]{12}\.tmp")


def bulky_trace(trace_id: str, filler: str, megabytes: float) -> Trace:
    """A valid trace of about ``megabytes`` MB, in four long tool results so encoding it stays quick."""
    recorder = TraceRecorder(trace_id, 1000)
    chunk = filler * int(megabytes * 250_000 / len(filler))
    for index in range(4):
        payload = {"toolCallId": f"call-{index}", "toolName": "fetch", "result": f"{index}:{chunk}"}
        recorder.append("tool_result", payload, 1001 + index)
    return recorder.trace()


def texts_of(*traces: Trace) -> set[bytes]:
    return {dumps_trace(trace).encode("utf-8") for trace in traces}


def leftovers(directory: Path) -> list[str]:
    """Everything in ``directory`` except the cassette itself."""
    return sorted(name for name in os.listdir(directory) if name != "run.json")


@pytest.fixture
def forking() -> ForkContext:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("these fault tests fork writer processes; this platform cannot fork")
    return multiprocessing.get_context("fork")
