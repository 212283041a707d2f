"""Repository-wide test configuration."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_blackbox.fake_provider import FakeProvider


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A running scripted fake Anthropic/OpenAI server on 127.0.0.1; it sets no environment variables."""
    with FakeProvider() as provider:
        yield provider


@pytest.fixture(autouse=True)
def _no_interceptor_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that leaves an interceptor running would answer the next tests' HTTP calls: name it."""
    from pytest_blackbox.interception import InterceptorMocker
    from pytest_blackbox.session import stop_finished_sessions

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
