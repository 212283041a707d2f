"""The travel conversation: two tools, and a parallel round.

The default conversation makes three model calls: ``get_weather(Paris)``; then a parallel round
``get_weather(Rome)`` + ``get_time(Rome)``; then the final answer.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_blackbox import Session, blackbox
from pytest_blackbox.testing import FakeProvider

from . import loop
from .loop import Agent, Turn, base_url

SYSTEM = "You are a travel assistant. Answer only from the tools' data."
PROMPT = "What's the weather in Paris, and the weather and local time in Rome?"
FINAL = "Paris is clear at 21°C. Rome is 24.5°C and it is 14:05 there."
MODELS = {"anthropic": "claude-sonnet-5", "openai": "gpt-5"}
DEFAULT_TURNS: list[Turn] = [
    ([("get_weather", {"city": "Paris"})], None),
    ([("get_weather", {"city": "Rome"}), ("get_time", {"city": "Rome"})], "Checking Rome."),
    ([], FINAL),
]
WEATHER = {"Paris": {"city": "Paris", "tempC": 21.0, "sky": "clear"}, "Rome": {"city": "Rome", "tempC": 24.5}}


def city_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
    }


def tool_specs() -> list[dict[str, Any]]:
    """The two tools' definitions, each with its own schema object (so one can be changed alone)."""
    return [
        loop.tool_spec("get_weather", "Current weather for a city.", city_schema()),
        loop.tool_spec("get_time", "Local time in a city.", city_schema()),
    ]


def script(fake: FakeProvider, sdk: str, turns: Sequence[Turn] = DEFAULT_TURNS) -> None:
    """Queue the model's answers on the fake provider (the default conversation unless told)."""
    loop.script(fake, sdk, turns)


@dataclass
class TravelAgent(Agent):
    """The loop with the travel conversation's prompt, system prompt, tools and models."""

    system: str = SYSTEM
    prompts: Sequence[str] = (PROMPT,)
    tool_specs: list[dict[str, Any]] = field(default_factory=tool_specs)
    models: Mapping[str, str] = field(default_factory=lambda: dict(MODELS))


class ToolBox:
    """The real tool functions. They count their calls: a replay must run none of them."""

    def __init__(self, weather: Mapping[str, Any] | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.weather = dict(WEATHER if weather is None else weather)

    def get_weather(self, city: str) -> Any:
        self.calls.append(("get_weather", city))
        return copy.deepcopy(self.weather[city])

    def get_time(self, city: str) -> Any:
        self.calls.append(("get_time", city))
        return {"city": city, "time": "14:05"}

    def functions(self, is_async: bool) -> dict[str, Callable[..., Any]]:
        """The tools as the agent gets them: sync functions, or coroutine functions."""
        if not is_async:
            return {"get_weather": self.get_weather, "get_time": self.get_time}

        async def get_weather(city: str) -> Any:
            await asyncio.sleep(0)
            return self.get_weather(city)

        async def get_time(city: str) -> Any:
            await asyncio.sleep(0)
            return self.get_time(city)

        return {"get_weather": get_weather, "get_time": get_time}


@dataclass
class Run:
    """What one agent run produced."""

    session: Session
    agent: Agent
    box: ToolBox
    answer: str


def run_agent(
    flavor: tuple[str, bool],
    root: FakeProvider | str,
    *,
    box: ToolBox | None = None,
    finish: bool = True,
    result: Callable[[str], Any] = lambda answer: answer,
    session_options: dict[str, Any] | None = None,
    session: Session | None = None,
    wrap: bool = True,
    tools: Mapping[str, Callable[..., Any]] | None = None,
    agent_class: type[TravelAgent] = TravelAgent,
    **agent_options: Any,
) -> Run:
    """Run the agent under ``blackbox(**session_options)`` (or ``session``); finish with its answer.

    The agent gets ``tools`` if given, else the box's functions, wrapped by the session unless
    ``wrap`` is false. ``root`` is the fake provider, or the root URL it had once it is stopped.
    """
    sdk, is_async = flavor
    box = box if box is not None else ToolBox()
    bb = session if session is not None else blackbox(**(session_options or {}))
    agent = agent_class(sdk, is_async, base_url(root, sdk), **agent_options)
    if tools is None:
        tools = bb.tools(box.functions(is_async)) if wrap else box.functions(is_async)
    answer = agent.run(tools)
    if finish:
        bb.finish(result=result(answer))
    return Run(bb, agent, box, answer)


def record(
    fake: FakeProvider,
    flavor: tuple[str, bool],
    path: Path,
    *,
    box: ToolBox | None = None,
    **session_options: Any,
) -> Run:
    """The default conversation recorded to ``path`` and finished with the agent's answer."""
    script(fake, flavor[0])
    return run_agent(
        flavor, fake, box=box, session_options={"mode": "record", "out": path, **session_options}
    )
