"""Fixtures every test folder shares: the fake provider, a clean environment, the network guard, the vectors.

Every test also gets one check for free: it fails if it leaves an interceptor running, because that
interceptor would answer the next tests' HTTP calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox import Session, blackbox
from pytest_blackbox.engine import KEY_VARIABLES, exithooks
from pytest_blackbox.engine.launched import LAUNCHED_VAR
from pytest_blackbox.engine.options import SESSION_ENV_VARS
from pytest_blackbox.testing import FakeProvider
from tests import TEST_KEYS, VECTORS, vector_json

#: Variables no test inherits from the shell that runs the suite: a CI flag refuses recording, the
#: launcher's variables configure every session, and keys, base URLs and pytest options belong to
#: the test that sets them.
INHERITED_ENV = (
    "CI",
    "BUILD_NUMBER",
    *SESSION_ENV_VARS,
    LAUNCHED_VAR,
    *KEY_VARIABLES,
    "AZURE_OPENAI_ENDPOINT",
    "OPENAI_API_VERSION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "PYTEST_ADDOPTS",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
)


def _hypothesis_without_deadline() -> None:
    """Hypothesis' default profile without its wall-clock deadline: a property test is about the
    property, and a deadline measures the machine's load (the fuzz suite guards CPU time per call
    instead). The version environments of .ci/compat run the plugin tests without Hypothesis."""
    try:
        from hypothesis import settings
    except ImportError:
        return
    settings.register_profile("suite", deadline=None)
    if settings.get_current_profile_name() == "default":
        settings.load_profile("suite")


_hypothesis_without_deadline()


def _load_http_cores() -> None:
    """Import the httpcore packages before any in-process pytester run: such a run removes the modules
    it imported when it ends, and httpx builds its map of httpcore's exceptions once, at its first
    request. A core first imported inside an inner run would come back as new classes the map does
    not know, and a dropped connection would escape as httpcore's error instead of httpx's."""
    for name in ("httpcore", "httpcore2"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


_load_http_cores()


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    return VECTORS


@pytest.fixture(scope="session")
def expectations() -> dict[str, Any]:
    """``expectations.json``: the frozen expected values of every vector."""
    loaded: dict[str, Any] = vector_json("expectations.json")
    return loaded


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A running scripted fake Anthropic/OpenAI server on 127.0.0.1; it sets no environment variables."""
    with FakeProvider() as provider:
        yield provider


@pytest.fixture
def sessions() -> Iterator[Callable[..., Session]]:
    """``blackbox(**options)``, stopped at teardown: a failed test leaves no interception behind."""
    opened: list[Session] = []

    def start(**options: Any) -> Session:
        session = blackbox(**options)
        opened.append(session)
        return session

    yield start
    for session in opened:
        session.stop()


# -- the environment ---------------------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """None of :data:`INHERITED_ENV` set, and no process-wide exit hooks in the test process.

    The exit safety net is proven in subprocesses (``tests/engine/test_exithooks.py``); in the test
    process it would install a SIGTERM handler and an atexit hook into the pytest worker itself.
    """
    for name in INHERITED_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(exithooks, "_install", lambda: None)
    return monkeypatch


@pytest.fixture
def pytester(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's ``pytester``, started from :func:`clean_env`: an inner run inherits none of
    :data:`INHERITED_ENV`, whoever requests it (CI sets ``CI=1``, which refuses recording)."""
    return pytester


@pytest.fixture
def provider_keys(clean_env: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A clean environment holding the suite's provider keys (the SDK clients refuse to start without one)."""
    for name, key in TEST_KEYS.items():
        clean_env.setenv(name, key)
    return clean_env


# -- the network guard -------------------------------------------------------------------------


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

    def block(self) -> list[str]:
        """Refuse from now on; returns :attr:`attempts`, the list each refused attempt is added to."""
        patch = self.monkeypatch.setattr
        patch(socket.socket, "connect", self._refuse("socket.connect"))
        patch(socket.socket, "connect_ex", self._refuse("socket.connect_ex"))
        patch(socket, "create_connection", self._refuse("socket.create_connection"))
        patch(socket, "getaddrinfo", self._refuse("socket.getaddrinfo"))
        loop = asyncio.base_events.BaseEventLoop
        patch(loop, "create_connection", self._refuse("loop.create_connection"))
        patch(loop, "sock_connect", self._refuse("loop.sock_connect"))
        patch(loop, "getaddrinfo", self._refuse("loop.getaddrinfo"))
        return self.attempts


@pytest.fixture
def network_guard(monkeypatch: pytest.MonkeyPatch) -> NetworkGuard:
    """Call ``.block()`` once the run under test must be offline; ``.attempts`` lists what was tried."""
    return NetworkGuard(monkeypatch)


# -- what the CLI shows ------------------------------------------------------------------------


def cli_outputs(cassette: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What ``verify``, ``inspect`` and ``view`` show of a cassette, then the page ``view`` wrote beside it:
    every place a check that nothing leaks must look."""
    from pytest_blackbox.cli import main  # the CLI's imports only for the tests that read its output

    page = cassette.with_suffix(".html")
    shown = []
    for argv in (
        ["verify", str(cassette)],
        ["inspect", str(cassette)],
        ["view", str(cassette), "-o", str(page)],
    ):
        main(argv)
        captured = capsys.readouterr()
        shown.append(captured.out + captured.err)
    return [*shown, page.read_text(encoding="utf-8")]
