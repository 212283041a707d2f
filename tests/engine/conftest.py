"""Shared fixtures for the engine tests: the suite's provider keys, the four SDK flavors, a recording."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_blackbox.engine.keys import OFFLINE_PLACEHOLDER_KEY
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
