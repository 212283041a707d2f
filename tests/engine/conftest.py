"""Shared fixtures for the engine tests: the suite's provider keys, the four SDK flavors, a recording,
and the record-once and offline-replay helpers of the tests that run one agent against the fake."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

from pytest_blackbox import blackbox
from pytest_blackbox.engine.keys import OFFLINE_PLACEHOLDER_KEY
from pytest_blackbox.engine.session import Session
from pytest_blackbox.errors import ReplayDivergenceError
from pytest_blackbox.testing import FakeProvider
from tests.agents.travel import Run, record
from tests.conftest import NetworkGuard

FLAVORS = [("anthropic", False), ("anthropic", True), ("openai", False), ("openai", True)]
FLAVOR_IDS = ["anthropic-sync", "anthropic-async", "openai-sync", "openai-async"]


@pytest.fixture(autouse=True)
def _keys(provider_keys: pytest.MonkeyPatch) -> None:
    """Every engine test runs in a clean environment with the suite's provider keys."""


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, network_guard: NetworkGuard) -> Callable[[], list[str]]:
    """For a replay: only the placeholder key (what the plugin sets when none is) and no connections."""

    def go_offline() -> list[str]:
        for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
            monkeypatch.setenv(name, OFFLINE_PLACEHOLDER_KEY)
        return network_guard.block()

    return go_offline


@pytest.fixture(params=FLAVORS, ids=FLAVOR_IDS)
def flavor(request: pytest.FixtureRequest) -> tuple[str, bool]:
    """(sdk, is_async): every agent test runs with both SDKs, sync and async."""
    result: tuple[str, bool] = request.param
    return result


@pytest.fixture
def recorded(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path
) -> Iterator[tuple[Path, Run, str]]:
    """The default conversation recorded with this flavor: (cassette, run, the fake's base URL)."""
    path = tmp_path / "run.json"
    run = record(fake_provider, flavor, path)
    yield path, run, fake_provider.base_url


T = TypeVar("T")


class RecordOnce(Protocol):
    def __call__(
        self, name: str, queue: Callable[[FakeProvider], object], run: Callable[[FakeProvider, Session], T]
    ) -> tuple[Path, T]: ...


class DivergesOffline(Protocol):
    def __call__(
        self,
        ask: Callable[[str], object],
        diverging: Callable[[str], object],
        refused: type[Exception],
        match: str,
        *,
        result: str = "done",
    ) -> ReplayDivergenceError: ...


class ReplayDiverges(Protocol):
    def __call__(
        self, path: Path, run: Callable[[FakeProvider, Session], object], refused: type[Exception]
    ) -> ReplayDivergenceError: ...


class ReplayOffline(Protocol):
    def __call__(self, path: Path, run: Callable[[FakeProvider, Session], T]) -> T: ...


def record_and_replay(
    fake: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    ask: Callable[[str], Any],
    replay: Callable[[str], Any] | None = None,
) -> tuple[Any, Any, Path]:
    """What the SDK handed over while recording ``ask(root)`` against the fake and on the replay with
    the fake stopped and the network blocked (``replay`` the agent then, ``ask`` by default), and the
    cassette; checks nothing tried the network."""
    path = tmp_path / "run.json"
    session = blackbox(mode="record", out=path)
    live = ask(fake.base_url)
    session.finish(result="done")
    root = fake.base_url
    fake.stop()
    attempts = offline()
    session = blackbox(mode="replay", cassette=path)
    replayed = (replay or ask)(root)
    session.finish(result="done")
    assert attempts == []
    return live, replayed, path


@pytest.fixture
def record_once(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> RecordOnce:
    """``record_once(name, queue, run)``: a fresh fake provider with ``queue`` scripting its answers,
    ``run(fake, session)`` recorded once into ``tmp_path / name``: (cassette, what ``run`` returned)."""

    def record(
        name: str, queue: Callable[[FakeProvider], object], run: Callable[[FakeProvider, Session], Any]
    ) -> Any:
        path = tmp_path / name
        with FakeProvider() as fake:
            queue(fake)
            with blackbox(mode="record", out=path) as session:
                live = run(fake, session)
                session.finish(result="done")
        return path, live

    return record


@pytest.fixture
def replay_offline(
    fake_provider: FakeProvider,
    sessions: Callable[..., Session],
    clean_env: pytest.MonkeyPatch,
    network_guard: NetworkGuard,
) -> ReplayOffline:
    """``replay_offline(path, run)``: ``run(fake, session)`` replayed from ``path`` with the network
    blocked and no key in the environment; checks no request reached the provider and nothing tried
    the network, and returns what ``run`` returned."""

    def replay(path: Path, run: Callable[[FakeProvider, Session], Any]) -> Any:
        session = sessions(mode="replay", cassette=path)
        attempts = network_guard.block()
        replayed = run(fake_provider, session)
        session.finish(result="done")
        assert fake_provider.requests == [] and attempts == []
        return replayed

    return replay


@pytest.fixture
def replay_diverges(
    fake_provider: FakeProvider, sessions: Callable[..., Session], clean_env: pytest.MonkeyPatch
) -> ReplayDiverges:
    """``replay_diverges(path, run, refused)``: ``run(fake, session)`` replayed from ``path`` makes the
    SDK raise ``refused`` naming blackbox, the session holds the divergence (returned) and no request
    reached the provider; the session is discarded."""

    def check(
        path: Path, run: Callable[[FakeProvider, Session], object], refused: type[Exception]
    ) -> ReplayDivergenceError:
        session = sessions(mode="replay", cassette=path)
        with pytest.raises(refused, match=r"\[blackbox\]"):
            run(fake_provider, session)
        error = session.error
        assert isinstance(error, ReplayDivergenceError)
        assert fake_provider.requests == []
        session.discard()
        return error

    return check


@pytest.fixture
def diverges_offline(
    fake_provider: FakeProvider, tmp_path: Path, offline: Callable[[], list[str]]
) -> DivergesOffline:
    """``diverges_offline(ask, diverging, refused, match)``: ``ask(root)`` recorded against the fake
    (its answers queued by the test), the fake stopped and the network blocked, then ``diverging(root)``
    replayed: the SDK raises ``refused`` matching ``match`` and finishing the replay raises the
    divergence, which it returns."""

    def check(
        ask: Callable[[str], object],
        diverging: Callable[[str], object],
        refused: type[Exception],
        match: str,
        *,
        result: str = "done",
    ) -> ReplayDivergenceError:
        path = tmp_path / "run.json"
        session = blackbox(mode="record", out=path)
        ask(fake_provider.base_url)
        session.finish(result="done")
        root = fake_provider.base_url
        fake_provider.stop()
        offline()
        session = blackbox(mode="replay", cassette=path)
        with pytest.raises(refused, match=match):
            diverging(root)
        with pytest.raises(ReplayDivergenceError) as caught:
            session.finish(result=result)
        return caught.value

    return check
