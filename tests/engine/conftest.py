"""Shared fixtures for the engine tests: keys, a socket guard, and record/replay helpers for the agent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.engine import exithooks
from pytest_blackbox.engine.launched import LAUNCHED_VAR
from pytest_blackbox.engine.options import SESSION_ENV_VARS
from pytest_blackbox.engine.session import Session, blackbox
from pytest_blackbox.testing.fake_provider import FakeProvider

from .travel_agent import Agent, ToolBox, script

ANTHROPIC_KEY = "sk-ant-api03-engine-test-key-0123456789abcdef"
OPENAI_KEY = "sk-proj-engine-test-key-0123456789abcdefghij"
FLAVORS = [("anthropic", False), ("anthropic", True), ("openai", False), ("openai", True)]
FLAVOR_IDS = ["anthropic-sync", "anthropic-async", "openai-sync", "openai-async"]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Provider keys set, no stale BLACKBOX_* variable, and no process-wide exit hooks in the test process.

    The exit safety net is proven in subprocesses (test_exithooks.py); here it would install a SIGTERM
    handler and an atexit hook into the pytest worker itself.
    """
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    for name in (*SESSION_ENV_VARS, LAUNCHED_VAR):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(exithooks, "_install", lambda: None)


@pytest.fixture(params=FLAVORS, ids=FLAVOR_IDS)
def flavor(request: pytest.FixtureRequest) -> tuple[str, bool]:
    """(sdk, is_async): every agent test runs with both SDKs, sync and async."""
    result: tuple[str, bool] = request.param
    return result


@dataclass
class Run:
    """What one agent run produced."""

    session: Session
    agent: Agent
    box: ToolBox
    answer: str


def base_url(fake: FakeProvider | str, sdk: str) -> str:
    """The SDK's base URL for a fake server (or a remembered one, once the server is stopped)."""
    root = fake if isinstance(fake, str) else fake.base_url
    return root if sdk == "anthropic" else root + "/v1"


def run_agent(
    flavor: tuple[str, bool],
    root: str,
    *,
    box: ToolBox | None = None,
    finish: bool = True,
    result: Callable[[str], Any] = lambda answer: answer,
    session_options: dict[str, Any] | None = None,
    session: Session | None = None,
    wrap: bool = True,
    **agent_options: Any,
) -> Run:
    """Run the agent under ``blackbox(**session_options)`` (or ``session``); finish with its answer."""
    sdk, is_async = flavor
    box = box or ToolBox()
    bb = session if session is not None else blackbox(**(session_options or {}))
    agent = Agent(sdk, is_async, base_url(root, sdk), **agent_options)
    tools = box.functions(is_async)
    answer = asyncio.run(agent.run(bb.tools(tools) if wrap else tools))
    if finish:
        bb.finish(result=result(answer))
    return Run(bb, agent, box, answer)


@pytest.fixture
def recorded(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path
) -> Iterator[tuple[Path, Run, str]]:
    """The default conversation recorded with this flavor: (cassette, run, the fake's base URL)."""
    script(fake_provider, flavor[0])
    path = tmp_path / "run.json"
    run = run_agent(flavor, fake_provider.base_url, session_options={"mode": "record", "out": path})
    yield path, run, fake_provider.base_url
