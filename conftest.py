"""Repository-wide test configuration: what holds for the test suite (tests/) and the example (examples/).

Every test runs inside the same process as the next, and an interceptor left running would answer
the next test's HTTP calls; this guard names the test that leaked one instead.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


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
