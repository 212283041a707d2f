"""The pytest plugin (entry point ``blackbox``): hooks, options, the marker and the fixtures only.

The work lives in the private modules beside it, imported when a test that uses a cassette is set
up, so pytest start-up stays cheap (``tests/plugin/test_startup.py``). See docs/pytest.md.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..vocabulary import MATCHES, MEDIA_MODES, RECORD_MODES

if TYPE_CHECKING:
    from .config import Found
    from .summary import Summary
    from .testrun import CassetteSession, TestRun
    from .unmarked import UnmarkedGuard

_RUN_KEY = pytest.StashKey["TestRun"]()
_SUMMARY_KEY = pytest.StashKey["Summary"]()
#: Set on an item while its body runs: a session obtained then (``request.getfixturevalue``,
#: a doctest's ``getfixture``) must still fail the test before it reaches a model.
_IN_CALL_KEY = pytest.StashKey[bool]()
_UNMARKED_KEY: pytest.StashKey[UnmarkedGuard] = pytest.StashKey()
#: The key variables this run gave the offline placeholder (restored at unconfigure).
_PLACEHOLDERS_KEY = pytest.StashKey[list[str]]()
#: Library settings this run set (taken back at unconfigure).
_SETTINGS_KEY = pytest.StashKey[list[str]]()
#: What libraries would otherwise fetch over the network on their own, set for the run unless the user
#: set it: LiteLLM fetches its model price list when it is imported, which a replay refuses (and a
#: recording would warn about); with this it reads the copy it ships (docs/providers.md#litellm).
_LIBRARY_SETTINGS = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
#: Derived cassette path → (the test it belongs to, its node id): two tests never share one unasked.
_CLAIMS_KEY = pytest.StashKey[dict[str, tuple[str, str]]]()
#: What the terminal summary says about the ``--blackbox-report`` written at session end.
_REPORT_NOTE_KEY = pytest.StashKey[str]()
#: What collection found before ``--lf`` or a ``file::test`` argument narrowed it (cassette names).
_FOUND_KEY: pytest.StashKey[Found] = pytest.StashKey()


def _group(parser: pytest.Parser) -> pytest.OptionGroup:
    from .config import PRECEDENCE

    return parser.getgroup(
        "blackbox", f"record and replay agent runs (pytest-blackbox); settings: {PRECEDENCE}"
    )


def _leave_asserts_alone(pluginmanager: pytest.PytestPluginManager) -> None:
    """Take the package off pytest's list of modules whose ``assert`` statements it rewrites.

    pytest marks every module of a plugin's distribution for assertion rewriting, and loads each
    marked module through its own import hook; for the hundred modules a replay imports that hook
    costs more than the imports themselves (about a third of a replayed suite's first test). The
    package has no assertion a user reads (its few ``assert`` statements only narrow types), so it
    loads as any library does. The hook keeps its list in private attributes (the same in pytest 7.4
    to 9): when they are not there, nothing changes but the speed.
    """
    hook = pluginmanager.rewrite_hook
    marked = getattr(hook, "_must_rewrite", None)
    cache = getattr(hook, "_marked_for_rewrite_cache", None)
    if not isinstance(marked, set) or not isinstance(cache, dict):
        return
    package = __name__.partition(".")[0]
    ours = {name for name in marked if name == package or name.startswith(f"{package}.")}
    if ours:
        marked.difference_update(ours)
        cache.clear()


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Register the options and ini keys (docs/pytest.md#configuration has the precedence)."""
    _leave_asserts_alone(pluginmanager)
    group = _group(parser)
    if _conftests_loaded(pluginmanager):  # loaded by a conftest's pytest_plugins: no later chance
        _add_record_mode(parser, pluginmanager)
    group.addoption(
        "--blackbox-match",
        action="store",
        default=None,
        choices=MATCHES,
        help="compare each request with the recording (strict, default) or only the order of calls",
    )
    group.addoption(
        "--blackbox-media",
        action="store",
        default=None,
        choices=MEDIA_MODES,
        help="what a recording keeps of images, documents, audio and files: their digest (default) or "
        "their bytes too (inline)",
    )
    group.addoption(
        "--blackbox-allow-record",
        action="store_true",
        default=False,
        help="allow recording (reaching the real model) even when the CI environment variable is set",
    )
    group.addoption(
        "--blackbox-disable",
        action="store_true",
        default=False,
        help="live mode: blackbox tests call the real model and run their tools, no cassette read or written",
    )
    group.addoption(
        "--blackbox-block-network",
        action="store_true",
        default=None,
        help="refuse the model calls and the network beyond loopback of tests that are not blackbox tests "
        "(ini: blackbox_block_network)",
    )
    group.addoption(
        "--blackbox-allowed-hosts",
        action="append",
        default=None,
        metavar="HOSTS",
        help="comma-separated hosts a replay may connect to besides loopback, added to every test's own",
    )
    group.addoption(
        "--blackbox-drop-fields",
        action="append",
        default=None,
        metavar="FIELDS",
        help="comma-separated request or response fields Blackbox does not know (request.foo, "
        "choices[].message.foo) that a run may leave out instead of refusing them, added to every test's own",
    )
    group.addoption(
        "--blackbox-report",
        action="store",
        default=None,
        metavar="PATH",
        help="write a markdown report of the cassettes this run re-recorded to PATH; 'github' appends it "
        "to $GITHUB_STEP_SUMMARY (ini: blackbox_report)",
    )
    parser.addini(
        "blackbox_report",
        "where --blackbox-report writes when not given: a path relative to the rootdir, or github",
    )
    parser.addini(
        "blackbox_record_mode",
        "record mode of blackbox tests when no option, marker or blackbox_config sets it",
    )
    parser.addini(
        "blackbox_match", "match mode of blackbox tests when no option, marker or blackbox_config sets it"
    )
    parser.addini(
        "blackbox_media", "media setting of blackbox tests when no option, marker or blackbox_config sets it"
    )
    parser.addini("blackbox_cassette_dir", "one cassette tree for the whole suite, relative to the rootdir")
    parser.addini(
        "blackbox_allowed_hosts",
        "hosts a replay may connect to besides loopback (one per line or comma-separated)",
        type="linelist",
        default=[],
    )
    parser.addini(
        "blackbox_drop_fields",
        "request and response fields Blackbox does not know that a run may leave out (one per line or "
        "comma-separated)",
        type="linelist",
        default=[],
    )
    parser.addini(
        "blackbox_block_network",
        "refuse the model calls, and the network beyond loopback, of tests that are not blackbox tests",
        type="bool",
        default=False,
    )


def _conftests_loaded(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether conftest files are already loading, so the plugin itself came from a ``pytest_plugins``."""
    return any(
        os.path.basename(str(getattr(plugin, "__file__", "") or "")) == "conftest.py"
        for plugin in pluginmanager.get_plugins()
    )


def _recording_registered(pluginmanager: pytest.PytestPluginManager) -> bool:
    if pluginmanager.has_plugin("recording"):
        return True
    module = sys.modules.get("pytest_recording.plugin")
    return module is not None and pluginmanager.is_registered(module)


def _add_record_mode(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """``--record-mode``, unless pytest-recording registered it: both plugins then read the one option.

    It is added once every plugin named with ``-p``, by ``PYTEST_PLUGINS`` or by an entry point is
    loaded, so the two plugins load in either order (registering it twice would stop pytest).
    """

    group = _group(parser)
    if _recording_registered(pluginmanager) or any("--record-mode" in opt.names() for opt in group.options):
        return
    group.addoption(
        "--record-mode",
        action="store",
        default=None,
        choices=RECORD_MODES,
        help="cassette record mode: none (default: replay only), once, new_episodes, all, rewrite. "
        "Shared with pytest-recording when it is installed.",
    )


def _set_offline_keys(config: pytest.Config, live: bool) -> None:
    """Give every missing provider key variable the offline placeholder, and libraries the settings
    that keep them off the network (:data:`_LIBRARY_SETTINGS`), for the whole run.

    Clients built before a test runs (at import, in a module or session fixture) read their key when
    they are built; a replay never sends it. Live mode calls the real provider, so it gets none.
    """
    if live or _PLACEHOLDERS_KEY in config.stash:
        return
    from ..engine import set_placeholder_keys

    config.stash[_PLACEHOLDERS_KEY] = set_placeholder_keys(os.environ)
    config.stash[_SETTINGS_KEY] = [name for name in _LIBRARY_SETTINGS if name not in os.environ]
    for name in config.stash[_SETTINGS_KEY]:
        os.environ[name] = _LIBRARY_SETTINGS[name]


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser
) -> Generator[None, None, None]:
    """Set the offline keys, and watch for botocore, before any conftest (or test module) is imported;
    then ``--record-mode``."""
    disabled = bool(getattr(early_config.known_args_namespace, "blackbox_disable", False))
    _set_offline_keys(early_config, disabled)
    if not disabled:
        from .botocore_watch import watch_botocore

        watch_botocore()
    try:
        return (yield)
    finally:
        _add_record_mode(parser, early_config.pluginmanager)


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers and refuse bad ini and option values before any test runs."""
    from .config import MARKER_USAGE, PRECEDENCE, check_ini

    config.addinivalue_line(
        "markers",
        f"{MARKER_USAGE.removeprefix('@pytest.mark.')}: record this test's model and tool calls to a "
        f"Blackbox v2 cassette, or replay them offline. Settings: {PRECEDENCE}.",
    )
    check_ini(config)
    _set_offline_keys(config, bool(config.getoption("blackbox_disable", False)))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Take the offline placeholder and the library settings back out of the environment."""
    from ..engine import is_placeholder

    for name in config.stash.get(_PLACEHOLDERS_KEY, []):
        if is_placeholder(os.environ.get(name)):
            del os.environ[name]
    for name in config.stash.get(_SETTINGS_KEY, []):
        if os.environ.get(name) == _LIBRARY_SETTINGS[name]:
            del os.environ[name]


def _summary(config: pytest.Config) -> Summary:
    summary = config.stash.get(_SUMMARY_KEY, None)
    if summary is None:
        from .summary import Summary

        summary = config.stash[_SUMMARY_KEY] = Summary(Path(str(config.rootpath)))
    return summary


def _uses_blackbox(item: pytest.Item) -> bool:
    """A test with the marker, or one that asks for the ``blackbox`` fixture."""
    return item.get_closest_marker("blackbox") is not None or "blackbox" in getattr(item, "fixturenames", ())


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Note what every collector found, innermost so before ``--lf`` filters it: a selection by node
    id keeps the rest of the module from the run, not from the test's cassette name."""
    report = yield
    found = collector.config.stash.get(_FOUND_KEY, None)
    if found is None:
        from .config import Found

        found = collector.config.stash[_FOUND_KEY] = Found()
    found.add(collector, report.result)
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Validate markers and note every collected test's cassette before ``-k``/``-m`` deselect any."""
    if not any(_uses_blackbox(item) for item in items):
        return  # nothing to validate, replay or report: import nothing
    from .config import marker_problem, note_collected
    from .summary import partial_selection

    for item in items:
        problem = marker_problem(item)
        if problem is not None:
            raise pytest.UsageError(problem)
    note_collected(session, items, config.stash.get(_FOUND_KEY, None))
    summary = _summary(config)
    summary.add_collected(items, _uses_blackbox)
    # a module that failed to import has tests nobody saw (``--continue-on-collection-errors``)
    summary.partial = summary.partial or partial_selection(config) or session.testsfailed > 0


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Deselected tests do not run: their cassettes cannot be told unused."""
    if items:
        _summary(items[0].config).partial = True


def _start_run(request: pytest.FixtureRequest) -> TestRun:
    """This attempt's cassette run, started on first use (by the marker or the fixture)."""
    item = request.node
    run: TestRun | None = item.stash.get(_RUN_KEY, None)
    if run is not None:
        return run
    from .config import fixture_problem, resolve_settings
    from .testrun import TestRun

    config_value = request.getfixturevalue("blackbox_config")
    dir_value = request.getfixturevalue("blackbox_cassette_dir")
    problem = fixture_problem(item, config_value, dir_value)
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    settings = resolve_settings(item, config_value, dir_value)
    run = item.stash[_RUN_KEY] = TestRun(item, settings)
    claims = item.config.stash.setdefault(_CLAIMS_KEY, {})
    owner = claims.setdefault(str(settings.cassette), (settings.identity, item.nodeid))
    shared = owner[0] != settings.identity and not settings.explicit_cassette
    run.start(owner[1] if shared else None)
    if item.stash.get(_IN_CALL_KEY, False):
        run.before_call()  # obtained inside the test body: fail now, as the call hook would have
    return run


@pytest.fixture
def blackbox_config() -> dict[str, Any]:
    """This test's cassette settings: override it in a ``conftest.py``, at any scope (docs/pytest.md)."""
    return {}


@pytest.fixture
def blackbox_cassette_dir() -> str | os.PathLike[str] | None:
    """The folder of this test's cassette (``None``: the default); override it like ``blackbox_config``."""
    return None


@pytest.fixture
def blackbox(request: pytest.FixtureRequest) -> Iterator[CassetteSession]:
    """This test's session: wrap tools with ``blackbox.tools({...})``; it records or replays the test."""
    run = _start_run(request)
    if run.session is None:  # refused: the test fails before its body runs; hand it an inert session
        from ..engine import SessionOptions
        from .testrun import CassetteSession

        yield CassetteSession(
            SessionOptions(mode="off"), cassette_path=run.cassette, record_mode=run.settings.record_mode
        )
        return
    yield run.session


@pytest.fixture(autouse=True)
def _blackbox_marked(request: pytest.FixtureRequest) -> None:
    """A test with the marker is intercepted even if it never asks for the fixture."""
    if request.node.get_closest_marker("blackbox") is not None:
        _start_run(request)


def _block_network(config: pytest.Config) -> bool:
    option = config.getoption("blackbox_block_network", None)
    return bool(config.getini("blackbox_block_network") if option is None else option)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    """With ``--blackbox-block-network``, a test that is not a blackbox test gets no model call through,
    and reaches nothing beyond loopback and the allowed hosts."""
    if not _block_network(item.config) or _uses_blackbox(item):
        return (yield)
    from .config import config_hosts
    from .unmarked import UnmarkedGuard

    guard = item.stash[_UNMARKED_KEY] = UnmarkedGuard(item, config_hosts(item.config)).start()
    try:
        return (yield)
    finally:
        guard.stop()
        if guard.refusal is not None:
            _summary(item.config).add_outcome(item, "refused")
        del item.stash[_UNMARKED_KEY]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """Fail a refused test before its body, and finish (check or write) the cassette after it."""
    run = item.stash.get(_RUN_KEY, None)
    if run is not None:
        run.before_call()
    item.stash[_IN_CALL_KEY] = True
    try:
        result = yield
    except BaseException as exc:
        run = item.stash.get(_RUN_KEY, None)
        if run is not None:
            run.test_failed(exc)
        raise
    finally:
        item.stash[_IN_CALL_KEY] = False
    run = item.stash.get(_RUN_KEY, None)  # the body may have started it (``getfixturevalue``)
    if run is not None:
        run.after_call()
    unmarked = item.stash.get(_UNMARKED_KEY, None)
    if unmarked is not None and unmarked.refusal is not None:
        pytest.fail(unmarked.refusal, pytrace=False)  # the test swallowed the SDK's error
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Replace the SDK's traceback with the blackbox block when the plugin's refusal caused the failure."""
    report: pytest.TestReport = yield
    if call.when != "call" or not report.failed or call.excinfo is None:
        return report
    run = item.stash.get(_RUN_KEY, None)
    unmarked = item.stash.get(_UNMARKED_KEY, None)
    from .report import block_repr, one_line_crash, short_report

    replaced = None
    if run is not None:
        replaced = run.failure_report(call.excinfo)
        raised_here = run.reported  # the plugin's own pytest.fail, before or after the body
    else:
        refusal = unmarked.refusal if unmarked is not None else None
        raised_here = refusal is not None and call.excinfo.errisinstance(pytest.fail.Exception)
        if refusal is not None and not raised_here:  # the SDK's error, or the test's own
            replaced = short_report(item, refusal, call.excinfo)
    if replaced is not None:
        if _wants_full_traceback(item.config):
            _add_section(report, replaced)
        else:
            report.longrepr = block_repr(item, replaced)
    elif raised_here:
        one_line_crash(report)
    note = run.not_written_note() if run is not None and replaced is None else None  # or the block says it
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
    """Count the attempt and release it; a rerun of the test starts a fresh one."""
    run = item.stash.get(_RUN_KEY, None)
    if run is None:
        return
    del item.stash[_RUN_KEY]
    if run.session is not None and run.outcome is None:
        run.test_failed(None)
    run.release()
    _summary(item.config).add_run(run)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Send a worker's summary to the xdist controller; fold cassette failures into the exit status."""
    config = session.config
    summary = config.stash.get(_SUMMARY_KEY, None)
    if summary is None and _wants_report(config) and not hasattr(config, "workerinput"):
        summary = _summary(config)  # no blackbox test ran: the report still says so
    if summary is None:
        return
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["blackbox"] = summary.to_json()
        return
    _write_review_report(config, summary)
    if summary.failed() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _wants_report(config: pytest.Config) -> bool:
    """``--blackbox-report`` or its ini key is set (``review.report_target`` says where)."""
    return bool(config.getoption("blackbox_report", None) or config.getini("blackbox_report"))


def _write_review_report(config: pytest.Config, summary: Summary) -> None:
    """The controller (or the only process) writes one report, for every worker's tests."""
    if not _wants_report(config):
        return  # nothing to import
    from .review import render_report, report_target, write_report

    target = report_target(config)
    if target is not None:
        config.stash[_REPORT_NOTE_KEY] = write_report(target, render_report(summary, summary.current_line()))


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
    note = config.stash.get(_REPORT_NOTE_KEY, None)
    if note is not None:
        terminalreporter.write_line(note)
