"""Helpers shared by the session-fork tests: a clean environment, a pinned clock, and the travel agent."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.engine import exithooks
from pytest_blackbox.engine.launched import LAUNCHED_VAR
from pytest_blackbox.engine.options import SESSION_ENV_VARS
from pytest_blackbox.engine.session import Session, blackbox
from pytest_blackbox.testing.fake_provider import FakeProvider
from tests.engine.travel_agent import Agent, ToolBox, script

ANTHROPIC_KEY = "sk-ant-api03-fork-test-key-0123456789abcdef"
OPENAI_KEY = "sk-proj-fork-test-key-0123456789abcdefghij"
FLAVORS = [("anthropic", False), ("openai", True)]
FLAVOR_IDS = ["anthropic-sync", "openai-async"]


def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Provider keys set, no stale BLACKBOX_* variable, no process-wide exit hooks in the test process."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    for name in (*SESSION_ENV_VARS, LAUNCHED_VAR):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(exithooks, "_install", lambda: None)


def ticks(start: int, step: int = 350) -> Callable[[], int]:
    """A pinned clock that advances ``step`` ms per reading, as the vectors' recordings used."""
    counter = itertools.count()
    return lambda: start + step * next(counter)


def read_json(path: Path) -> Any:
    return json.loads(path.read_bytes().decode("utf-8"))


def base_url(fake: FakeProvider, sdk: str) -> str:
    return fake.base_url if sdk == "anthropic" else fake.base_url + "/v1"


class ReversingAgent(Agent):
    """Runs each parallel round in reverse call order (the results still go back in call order)."""

    async def _run_tools(
        self, calls: list[tuple[str, str, dict[str, Any]]], tools: Mapping[str, Any]
    ) -> list[tuple[str, str, bool]]:
        return (await super()._run_tools(calls[::-1], tools))[::-1]


def run_travel(
    bb: Session,
    flavor: tuple[str, bool],
    fake: FakeProvider,
    box: ToolBox | None = None,
    *,
    agent_class: type[Agent] = Agent,
    **agent: Any,
) -> tuple[str, ToolBox]:
    """Run the travel agent, its tools wrapped by ``bb`` (or as given in ``tools``); returns the answer."""
    sdk, is_async = flavor
    box = box if box is not None else ToolBox()
    tools = agent.pop("tools", None)
    runner = agent_class(sdk, is_async, base_url(fake, sdk), **agent)
    answer = asyncio.run(runner.run(tools if tools is not None else bb.tools(box.functions(is_async))))
    return answer, box


def record_travel(
    fake: FakeProvider, flavor: tuple[str, bool], path: Path, box: ToolBox | None = None
) -> dict[str, Any]:
    """The travel agent's default conversation recorded to ``path``; returns the parsed cassette."""
    script(fake, flavor[0])
    bb = blackbox(mode="record", out=path, clock=ticks(1_700_000_000_000))
    answer, _ = run_travel(bb, flavor, fake, box)
    bb.finish(result=answer)
    bb.stop()
    recorded: dict[str, Any] = read_json(path)
    return recorded


def write_script(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(entries, ensure_ascii=False), encoding="utf-8")
    return path


def tool_results(step: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The tool_result parts of a model_input payload, in message order."""
    for message in step["payload"]["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            yield from (part for part in content if part.get("type") == "tool_result")
