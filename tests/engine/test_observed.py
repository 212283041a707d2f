"""``Session.run``: the tool calls a test sees are the same recorded and replayed, errors included."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox import RecordedToolError, Session, ToolCall


def lookup(city: str, units: str = "C") -> dict[str, Any]:
    if city == "Atlantis":
        raise LookupError(f"no weather station in {city}")
    return {"city": city, "units": units}


async def lookup_async(city: str, units: str = "C") -> dict[str, Any]:
    await asyncio.sleep(0)
    return lookup(city, units)


def _calls(session: Session, fn: Callable[..., Any], errors: type[BaseException]) -> tuple[ToolCall, ...]:
    tool = session.tool("lookup", fn)

    async def agent() -> None:
        for city in ("Paris", "Atlantis"):
            try:
                result = tool(city, units="F")
                if asyncio.iscoroutine(result):
                    await result
            except errors:
                pass

    asyncio.run(agent())
    session.finish(result="done")
    assert session.run.status == "success"
    return session.run.tool_calls


@pytest.mark.parametrize("fn", [lookup, lookup_async], ids=["sync", "async"])
def test_tool_calls_read_the_same_recorded_and_replayed(
    sessions: Callable[..., Session], tmp_path: Path, fn: Callable[..., Any]
) -> None:
    path = tmp_path / "run.json"
    recorded = _calls(sessions(mode="record", out=path), fn, LookupError)
    replayed = _calls(sessions(mode="replay", cassette=path), fn, RecordedToolError)
    assert (
        recorded
        == replayed
        == (
            ToolCall("lookup", {"city": "Paris", "units": "F"}, {"city": "Paris", "units": "F"}),
            ToolCall("lookup", {"city": "Atlantis", "units": "F"}, error="no weather station in Atlantis"),
        )
    )
    assert (
        replayed[1].shown()
        == 'lookup({"city": "Atlantis", "units": "F"}) -> raised no weather station in Atlantis'
    )


def test_a_call_shows_its_arguments_as_the_call_started(
    sessions: Callable[..., Session], tmp_path: Path
) -> None:
    """A tool that changes the arguments it was given leaves the call's ``input`` as it was called."""

    def tag(item: dict[str, Any]) -> str:
        item["tagged"] = True
        return "ok"

    session = sessions(mode="record", out=tmp_path / "run.json")
    session.tool("tag", tag)({"name": "a"})
    session.finish(result="done")
    assert session.run.tool_calls == (ToolCall("tag", {"name": "a"}, "ok"),)
