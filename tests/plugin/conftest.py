"""End-to-end harness for the plugin: a pytester directory holding the example weather agent.

Every scenario runs a real inner pytest session over the example's own ``agent.py``,
``fake_model.py`` and ``conftest.py`` (copied from ``examples/weather``), so these tests also prove
the example works. The inner ``conftest.py`` starts the bundled fake provider only when the run may
record; a pure replay gets a closed port, so a replay that tried the network would fail at once.
Agents come in two flavors, sync and async (an ``async def`` test under pytest-asyncio); each
scenario is written once and parametrized over both.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic  # noqa: F401  (imported once here, so in-process inner runs do not import it again)
import pytest

# the same: the session, respx and the providers; the summary and report every inner run ends with
import pytest_blackbox.plugin.review
import pytest_blackbox.plugin.summary
import pytest_blackbox.plugin.testrun  # noqa: F401
from pytest_blackbox.testing import FakeProvider
from tests import QUIET

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "weather"
#: pytest-asyncio < 0.24 (the last for pytest 7) does not know the loop-scope key: its "Unknown config
#: option" warning would change the inner runs' outcome lines, so that one warning is ignored.
INNER_INI = (
    "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    "filterwarnings =\n"
    "    ignore:Unknown config option. asyncio_default_fixture_loop_scope:pytest.PytestConfigWarning\n"
)
ANSWERS = {
    "Paris": "It is 21 °C (69.8 °F) and sunny in Paris.",
    "Oslo": "It is 4 °C (39.2 °F) and snowing in Oslo.",
    "Lima": "It is 17 °C (62.6 °F) and cloudy in Lima.",
}
NOT_CHECKED = "unused cassettes not checked (not every test was selected)"
#: How the ``--blackbox-report`` report counts the unchanged cassettes, and names a changed one's place.
UNCHANGED = "unchanged (the same run recorded again; the file was left as it was)."
CHANGED = "changed at step 0 model_input: messages[0].content"
#: The usage every bad marker argument's error ends with.
MARKER_USAGE = (
    "@pytest.mark.blackbox(cassette=None, cassette_dir=None, record_mode=None, "
    "match='strict'|'sequence'|matcher, ignore=[], normalize=[], redact=[], secrets={}, allowed_hosts=[], "
    "media='digest'|'inline', drop_fields=[])"
)
#: The inner tests' own switches (the example's conftest reads the first): no run inherits them.
_SCENARIO_ENV = ("BLACKBOX_EXAMPLE_LIVE", "WEATHER_CITY", "WEATHER_FAIL", "SECOND_CITY")

HEADER = """\
import os

import anthropic
import pytest
from agent import TOOLS, run_agent, run_agent_async


def city():
    return os.environ.get("WEATHER_CITY", "Paris")

"""
ASK = {
    "sync": """
def ask(blackbox, options, city):
    client = anthropic.Anthropic(**options)
    return run_agent(client, f"What is the weather in {city}?", blackbox.tools(TOOLS))
""",
    "async": """
async def ask(blackbox, options, city):
    async with anthropic.AsyncAnthropic(**options) as client:
        return await run_agent_async(client, f"What is the weather in {city}?", blackbox.tools(TOOLS))
""",
}

#: The standard scenario: ask once; WEATHER_FAIL makes the test fail after the agent answered.
WEATHER_TEST = """
@pytest.mark.blackbox
DEF test_weather(blackbox, anthropic_options):
    answer = AWAIT ask(blackbox, anthropic_options, city())
    if os.environ.get("WEATHER_FAIL"):
        pytest.fail("the test failed after the agent answered")
    assert answer.endswith(" in " + city() + ".")
"""


def exact(line: str) -> str:
    """An fnmatch pattern matching exactly ``line`` (test ids hold brackets)."""
    return re.sub(r"([\[\]*?])", r"[\1]", line)


def summary(
    replayed: int = 0,
    recorded: int = 0,
    diverged: int = 0,
    unsupported: int = 0,
    not_written: int = 0,
    unused: int = 0,
    *,
    unchanged: int = 0,
    live: int = 0,
    missing: int = 0,
    invalid: int = 0,
    unwritable: int = 0,
    refused: int = 0,
    relaxed: int = 0,
    checked: bool = True,
) -> str:
    """The summary line; the keyword-only counts are shown only when not zero. ``checked=False``: a
    run that selected part of the suite, so unused cassettes were not looked for. ``relaxed``: the
    replays that passed only through a match rule."""
    extra = [
        f", {n} {label}"
        for n, label in (
            (unchanged, "unchanged"),
            (live, "live"),
            (missing, "missing"),
            (invalid, "invalid"),
            (unwritable, "unwritable"),
            (refused, "refused"),
            (relaxed, "replayed through a match rule"),
        )
        if n
    ]
    unused_part = f"{unused} unused cassettes" if checked else NOT_CHECKED
    return (
        f"blackbox: {replayed} replayed, {recorded} recorded, {diverged} diverged, "
        f"{unsupported} unsupported, {not_written} not written (test failed), {unused_part}" + "".join(extra)
    )


@dataclass
class Suite:
    """The pytester directory and the flavor its test files are written in."""

    pytester: pytest.Pytester
    flavor: str

    def write(self, name: str = "test_weather", body: str = WEATHER_TEST) -> Path:
        source = HEADER + ASK[self.flavor] + body
        source = source.replace("DEF ", "async def " if self.flavor == "async" else "def ")
        source = source.replace("AWAIT ", "await " if self.flavor == "async" else "")
        return self.pytester.makepyfile(**{name: source})

    def run(self, *args: str) -> pytest.RunResult:
        return self.pytester.runpytest(*QUIET, *args)

    def fails_with(self, lines: Sequence[str], *args: str) -> pytest.RunResult:
        """Run with ``args``: the one test fails, and the output holds ``lines``, each exactly, one
        after the other."""
        result = self.run(*args)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([exact(line) for line in lines], consecutive=True)
        return result

    def cassette(self, module: str = "test_weather", test: str = "test_weather") -> Path:
        return self.pytester.path / "cassettes" / module / f"{test}.json"

    def load(self, module: str = "test_weather", test: str = "test_weather") -> Any:
        return json.loads(self.cassette(module, test).read_text(encoding="utf-8"))


@pytest.fixture
def bare_dir(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> pytest.Pytester:
    """An empty pytester directory with the inner ini; no key and no leftover switch in the environment.

    Each inner run sees only what its test sets: a replay must pass with no API key at all.
    """
    for name in _SCENARIO_ENV:
        clean_env.delenv(name, raising=False)
    pytester.makeini(INNER_INI)
    return pytester


@pytest.fixture
def weather_dir(bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester directory holding the example agent, its fake model and its conftest.

    If this process already imported the example's own ``agent`` (``pytest tests examples``), the
    inner runs would reuse that module instead of the copy, so it is forgotten for the test.
    """
    for name in ("agent.py", "fake_model.py", "conftest.py"):
        (bare_dir.path / name).write_text((EXAMPLE / name).read_text(encoding="utf-8"), encoding="utf-8")
    for module in ("agent", "fake_model"):
        clean_env.delitem(sys.modules, module, raising=False)
    return bare_dir


@pytest.fixture(params=["sync", "async"])
def suite(request: pytest.FixtureRequest, weather_dir: pytest.Pytester) -> Suite:
    return Suite(weather_dir, request.param)


@pytest.fixture
def sync_suite(weather_dir: pytest.Pytester) -> Suite:
    """For the scenarios about options and output rather than the agent (one flavor is enough)."""
    return Suite(weather_dir, "sync")


#: The inner conftest of the counted suites: every model call, recording or replaying, goes to the
#: outer test's fake provider, which counts what reaches it (a replay must send nothing).
COUNTED_CONFTEST = """
import os

import pytest


@pytest.fixture
def anthropic_options():
    return {"base_url": os.environ["FAKE_PROVIDER_URL"], "api_key": "fake-provider-key"}
"""


def _example_responder() -> Any:
    """``respond`` of the example's ``fake_model.py``, loaded from its file (not as ``fake_model``)."""
    spec = importlib.util.spec_from_file_location("_weather_fake_model", EXAMPLE / "fake_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.respond


@dataclass
class Counted(Suite):
    """A suite whose model calls all go to :attr:`fake`, recording and replaying alike."""

    fake: FakeProvider

    @property
    def sent(self) -> int:
        """How many requests reached the provider so far."""
        return len(self.fake.requests)


def _counted(bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, flavor: str) -> Iterator[Counted]:
    for name in ("agent.py", "fake_model.py"):
        (bare_dir.path / name).write_text((EXAMPLE / name).read_text(encoding="utf-8"), encoding="utf-8")
    for module in ("agent", "fake_model"):
        clean_env.delitem(sys.modules, module, raising=False)
    bare_dir.makeconftest(COUNTED_CONFTEST)
    with FakeProvider(respond=_example_responder()) as fake:
        clean_env.setenv("FAKE_PROVIDER_URL", fake.anthropic_base_url)
        yield Counted(bare_dir, flavor, fake)


@pytest.fixture(params=["sync", "async"])
def counted(
    request: pytest.FixtureRequest, bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch
) -> Iterator[Counted]:
    yield from _counted(bare_dir, clean_env, request.param)


@pytest.fixture
def counted_sync(bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> Iterator[Counted]:
    """For scenarios about options and output rather than the agent (one flavor is enough)."""
    yield from _counted(bare_dir, clean_env, "sync")
