"""The security tests' agent as a program, for the launcher and the exit safety net.

``python agent_program.py SCENARIO``; the session comes from ``BLACKBOX_*`` variables only. Settings:
``SECURITY_SDK`` (anthropic/openai), ``SECURITY_BASE_URL`` (the fake provider's root),
``SECURITY_SYSTEM`` (a system prompt), ``SECURITY_READY`` (a file the blocking call waits for).

Scenarios: ``finish`` (run, then ``finish(result=answer)``); ``no-finish`` (run and exit, leaving the
run to the exit safety net); ``tool-in-flight`` and
``model-in-flight`` (run, then start one more wrapped-tool or model call in a thread and exit while
it is still running).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from pytest_blackbox.engine.session import blackbox
from tests.security.agent import SYSTEM, Agent, Lookup


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 30
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def _blocking_tool(ready: Path) -> None:
    ready.write_text("ready", encoding="utf-8")
    time.sleep(120)


def main(scenario: str) -> int:
    sdk = os.environ["SECURITY_SDK"]
    root = os.environ["SECURITY_BASE_URL"]
    agent = Agent(sdk, False, root if sdk == "anthropic" else root + "/v1")
    agent.system = os.environ.get("SECURITY_SYSTEM", SYSTEM)
    session = blackbox()
    answer = agent.run(session.tools({"lookup": Lookup()}))
    ready = Path(os.environ.get("SECURITY_READY", "ready"))
    if scenario == "tool-in-flight":
        blocker = session.tool("lookup", lambda city: _blocking_tool(ready))
        threading.Thread(target=blocker, args=("Oslo",), daemon=True).start()
        _wait_for(ready)
        return 0
    if scenario == "model-in-flight":
        agent.prompt = "And in Oslo?"
        threading.Thread(target=agent.run, args=({},), daemon=True).start()
        _wait_for(ready)  # written by the fake provider once the request has arrived
        return 0
    if scenario != "no-finish":
        session.finish(result=answer)
    print(f"answer: {answer}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
