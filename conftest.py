"""Repository-wide test configuration."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_blackbox.testing.fake_provider import FakeProvider


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A running scripted fake Anthropic/OpenAI server on 127.0.0.1; it sets no environment variables."""
    with FakeProvider() as provider:
        yield provider


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


class NetworkUsed(AssertionError):
    """A replay tried to open a connection."""


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """Call it to make every connection attempt fail the test; it returns the attempts seen."""
    attempts: list[str] = []

    def refuse(kind: str) -> Callable[..., Any]:
        def guard(*args: Any, **kwargs: Any) -> Any:
            attempts.append(f"{kind}{args[1:]!r}")
            raise NetworkUsed(f"a replay opened a connection: {kind}{args[1:]!r}")

        return guard

    def block() -> list[str]:
        monkeypatch.setattr(socket.socket, "connect", refuse("socket.connect"))
        monkeypatch.setattr(socket.socket, "connect_ex", refuse("socket.connect_ex"))
        loop = asyncio.base_events.BaseEventLoop
        monkeypatch.setattr(loop, "create_connection", refuse("loop.create_connection"))
        monkeypatch.setattr(loop, "sock_connect", refuse("loop.sock_connect"))
        return attempts

    return block
