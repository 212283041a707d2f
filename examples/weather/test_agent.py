"""The weather agent's tests: recorded once, replayed offline on every run after.

``pytest examples`` replays the committed cassettes in ``cassettes/test_agent/``: no key, no
network. ``pytest examples --record-mode=rewrite`` records them again (see ``conftest.py`` for
where the model calls then go).
"""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import pytest
from agent import TOOLS, run_agent, run_agent_async

from pytest_blackbox import Session

pytestmark = pytest.mark.blackbox

QUESTION = "What is the weather in Paris?"


def check(answer: str) -> None:
    """Facts only the tools know (a live model words its answer its own way)."""
    assert "Paris" in answer
    assert "69.8" in answer  # celsius_to_fahrenheit(21), so both tools ran


def test_weather_agent(blackbox: Session, anthropic_options: dict[str, Any]) -> None:
    client = anthropic.Anthropic(**anthropic_options)
    check(run_agent(client, QUESTION, blackbox.tools(TOOLS)))


def test_weather_agent_async(blackbox: Session, anthropic_options: dict[str, Any]) -> None:
    async def main() -> str:
        async with anthropic.AsyncAnthropic(**anthropic_options) as client:
            return await run_agent_async(client, QUESTION, blackbox.tools(TOOLS))

    check(asyncio.run(main()))
