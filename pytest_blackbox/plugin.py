"""pytest hooks, options and fixtures only; the work is imported lazily from private modules.

Nothing heavy (the session, respx, httpx, the providers) is imported when pytest starts: only when a
test that uses a cassette is set up.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .reporting import Summary
    from .session import Session
    from .testrun import TestRun

_RUN_KEY = pytest.StashKey["TestRun"]()
_SUMMARY_KEY = pytest.StashKey["Summary"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("blackbox", "record and replay agent runs (pytest-blackbox)")
    try:
        group.addoption(
            "--record-mode",
            action="store",
            default=None,
            choices=("none", "once", "new_episodes", "all", "rewrite"),
            help="cassette record mode (default: none, replay only). Shared with pytest-recording.",
        )
    except ValueError:  # pytest-recording registered the same option: share it
        pass
    group.addoption(
        "--blackbox-match",
        action="store",
        default=None,
        choices=("strict", "sequence"),
        help="compare each request with the recording (strict, default) or only the sequence of calls",
    )
    group.addoption(
        "--blackbox-allow-record",
        action="store_true",
        default=False,
        help="allow recording (reaching the network) even when the CI environment variable is set",
    )
    parser.addini("blackbox_record_mode", "default record mode for blackbox tests (none)", default="")
    parser.addini("blackbox_match", "default match mode for blackbox tests (strict)", default="")
    parser.addini("blackbox_cassette_dir", "cassette directory, relative to the rootdir", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "blackbox(cassette=None, match='strict', record_mode=None): record this test's model and tool "
        "calls to a Blackbox v2 cassette, or replay them offline.",
    )


def _summary(config: pytest.Config) -> Summary:
    summary = config.stash.get(_SUMMARY_KEY, None)
    if summary is None:
        from .reporting import Summary

        summary = config.stash[_SUMMARY_KEY] = Summary()
    return summary


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from .settings import marker_problem

    for item in items:
        if item.get_closest_marker("blackbox") is not None:
            problem = marker_problem(item)
            if problem is not None:
                raise pytest.UsageError(f"{item.nodeid}: {problem}")
    _summary(config).add_collected(items)


def _start_run(item: pytest.Item) -> TestRun:
    run = item.stash.get(_RUN_KEY, None)
    if run is None:
        from .settings import resolve_settings
        from .testrun import TestRun

        run = TestRun(item, resolve_settings(item))
        item.stash[_RUN_KEY] = run
        run.start()
    return run


@pytest.fixture
def blackbox(request: pytest.FixtureRequest) -> Iterator[Session]:
    """This test's session: wrap tools with ``blackbox.tools({...})``; it records or replays the test."""
    run = _start_run(request.node)
    if run.session is None:
        from .options import SessionOptions
        from .session import Session

        yield Session(SessionOptions(mode="off"), exit_net=False)  # the test fails before its body runs
        return
    yield run.session


@pytest.fixture(autouse=True)
def _blackbox_marked(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test with the marker is intercepted even if it never asks for the fixture."""
    if request.node.get_closest_marker("blackbox") is not None:
        _start_run(request.node)
    yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    run = item.stash.get(_RUN_KEY, None)
    if run is None:
        return (yield)
    run.before_call()
    try:
        result = yield
    except BaseException:
        run.test_failed()
        raise
    run.after_call()
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report: pytest.TestReport = yield
    run = item.stash.get(_RUN_KEY, None)
    if run is not None and call.when == "call" and report.failed:
        section = run.error_section()
        if section is not None and section not in str(report.longrepr):
            report.sections.append(("blackbox", section))
    return report


def pytest_runtest_teardown(item: pytest.Item) -> None:
    run = item.stash.get(_RUN_KEY, None)
    if run is None:
        return
    if run.session is not None and run.outcome is None:
        run.test_failed()  # set-up or another fixture failed before the body ran
    run.restore_env()
    _summary(item.config).add_run(run)


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    summary = config.stash.get(_SUMMARY_KEY, None)
    workeroutput = getattr(config, "workeroutput", None)
    if summary is not None and workeroutput is not None:
        workeroutput["blackbox"] = summary.to_json()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    data = getattr(node, "workeroutput", {}).get("blackbox")
    if data:
        _summary(node.config).merge_json(data)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    summary = config.stash.get(_SUMMARY_KEY, None)
    if summary is not None and not hasattr(config, "workerinput"):
        summary.write(terminalreporter, verbose=config.getoption("verbose", 0) > 0)
