"""The agent as a program, for the tests that need a real process: the exit safety net and the launcher.

``python agent_script.py SCENARIO``; the session comes from ``BLACKBOX_*`` variables (set by the test
or by the ``blackbox`` launcher). Other settings: ``AGENT_SDK`` (anthropic/openai), ``AGENT_ASYNC``
(1 for the async client), ``AGENT_BASE_URL``, ``AGENT_SYSTEM`` (a changed system prompt),
``AGENT_READY`` (a file the blocking tool creates once it runs).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from pytest_blackbox.engine.session import blackbox
from tests.engine.travel_agent import SYSTEM, Agent, ToolBox


def _ready() -> None:
    Path(os.environ["AGENT_READY"]).write_text("ready", encoding="utf-8")


def blocking_tools(box: ToolBox, is_async: bool) -> dict[str, Any]:
    """``get_weather`` signals that it runs, then blocks until the process is killed."""
    if is_async:

        async def get_weather(city: str) -> Any:
            _ready()
            await asyncio.sleep(120)

        return {**box.functions(True), "get_weather": get_weather}

    def get_weather_sync(city: str) -> Any:
        _ready()
        time.sleep(120)

    return {**box.functions(False), "get_weather": get_weather_sync}


def main(scenario: str) -> int:
    sdk, is_async = os.environ["AGENT_SDK"], os.environ.get("AGENT_ASYNC") == "1"
    agent = Agent(sdk, is_async, os.environ["AGENT_BASE_URL"], system=os.environ.get("AGENT_SYSTEM", SYSTEM))
    agent.catch_errors = os.environ.get("AGENT_CATCH") == "1"
    box = ToolBox()
    bb = blackbox(match="sequence") if scenario == "override" else blackbox()
    if scenario == "block-wrapped":
        tools = bb.tools(blocking_tools(box, is_async))
    elif scenario == "block-unwrapped":
        tools = {
            **bb.tools(box.functions(is_async)),
            "get_weather": blocking_tools(box, is_async)["get_weather"],
        }
    else:
        tools = bb.tools(box.functions(is_async))
    if scenario == "crash":
        agent.max_model_calls = 1
    answer = asyncio.run(agent.run(tools))
    if scenario == "crash":
        raise RuntimeError("the agent crashed")
    if scenario == "in-flight":
        blocker = bb.tool("get_weather", blocking_tools(box, False)["get_weather"])
        threading.Thread(target=blocker, args=("Oslo",), daemon=True).start()
        while not Path(os.environ["AGENT_READY"]).exists():
            time.sleep(0.01)
        return 0
    if scenario == "second-session":
        blackbox()
    if scenario == "kill-self":
        os.kill(os.getpid(), signal.SIGKILL)
    if scenario != "no-finish":
        bb.finish(result=answer)
    print(f"answer: {answer}; tools run: {len(box.calls)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
