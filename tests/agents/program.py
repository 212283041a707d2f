"""The agent as a program, for the tests that need a real process: the exit safety net and the launcher.

``python program.py SCENARIO``; the session comes from ``BLACKBOX_*`` variables only (set by the test
or by the ``blackbox`` launcher). Settings: ``AGENT_CONVERSATION`` (``travel``, the default, or
``lookup``), ``AGENT_SDK`` (anthropic/openai), ``AGENT_ASYNC`` (1 for the async client),
``AGENT_BASE_URL`` (the fake provider's root), ``AGENT_SYSTEM`` (a changed system prompt),
``AGENT_CATCH`` (1: an SDK error ends the run instead of raising), ``AGENT_READY`` (a file a blocking
call creates, or waits for, once it runs).

Scenarios: ``finish`` (run, then ``finish(result=answer)``); ``no-finish`` (run and exit, leaving the
run to the exit safety net); ``override`` (the program asks for sequence matching itself);
``crash`` (one model call, then an exception); ``kill-self`` (SIGKILL before finishing);
``second-session`` (a second ``blackbox()`` after the run); ``block-wrapped`` and ``block-unwrapped``
(the first tool blocks until killed, wrapped by the session or not); ``tool-in-flight`` and
``model-in-flight`` (run, then start one more wrapped-tool or model call in a thread and exit while it
is still running).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from pytest_blackbox import blackbox
from tests.agents.lookup import Lookup, LookupAgent
from tests.agents.loop import Agent, base_url
from tests.agents.travel import ToolBox, TravelAgent
from tests.machine import scaled


def _ready() -> Path:
    return Path(os.environ.get("AGENT_READY", "ready"))


def _wait_until_ready() -> None:
    deadline = time.monotonic() + scaled(30)
    while not _ready().exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def _blocking(is_async: bool) -> Callable[..., Any]:
    """A tool that signals that it runs, then blocks until the process is killed."""
    if is_async:

        async def block_async(city: str) -> Any:
            _ready().write_text("ready", encoding="utf-8")
            await asyncio.sleep(120)

        return block_async

    def block(city: str) -> Any:
        _ready().write_text("ready", encoding="utf-8")
        time.sleep(120)

    return block


def _agent_and_tools() -> tuple[Agent, dict[str, Callable[..., Any]], Callable[[], int]]:
    """The configured agent, its unwrapped tools, and how many tool runs happened."""
    sdk, is_async = os.environ["AGENT_SDK"], os.environ.get("AGENT_ASYNC") == "1"
    url = base_url(os.environ["AGENT_BASE_URL"], sdk)
    kind = LookupAgent if os.environ.get("AGENT_CONVERSATION") == "lookup" else TravelAgent
    agent = kind(sdk, is_async, url, catch_errors=os.environ.get("AGENT_CATCH") == "1")
    if "AGENT_SYSTEM" in os.environ:
        agent.system = os.environ["AGENT_SYSTEM"]
    if kind is LookupAgent:
        lookup = Lookup()
        return agent, {"lookup": lookup.tool(is_async)}, lambda: len(lookup.runs)
    box = ToolBox()
    return agent, box.functions(is_async), lambda: len(box.calls)


def main(scenario: str) -> int:
    agent, tools, runs = _agent_and_tools()
    first = next(iter(tools))
    bb = blackbox(match="sequence") if scenario == "override" else blackbox()
    if scenario == "block-wrapped":
        wrapped = bb.tools({**tools, first: _blocking(agent.is_async)})
    elif scenario == "block-unwrapped":
        wrapped = {**bb.tools(tools), first: _blocking(agent.is_async)}
    else:
        wrapped = bb.tools(tools)
    if scenario == "crash":
        agent.max_model_calls = 1
    answer = agent.run(wrapped)
    if scenario == "crash":
        raise RuntimeError("the agent crashed")
    if scenario == "tool-in-flight":
        blocker = bb.tool(first, _blocking(False))
        threading.Thread(target=blocker, args=("Oslo",), daemon=True).start()
        _wait_until_ready()
        return 0
    if scenario == "model-in-flight":
        agent.prompts = ("And in Oslo?",)
        threading.Thread(target=agent.run, args=({},), daemon=True).start()
        _wait_until_ready()  # written by the fake provider once the request has arrived
        return 0
    if scenario == "second-session":
        blackbox()
    if scenario == "kill-self":
        os.kill(os.getpid(), signal.SIGKILL)
    if scenario != "no-finish":
        bb.finish(result=answer)
    print(f"answer: {answer}; tools run: {runs()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
