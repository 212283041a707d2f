"""Fixtures of the security tests: a clean environment and a socket guard."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_blackbox.engine import exithooks
from pytest_blackbox.engine.launched import LAUNCHED_VAR
from pytest_blackbox.engine.options import SESSION_ENV_VARS

#: The provider key every test starts with: not a secret worth planting, but one the SDKs accept.
TEST_KEY = "security-suite-test-key"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Harmless provider keys, no ``BLACKBOX_*`` leftovers, no process-wide exit hooks in the test process.

    The keys are set because the SDK constructors refuse to start without one; the secrets tests
    replace them with the keys they plant.
    """
    for name in (*SESSION_ENV_VARS, LAUNCHED_VAR, "CI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setattr(exithooks, "_install", lambda: None)
    return monkeypatch


# -- the socket guard --------------------------------------------------------------------------


class NetworkUsed(AssertionError):
    """A run that must be offline tried to reach the network."""


@dataclass
class NetworkGuard:
    """Every way a Python program opens a connection or resolves a name, refused and counted."""

    monkeypatch: pytest.MonkeyPatch
    attempts: list[str] = field(default_factory=list)

    def _refuse(self, kind: str) -> Callable[..., Any]:
        def guard(*args: Any, **kwargs: Any) -> Any:
            self.attempts.append(kind)
            raise NetworkUsed(f"an offline run tried the network: {kind}")

        return guard

    def block(self) -> NetworkGuard:
        patch = self.monkeypatch.setattr
        patch(socket.socket, "connect", self._refuse("socket.connect"))
        patch(socket.socket, "connect_ex", self._refuse("socket.connect_ex"))
        patch(socket, "create_connection", self._refuse("socket.create_connection"))
        patch(socket, "getaddrinfo", self._refuse("socket.getaddrinfo"))
        loop = asyncio.base_events.BaseEventLoop
        patch(loop, "create_connection", self._refuse("loop.create_connection"))
        patch(loop, "sock_connect", self._refuse("loop.sock_connect"))
        patch(loop, "getaddrinfo", self._refuse("loop.getaddrinfo"))
        return self


@pytest.fixture
def network_guard(monkeypatch: pytest.MonkeyPatch) -> NetworkGuard:
    """Call ``.block()`` once the run under test must be offline; ``.attempts`` lists what was tried."""
    return NetworkGuard(monkeypatch)
