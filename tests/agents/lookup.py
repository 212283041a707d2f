"""The lookup conversation: one tool, one turn that asks for it, one final answer.

It is deliberately small so every security test can say exactly where a key was planted or what
was changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_blackbox import Session, blackbox
from pytest_blackbox.testing import FakeProvider

from . import loop
from .loop import Agent, Turn, base_url

SYSTEM = "You answer weather questions from the lookup tool only."
PROMPT = "What is the weather in Paris?"
FINAL = "It is 21 °C and sunny in Paris."
MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-5"}
LOOKUP_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "a city"}},
    "required": ["city"],
}
DEFAULT_TURNS: list[Turn] = [([("lookup", {"city": "Paris"})], None), ([], FINAL)]


def tool_specs(schema: Mapping[str, Any] = LOOKUP_SCHEMA) -> list[dict[str, Any]]:
    """The one tool's definition, with another input schema if told."""
    return [loop.tool_spec("lookup", "Weather by city.", schema)]


def script(fake: FakeProvider, sdk: str, turns: Sequence[Turn] = DEFAULT_TURNS) -> None:
    """Queue the model's answers on the fake provider (the default conversation unless told)."""
    loop.script(fake, sdk, turns)


@dataclass
class LookupAgent(Agent):
    """The loop with the lookup conversation's defaults; a failed tool is "the tool failed" to the model."""

    system: str = SYSTEM
    prompts: Sequence[str] = (PROMPT,)
    tool_specs: list[dict[str, Any]] = field(default_factory=tool_specs)
    models: Mapping[str, str] = field(default_factory=lambda: dict(MODELS))
    max_tokens: int = 256
    max_model_calls: int | None = 4
    forward_errors: bool = False


@dataclass
class Lookup:
    """The real ``lookup`` tool; it counts its runs (a replay must run none)."""

    result: Any = None
    error: str | None = None
    runs: list[Any] = field(default_factory=list)

    def __call__(self, city: str, **extra: Any) -> Any:
        self.runs.append({"city": city, **extra})
        if self.error is not None:
            raise PermissionError(self.error)
        return self.result if self.result is not None else {"city": city, "tempC": 21, "sky": "sunny"}

    def tool(self, is_async: bool) -> Callable[..., Any]:
        if not is_async:
            return self.__call__

        async def lookup(city: str, **extra: Any) -> Any:
            await asyncio.sleep(0)
            return self(city, **extra)

        return lookup


@dataclass
class Run:
    """One agent run under a session."""

    session: Session
    agent: Agent
    lookup: Lookup
    answer: str


def run_agent(
    session: Session,
    sdk: str,
    root: str | None,
    *,
    is_async: bool = False,
    lookup: Lookup | None = None,
    **options: Any,
) -> Run:
    """Run the agent with ``lookup`` wrapped by ``session``; the caller finishes the session.

    ``root`` is the provider's root URL; ``None`` leaves the SDK's default, the real provider.
    """
    lookup = lookup if lookup is not None else Lookup()
    agent = LookupAgent(sdk, is_async, base_url(root, sdk), **options)
    answer = agent.run(session.tools({"lookup": lookup.tool(is_async)}))
    return Run(session, agent, lookup, answer)


def record(
    fake: FakeProvider, sdk: str, path: Path, *, turns: Sequence[Turn] = DEFAULT_TURNS, **options: Any
) -> Run:
    """Record one run to ``path`` and finish it with the agent's answer."""
    script(fake, sdk, turns)
    run = run_agent(blackbox(mode="record", out=path), sdk, fake.base_url, **options)
    run.session.finish(result=run.answer)
    return run
