"""The travel agent on Vertex AI: Gemini through ``genai.Client(vertexai=True)``, Claude through
``AnthropicVertex``, sync or async, plain or streamed; signed with a token, or Google's application
default credentials when the token is ``None`` (what a keyless replay has)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing import FakeProvider

from .gemini import GeminiAgent
from .gemini import script as script_gemini
from .loop import VERTEX_PROJECT, VERTEX_REGION
from .travel import ToolBox, TravelAgent
from .travel import script as script_travel

#: The access token the tests sign with while recording (a secret: never written).
TOKEN = "ya29.vertex-suite-token-0123456789abcdef"
CLAUDE = "claude-sonnet-4-5@20250929"
#: (is_async, stream): sync, async and streamed agents.
FLAVORS = [(False, False), (True, False), (True, True), (False, True)]
FLAVOR_IDS = ["sync", "async", "async-stream", "sync-stream"]
#: An agent on one road: ``run(root, session, is_async=, stream=, token=, system=)`` → its answer.
Road = Callable[..., Any]


def run_gemini(
    root: str, session: Session, *, is_async: bool, stream: bool, token: str | None, system: str
) -> str:
    agent = GeminiAgent(root, is_async=is_async, stream=stream, system=system, vertex_token=token)
    return asyncio.run(agent.run(session.tools(ToolBox().functions(is_async))))


def run_claude(
    root: str, session: Session, *, is_async: bool, stream: bool, token: str | None, system: str
) -> str:
    agent = TravelAgent(
        "anthropic",
        is_async,
        root + "/v1",
        system=system,
        models={"anthropic": CLAUDE},
        api_key=token,
        stream=stream,
        vertex=True,
    )
    return agent.run(session.tools(ToolBox().functions(is_async)))


#: Road → (its agent, what queues its answers on the fake provider, the path prefix of its calls).
ROADS: dict[str, tuple[Road, Callable[[FakeProvider], None], str]] = {
    "gemini": (
        run_gemini,
        script_gemini,
        f"/v1beta1/projects/{VERTEX_PROJECT}/locations/us-central1/publishers/google",
    ),
    "claude": (
        run_claude,
        lambda fake: script_travel(fake, "anthropic"),
        f"/v1/projects/{VERTEX_PROJECT}/locations/{VERTEX_REGION}/publishers/anthropic",
    ),
}
