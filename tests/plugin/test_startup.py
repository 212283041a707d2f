"""The lazy start-up promise: a pytest run without a blackbox test never imports the heavy modules.

pytest loads the plugin in every project that has it installed, so the session, the interception
(respx, httpx2, httpx) and the providers must wait for the first test that uses a cassette, and
then load as any library does, not through pytest's assertion-rewriting import hook. The check runs
pytest in a fresh interpreter (``runpytest_subprocess``): in this process they are long imported,
and an in-process run would prove nothing.
"""

from __future__ import annotations

import json

import pytest

from tests import QUIET

#: Modules that only a blackbox test may import.
HEAVY = ("pytest_blackbox.engine.session", "pytest_blackbox.interception", "pytest_blackbox.providers")

#: Written after the run's last hook: which of the package's modules the whole run imported, each
#: with the class of the loader that loaded it.
REPORTER = """
import json
import sys


def pytest_unconfigure(config):
    loaded = {
        name: type(module.__loader__).__name__
        for name, module in sys.modules.items()
        if name.startswith(("pytest_blackbox", "orjson"))
    }
    with open("imported.json", "w", encoding="utf-8") as handle:
        json.dump(loaded, handle)
"""
PLAIN_TEST = """
def test_arithmetic():
    assert 1 + 1 == 2
"""
BLACKBOX_TEST = """
import pytest


@pytest.mark.blackbox
def test_agent(blackbox):
    blackbox.finish(result="done")
"""


def imported_by_a_run(pytester: pytest.Pytester, test_source: str, *args: str) -> dict[str, str]:
    """The package's modules the run imported, each with the class name of its loader."""
    pytester.makeconftest(REPORTER)
    pytester.makepyfile(test_it=test_source)
    # without the suite's other pytest plugins, whose start-up (Hypothesis, LangSmith) costs seconds
    result = pytester.runpytest_subprocess(*QUIET, *args)
    result.assert_outcomes(passed=1)
    loaded: dict[str, str] = json.loads((pytester.path / "imported.json").read_text(encoding="utf-8"))
    assert "pytest_blackbox.plugin" in loaded  # the plugin was loaded: the check below means something
    return loaded


def heavy(loaded: dict[str, str]) -> list[str]:
    return [name for name in loaded if name.startswith(HEAVY)]


def test_a_run_without_blackbox_tests_imports_no_session_interception_or_provider(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch
) -> None:
    loaded = imported_by_a_run(pytester, PLAIN_TEST)
    assert heavy(loaded) == []
    assert "pytest_blackbox.trace.canonical" in loaded
    assert "orjson" not in loaded  # looked up at the first cassette written (it imports uuid, platform)


def test_the_check_sees_the_modules_a_blackbox_test_imports(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch
) -> None:
    """The same run with one blackbox test (recording, no model call) does import them."""
    loaded = heavy(imported_by_a_run(pytester, BLACKBOX_TEST, "--record-mode=once"))
    assert "pytest_blackbox.engine.session" in loaded
    assert "pytest_blackbox.interception" in loaded
    assert any(name.startswith("pytest_blackbox.providers") for name in loaded)


def test_only_the_modules_imported_before_the_plugin_registers_go_through_the_rewriting_hook(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch
) -> None:
    """pytest marks the whole package for assertion rewriting; the plugin takes it off the list when
    it registers, so what a blackbox test imports later loads as any library does."""
    loaders = imported_by_a_run(pytester, BLACKBOX_TEST, "--record-mode=once")
    rewritten = {name for name, loader in loaders.items() if loader == "AssertionRewritingHook"}
    # What the plugin's own module imports loads before it registers; older pytest versions mark
    # an editable install's package for nothing, and rewrite none of it.
    assert rewritten <= {
        "pytest_blackbox",
        "pytest_blackbox.errors",
        "pytest_blackbox.plugin",
        "pytest_blackbox.trace",
        "pytest_blackbox.trace.errors",
        "pytest_blackbox.vocabulary",
    }
    assert loaders["pytest_blackbox.engine.session"] == "SourceFileLoader"
    assert "pytest_blackbox.analysis.diff" not in loaders  # only re-recording over a cassette diffs
