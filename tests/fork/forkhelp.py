"""Helpers shared by the session-fork tests: a pinned clock, the travel agent recorded with it, scripts."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_blackbox.testing import FakeProvider
from tests.agents.travel import ToolBox, TravelAgent, record

FLAVORS = [("anthropic", False), ("openai", True)]
FLAVOR_IDS = ["anthropic-sync", "openai-async"]


def ticks(start: int, step: int = 350) -> Callable[[], int]:
    """A pinned clock that advances ``step`` ms per reading, as the vectors' recordings used."""
    counter = itertools.count()
    return lambda: start + step * next(counter)


def read_json(path: Path) -> Any:
    return json.loads(path.read_bytes().decode("utf-8"))


class ReversingAgent(TravelAgent):
    """Runs each parallel round in reverse call order (the results still go back in call order)."""

    async def _run_tools(
        self, calls: list[tuple[str, str, dict[str, Any]]], tools: Mapping[str, Any]
    ) -> list[tuple[str, str, bool]]:
        return (await super()._run_tools(calls[::-1], tools))[::-1]


def record_travel(
    fake: FakeProvider, flavor: tuple[str, bool], path: Path, box: ToolBox | None = None
) -> dict[str, Any]:
    """The travel agent's default conversation recorded to ``path``; returns the parsed cassette."""
    record(fake, flavor, path, box=box, clock=ticks(1_700_000_000_000)).session.stop()
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
