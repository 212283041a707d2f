"""Shared pieces of the framework tests: the tools, the inner pytest runs, and readers of the cassette.

Each framework module records one agent run against the fake provider, stops the fake, and replays
the cassette with a guard that fails the test on any connection attempt: a replay that is not fully
offline cannot pass.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.engine import KEY_VARIABLES, set_placeholder_keys
from pytest_blackbox.testing import FakeProvider
from pytest_blackbox.trace.io import load_trace
from tests import QUIET

INSTRUCTIONS = "You are a travel assistant. Answer only from the tools' data."
CHANGED_INSTRUCTIONS = "You are a pirate. Answer in pirate speak."
INNER_INI = "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
WEATHER = {"city": "Paris", "tempC": 21, "sky": "clear"}
LOCAL_TIME = "14:05"

#: The steps of the contract's common run: one model call asking for the two tools at once, both
#: tools, and the answer.
TWO_TOOLS_THEN_ANSWER = [
    "model_input",
    "model_output",
    *["tool_call", "tool_result"] * 2,
    "model_input",
    "model_output",
    "metadata",
]


class _Deferred:
    """A module imported on its first attribute access: see :func:`deferred_import`."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):  # collection probes every module-level object for pytest's markers
            raise AttributeError(attribute)
        module = importlib.import_module(self._name)
        submodule = f"{self._name}.{attribute}"
        if hasattr(module, "__path__") and importlib.util.find_spec(submodule) is not None:
            return _Deferred(submodule)  # a package's submodule is imported on its own first use too
        return getattr(module, attribute)


def deferred_import(name: str, reason: str) -> Any:
    """``name``, imported when a test first uses it rather than when its module is collected.

    Every xdist worker collects every test module, and a framework's import costs seconds (LiteLLM's
    alone is a quarter of a worker's collection): deferred, only the worker that runs a framework's
    tests pays for it. A package's submodules are reached as attributes (``pydantic_ai.models.openai``).
    A package that is not installed skips the test module at collection, as ``pytest.importorskip``
    does. Test modules bind the real modules under ``TYPE_CHECKING``, so mypy checks every use.
    """
    if importlib.util.find_spec(name.partition(".")[0]) is None:
        pytest.skip(reason, allow_module_level=True)
    return _Deferred(name)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module's ``FLAVORS`` (its SDKs and call styles) parametrize its tests' ``flavor``."""
    if "flavor" in metafunc.fixturenames:
        metafunc.parametrize("flavor", metafunc.module.FLAVORS)


@pytest.fixture(autouse=True)
def _keys(provider_keys: pytest.MonkeyPatch) -> None:
    """Every framework test runs in a clean environment with the suite's provider keys."""


def go_keyless(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider key and no cloud credential left in the environment: only the placeholders the
    pytest plugin sets before conftests load (set here as it sets them), as on a machine with none."""
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    env = dict(os.environ)
    for name in set_placeholder_keys(env):
        monkeypatch.setenv(name, env[name])


class TravelTools:
    """The real tools. They log their calls: a replay must run none of them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def get_weather(self, city: str) -> dict[str, Any]:
        """Current weather for a city.

        Args:
            city: City name, e.g. Paris.
        """
        self.calls.append(("get_weather", city))
        return dict(WEATHER, city=city)

    def get_time(self, city: str) -> str:
        """Local time in a city.

        Args:
            city: City name, e.g. Paris.
        """
        self.calls.append(("get_time", city))
        return LOCAL_TIME


def step_types(path: Path) -> list[str]:
    return [step["type"] for step in load_trace(path)["steps"]]


def payload(path: Path, index: int) -> Any:
    return load_trace(path)["steps"][index]["payload"]


def tool_results(path: Path) -> list[Any]:
    """The recorded tool results, as (name, result) pairs in cassette order."""
    return [
        (step["payload"]["toolName"], step["payload"]["result"])
        for step in load_trace(path)["steps"]
        if step["type"] == "tool_result"
    ]


def compact(value: Any) -> str:
    """JSON as the frameworks put a dict tool result into the conversation."""
    return json.dumps(value, separators=(",", ":"))


@dataclass
class InnerSuite:
    """A pytester directory holding one user test file, run as a real inner pytest session."""

    pytester: pytest.Pytester
    monkeypatch: pytest.MonkeyPatch
    #: Run each inner session in a new Python process: what the user's test imports is imported anew.
    in_a_process_of_its_own: bool = False

    def run(self, *args: str, expect_tool_calls: str) -> pytest.RunResult:
        """One inner run; the inner test checks the tool calls it saw against ``expect_tool_calls``."""
        self.monkeypatch.setenv("EXPECT_TOOL_CALLS", expect_tool_calls)
        run = self.pytester.runpytest_subprocess if self.in_a_process_of_its_own else self.pytester.runpytest
        return run(*QUIET, *args)

    def records(self, source: str, test: str, *, expect_tool_calls: str) -> Path:
        """Write the user's test file, record it once against the fake; the cassette's path comes back."""
        self.pytester.makepyfile(test_agent=source)
        self.run("--record-mode=once", expect_tool_calls=expect_tool_calls).assert_outcomes(passed=1)
        return self.pytester.path / "cassettes" / "test_agent" / f"{test}.json"

    def replays_offline(self, cassette: Path, fake: FakeProvider, *key_variables: str) -> None:
        """With the provider stopped and its key (or credentials) unset the test replays and passes,
        runs no tool (the inner test checks) and leaves its cassette byte for byte as it was."""
        recorded = cassette.read_bytes()
        fake.stop()
        for name in key_variables:
            self.monkeypatch.delenv(name)
        replayed = self.run(expect_tool_calls="")
        replayed.assert_outcomes(passed=1)
        replayed.stdout.fnmatch_lines(["blackbox: 1 replayed, 0 recorded, 0 diverged, *"])
        assert cassette.read_bytes() == recorded


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> InnerSuite:
    monkeypatch.delenv("EXPECT_TOOL_CALLS", raising=False)
    pytester.makeini(INNER_INI)
    return InnerSuite(pytester, monkeypatch)
