"""The fleet-triage agent the vector cassettes were recorded from, rebuilt for the fork tests.

Everything the agent sends is read from ``triage-incident.json``'s first ``model_input`` (system
prompt, model, ``max_tokens``, tool definitions, the user's ticket), so its requests normalize to the
recorded ones byte for byte and a strict replay of the prefix matches. It sends each tool result back
as the compact JSON string of the value (``JSON.stringify``), as the recorded agent did; the tools
answer with the values the incident recorded. ``open_work_order`` derives its id from its input
(``WO-`` and the first six hex digits of the SHA-256 of the input's compact JSON), which reproduces
both recorded work orders.

As a program (``python triage.py``) it runs under ``blackbox()`` configured by the
``BLACKBOX_*`` variables, as the ``blackbox fork`` launcher sets them.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anthropic

from tests import VECTORS

TRIAGE = VECTORS / "examples" / "fleet-triage"
INCIDENT = TRIAGE / "cassettes" / "triage-incident.json"
HYPOTHESIS = TRIAGE / "cassettes" / "triage-hypothesis.json"
LIVE_READING = TRIAGE / "inputs" / "live-reading.json"
URGENT_REPLIES = TRIAGE / "inputs" / "urgent-replies.json"
#: Nothing listens here: a request that were really sent would fail at once.
CLOSED_URL = "http://127.0.0.1:9"

Tool = Callable[[dict[str, Any]], Any]


def _incident() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(INCIDENT.read_bytes().decode("utf-8"))
    return loaded


def _request_template() -> dict[str, Any]:
    first = _incident()["steps"][0]["payload"]
    return {
        "model": first["model"],
        "max_tokens": first["params"]["maxTokens"],
        "system": first["systemPrompt"],
        "tools": [
            {"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]}
            for t in first["tools"]
        ],
    }


def ticket() -> str:
    content: str = _incident()["steps"][0]["payload"]["messages"][0]["content"]
    return content


def compact(value: Any) -> str:
    """``JSON.stringify(value)``: no spaces, keys in insertion order, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _recorded_result(name: str) -> Any:
    step = next(
        s for s in _incident()["steps"] if s["type"] == "tool_result" and s["payload"]["toolName"] == name
    )
    return step["payload"]["result"]


def tools(calls: list[str] | None = None) -> dict[str, Tool]:
    """The four tools; each appends its name to ``calls`` when it really runs."""
    seen = calls if calls is not None else []

    def recorded(name: str) -> Tool:
        def run(args: dict[str, Any]) -> Any:
            seen.append(name)
            return _recorded_result(name)

        return run

    def open_work_order(args: dict[str, Any]) -> Any:
        seen.append("open_work_order")
        digest = hashlib.sha256(compact(args).encode("utf-8")).hexdigest()[:6].upper()
        return {
            "work_order_id": f"WO-{digest}",
            "vehicle_id": args["vehicle_id"],
            "priority": args["priority"],
            "status": "open",
        }

    return {
        "lookup_dtc": recorded("lookup_dtc"),
        "get_telemetry": recorded("get_telemetry"),
        "get_service_history": recorded("get_service_history"),
        "open_work_order": open_work_order,
    }


def run(client: anthropic.Anthropic, wrapped: Mapping[str, Tool], max_calls: int = 8) -> str:
    """The tool loop: ask, run every requested tool in order, send the results back, until an answer."""
    template = _request_template()
    messages: list[Any] = [{"role": "user", "content": ticket()}]
    for _ in range(max_calls):
        response = client.messages.create(**template, messages=messages)
        messages.append({"role": "assistant", "content": response.content})
        uses = [block for block in response.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in response.content if block.type == "text")
        results = [
            {"type": "tool_result", "tool_use_id": use.id, "content": compact(wrapped[use.name](use.input))}
            for use in uses
        ]
        messages.append({"role": "user", "content": results})
    raise RuntimeError(f"no answer after {max_calls} model calls")


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from pytest_blackbox import blackbox

    session = blackbox()
    client = anthropic.Anthropic(base_url=CLOSED_URL, max_retries=0)
    answer = run(client, session.tools(tools()))
    session.finish(result=answer)
    print(f"answer: {answer}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
