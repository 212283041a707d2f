"""Repository-wide test configuration: what holds for the test suite (tests/) and the example (examples/).

The suite runs on every core by default (README command 2, in minutes): see ``pytest_cmdline_main``.
Every test runs inside the same process as the next, and an interceptor left running would answer
the next test's HTTP calls; the guard below names the test that leaked one instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

#: The folder whose tests run on every core when nothing else is asked for.
SUITE = Path(__file__).resolve().parent / "tests"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Run the suite under pytest-xdist, one worker per core, unless the command line chose otherwise.

    Not in ``addopts``: ``-n`` there would break ``-p no:xdist``. ``-n N`` (``-n 0`` for one process),
    ``-p no:xdist``, ``--pdb``/``--trace``, node ids (``file.py::test``) and paths outside ``tests/``
    (``pytest examples``) keep pytest's own default. Work stealing keeps the two workers busy to the
    end, whatever the order of the slow tests (the inner pytest runs with workers of their own).
    """
    option = config.option
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    if option.numprocesses is not None or option.usepdb or getattr(option, "trace", False):
        return
    paths = [arg for arg in config.args if not arg.startswith("-")] or [str(SUITE)]
    if any("::" in arg or not Path(arg).resolve().is_relative_to(SUITE) for arg in paths):
        return
    option.numprocesses = "auto"
    if option.dist == "no":
        option.dist = "worksteal"


@pytest.fixture(autouse=True)
def _no_interceptor_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that leaves an interceptor running would answer the next tests' HTTP calls: name it."""
    from pytest_blackbox.engine.session import stop_finished_sessions
    from pytest_blackbox.interception import InterceptorMocker

    before = len(InterceptorMocker.routers)
    yield
    stop_finished_sessions()  # finished sessions keep refusing late calls until released
    leaked = len(InterceptorMocker.routers) - before
    if leaked > 0:
        for router in list(InterceptorMocker.routers[:leaked]):
            InterceptorMocker.unregister(router)
        if not InterceptorMocker.routers:
            InterceptorMocker.stop()
        pytest.fail(
            f"{request.node.nodeid} left {leaked} interceptor(s) running; stop every session it starts"
        )
