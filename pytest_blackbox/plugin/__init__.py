"""The pytest plugin (entry point ``blackbox``): hooks, options, the marker and the fixture only.

The work lives in the private modules beside it, imported when a test that uses a cassette is set
up, so pytest start-up stays cheap (``tests/plugin/test_startup.py``). See docs/pytest.md.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..engine.session import Session
    from .summary import Summary
    from .testrun import TestRun

_RUN_KEY = pytest.StashKey["TestRun"]()
_SUMMARY_KEY = pytest.StashKey["Summary"]()
_RECORD_MODES = ("none", "once", "new_episodes", "all", "rewrite")


def _recording_owns_record_mode(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether pytest-recording registers ``--record-mode`` (already, or when it loads after us).

    Both plugins use the option with the same values, so it is shared; registering it twice would
    make whichever plugin loads second crash pytest at start-up.
    """
    if pluginmanager.has_plugin("recording"):
        return True
    if pluginmanager.is_blocked("recording") or os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    return find_spec("pytest_recording") is not None


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Register the options and ini keys (see the module docstring of ``settings`` for precedence)."""
    group = parser.getgroup("blackbox", "record and replay agent runs (pytest-blackbox)")
    if not _recording_owns_record_mode(pluginmanager):
        group.addoption(
            "--record-mode",
            action="store",
            default=None,
            choices=_RECORD_MODES,
            help="cassette record mode: none (default: replay only), once, new_episodes, all, rewrite. "
            "Shared with pytest-recording when it is installed.",
        )
    group.addoption(
        "--blackbox-match",
        action="store",
        default=None,
        choices=("strict", "sequence"),
        help="compare each request with the recording (strict, default) or only the order of calls",
    )
    group.addoption(
        "--blackbox-allow-record",
        action="store_true",
        default=False,
        help="allow recording (reaching the real model) even when the CI environment variable is set",
    )
    parser.addini("blackbox_record_mode", "record mode of blackbox tests when no option or marker sets it")
    parser.addini("blackbox_match", "match mode of blackbox tests when no option or marker sets it")
    parser.addini("blackbox_cassette_dir", "one cassette tree for the whole suite, relative to the rootdir")


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker and refuse bad ini values before any test runs."""
    config.addinivalue_line(
        "markers",
        "blackbox(cassette=None, match='strict', record_mode=None): record this test's model and tool "
        "calls to a Blackbox v2 cassette, or replay them offline.",
    )
    if config.getini("blackbox_record_mode") or config.getini("blackbox_match"):
        from .config import check_ini

        check_ini(config)


def _summary(config: pytest.Config) -> Summary:
    summary = config.stash.get(_SUMMARY_KEY, None)
    if summary is None:
        from .summary import Summary

        summary = config.stash[_SUMMARY_KEY] = Summary(Path(str(config.rootpath)))
    return summary


def _uses_blackbox(item: pytest.Item) -> bool:
    """A test with the marker, or one that asks for the ``blackbox`` fixture."""
    return item.get_closest_marker("blackbox") is not None or "blackbox" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Validate markers and note every collected test's cassette before ``-k``/``-m`` deselect any."""
    if not any(_uses_blackbox(item) for item in items):
        return  # nothing to validate, replay or report: import nothing
    from .config import marker_problem

    for item in items:
        problem = marker_problem(item)
        if problem is not None:
            raise pytest.UsageError(problem)
    _summary(config).add_collected(config, items, _uses_blackbox)


def _start_run(item: pytest.Item) -> TestRun:
    run = item.stash.get(_RUN_KEY, None)
    if run is None:
        from .config import resolve_settings
        from .testrun import TestRun

        run = TestRun(item, resolve_settings(item))
        item.stash[_RUN_KEY] = run
        run.start()
    return run


@pytest.fixture
def blackbox(request: pytest.FixtureRequest) -> Iterator[Session]:
    """This test's session: wrap tools with ``blackbox.tools({...})``; it records or replays the test."""
    run = _start_run(request.node)
    if run.session is None:  # refused: the test fails before its body runs; hand it an inert session
        from ..engine.options import SessionOptions
        from ..engine.session import Session

        yield Session(SessionOptions(mode="off"), exit_net=False)
        return
    yield run.session


@pytest.fixture(autouse=True)
def _blackbox_marked(request: pytest.FixtureRequest) -> None:
    """A test with the marker is intercepted even if it never asks for the fixture."""
    if request.node.get_closest_marker("blackbox") is not None:
        _start_run(request.node)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """Fail a refused test before its body, and finish (check or write) the cassette after it."""
    run = item.stash.get(_RUN_KEY, None)
    if run is None:
        return (yield)
    run.before_call()
    try:
        result = yield
    except BaseException as exc:
        run.test_failed(exc)
        raise
    run.after_call()
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Replace the SDK's traceback with the blackbox block when the session's error caused the failure."""
    report: pytest.TestReport = yield
    run = item.stash.get(_RUN_KEY, None)
    if run is None or call.when != "call" or not report.failed or call.excinfo is None:
        return report
    replaced = run.failure_report(call.excinfo)
    if replaced is not None:
        if _wants_full_traceback(item.config):
            _add_section(report, replaced)
        else:
            report.longrepr = replaced
    note = run.not_written_note()
    if note is not None:
        _add_section(report, note)
    return report


def _wants_full_traceback(config: pytest.Config) -> bool:
    return bool(config.getoption("fulltrace")) or config.getoption("tbstyle") in ("long", "native")


def _add_section(report: pytest.TestReport, text: str) -> None:
    longrepr = report.longrepr
    addsection = getattr(longrepr, "addsection", None)  # pytest's exception reprs have it
    if callable(addsection):
        addsection("blackbox", text)
    else:
        report.longrepr = f"{longrepr}\n\n{text}" if longrepr else text


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Count the run; a test whose set-up failed after the session started never writes either."""
    run = item.stash.get(_RUN_KEY, None)
    if run is None:
        return
    if run.session is not None and run.outcome is None:
        run.test_failed(None)
    if run.session is not None:
        run.session.stop()  # a finished session refuses late calls until released here
    run.restore_env()
    _summary(item.config).add_run(run)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Send a worker's summary to the xdist controller; fold cassette failures into the exit status."""
    config = session.config
    summary = config.stash.get(_SUMMARY_KEY, None)
    if summary is None:
        return
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["blackbox"] = summary.to_json()
    elif summary.failed() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: merge a worker's summary."""
    data = getattr(node, "workeroutput", {}).get("blackbox")
    if data:
        _summary(node.config).merge_json(data)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    summary = config.stash.get(_SUMMARY_KEY, None)
    if summary is not None and not hasattr(config, "workerinput"):
        summary.write(terminalreporter, verbose=config.getoption("verbose", 0) > 0)
