"""Match rules: ``ignore``, ``normalize`` and ``matcher`` loosen (or tighten) the replay comparison, and a
long text's divergence is shown around its first difference. Recorded through the fake provider with
both SDKs, sync and async (and Gemini), replayed with no key and the network closed."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox import ReplayDivergenceError, blackbox
from pytest_blackbox.engine.comparison import Relaxation
from pytest_blackbox.errors import BlackboxUsageError
from pytest_blackbox.testing import FakeProvider
from tests.agents import gemini
from tests.agents.travel import FINAL, SYSTEM, Run, ToolBox, run_agent, script, tool_specs

DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
#: A pytest temporary directory (``tmp_path``, with or without pytest-xdist), wherever the platform puts it.
TMP_PATH = r"(?:/[^/\s\"]+)*?/pytest-of-[^/\s\"]+/pytest-\d+(?:/popen-gw\d+)?/[^/\s\"]+"


def dated(day: str) -> str:
    return f"{SYSTEM} Today is {day}."


def run(
    flavor: tuple[str, bool],
    root: FakeProvider | str,
    options: dict[str, Any],
    *,
    wrapped: dict[str, Callable[..., Any]] | None = None,
    **agent_options: Any,
) -> Run:
    """The travel agent under ``blackbox(**options)``; ``wrapped``: its tools, wrapped by the session."""
    session = blackbox(**options)
    tools = session.tools(wrapped) if wrapped is not None else agent_options.pop("tools", None)
    return run_agent(flavor, root, session=session, tools=tools, **agent_options)


def record(fake: FakeProvider, flavor: tuple[str, bool], path: Path, **agent_options: Any) -> Run:
    script(fake, flavor[0])
    return run(flavor, fake, {"mode": "record", "out": path}, **agent_options)


def replay(
    path: Path, flavor: tuple[str, bool], root: str, rules: dict[str, Any], **agent_options: Any
) -> Run:
    return run(flavor, root, {"mode": "replay", "cassette": path, **rules}, **agent_options)


def diverged(path: Path, flavor: tuple[str, bool], root: str, rules: dict[str, Any], **agent: Any) -> str:
    """The divergence a replay ends with (the agent catches the SDK's 400; ``finish()`` raises it)."""
    with pytest.raises(ReplayDivergenceError) as caught:
        run(flavor, root, {"mode": "replay", "cassette": path, **rules}, catch_errors=True, **agent)
    return str(caught.value)


# -- normalize -------------------------------------------------------------------------------------


def test_a_date_in_the_system_prompt_replays_across_days(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, offline: Callable[[], list[str]]
) -> None:
    path = tmp_path / "dated.json"
    record(fake_provider, flavor, path, system=dated("2026-01-01"))
    root, requests = fake_provider.base_url, len(fake_provider.requests)
    attempts = offline()
    rules = {"normalize": [(DATE, "<date>")]}
    run = replay(path, flavor, root, rules, system=dated("2026-03-04"))
    assert (run.answer, run.box.calls, attempts, len(fake_provider.requests)) == (FINAL, [], [], requests)
    assert "Today is 2026-01-01" in path.read_text(encoding="utf-8")  # the file keeps the real text
    rule = "the normalize rule '\\\\d{4}-\\\\d{2}-\\\\d{2}' → '<date>'"
    assert run.session.relaxed == Relaxation(0, "systemPrompt", rule)  # the rule made it pass
    same_day = replay(path, flavor, root, rules, system=dated("2026-01-01"))
    assert same_day.session.relaxed is None  # the rule changed nothing that differed


def test_with_a_normalize_rule_a_change_elsewhere_still_fails(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, offline: Callable[[], list[str]]
) -> None:
    path = tmp_path / "dated.json"
    record(fake_provider, flavor, path, system=dated("2026-01-01"))
    root = fake_provider.base_url
    offline()
    specs = tool_specs()
    specs[1]["description"] = "The local time in a city."
    message = diverged(
        path, flavor, root, {"normalize": [(DATE, "<date>")]}, system=dated("2026-03-04"), tool_specs=specs
    )
    assert message.splitlines() == [
        "replay diverged at step 0, tools[1].description",
        '  recorded: "Local time in a city."',
        '  actual:   "The local time in a city."',
        "  compared after the match rules: normalize '\\\\d{4}-\\\\d{2}-\\\\d{2}' → '<date>'",
        *message.splitlines()[4:],
    ]
    assert message.splitlines()[4].startswith("The agent sent a different request")


def test_a_divergence_shows_the_normalized_values(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, offline: Callable[[], list[str]]
) -> None:
    path = tmp_path / "dated.json"
    record(fake_provider, flavor, path, system=dated("2026-01-01"))
    root = fake_provider.base_url
    offline()
    message = diverged(path, flavor, root, {"normalize": [(DATE, "<date>")]}, system="Be brief. 2026-05-06")
    assert message.splitlines()[:4] == [
        "replay diverged at step 0, systemPrompt",
        f'  recorded: "{SYSTEM} Today is <date>."',
        '  actual:   "Be brief. <date>"',
        "  compared after the match rules: normalize '\\\\d{4}-\\\\d{2}-\\\\d{2}' → '<date>'",
    ]


@pytest.mark.parametrize("api,is_async,stream", [("models", False, False), ("chats", True, True)])
def test_a_date_in_the_system_prompt_replays_across_days_on_gemini(
    fake_provider: FakeProvider,
    tmp_path: Path,
    offline: Callable[[], list[str]],
    monkeypatch: pytest.MonkeyPatch,
    api: str,
    is_async: bool,
    stream: bool,
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIzaSyRulesTestKey0123456789abcdefghijk")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    gemini.script(fake_provider)
    path, root = tmp_path / "gemini.json", fake_provider.gemini_base_url

    def run(day: str, **options: Any) -> tuple[str, ToolBox]:
        box = ToolBox()
        agent = gemini.GeminiAgent(root, api=api, is_async=is_async, stream=stream, system=dated(day))
        with blackbox(**options) as session:
            answer = asyncio.run(agent.run(session.tools(box.functions(is_async))))
            session.finish(result=answer)
        return answer, box

    run("2026-01-01", mode="record", out=path)
    requests = len(fake_provider.requests)
    attempts = offline()
    answer, box = run("2026-03-04", mode="replay", cassette=path, normalize=[(DATE, "<date>")])
    assert (answer, box.calls, attempts, len(fake_provider.requests)) == (FINAL, [], [], requests)
    with pytest.raises(ReplayDivergenceError, match=r"^replay diverged at step 0, systemPrompt"):
        run("2026-03-04", mode="replay", cassette=path)


def test_a_uuid_in_a_tool_argument(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, offline: Callable[[], list[str]]
) -> None:
    """The agent adds a fresh request id to every tool call: normalize it, or ignore that argument."""
    path = tmp_path / "uuid.json"
    record(
        fake_provider,
        flavor,
        path,
        tool_extra={"request_id": str(uuid.uuid4())},
        wrapped=tools_with_ids(flavor),
    )
    root = fake_provider.base_url
    offline()
    for rules, relaxing in (
        ({"normalize": [(UUID, "<uuid>")]}, f"the normalize rule {UUID!r} → '<uuid>'"),
        (
            {"ignore": ["tool get_weather input.request_id", "tool get_time input.request_id"]},
            "the ignore rule tool get_weather input.request_id",
        ),
        ({"match": "sequence"}, "the sequence match mode"),
    ):
        run = replay(
            path,
            flavor,
            root,
            rules,
            tool_extra={"request_id": str(uuid.uuid4())},
            wrapped=tools_with_ids(flavor),
        )
        assert run.answer == FINAL
        assert run.session.relaxed == Relaxation(2, "tool get_weather input.request_id", relaxing)
    message = diverged(
        path, flavor, root, {}, tool_extra={"request_id": "fresh"}, wrapped=tools_with_ids(flavor)
    )
    assert message.splitlines()[0] == "replay diverged at step 2, tool get_weather input"


def tools_with_ids(flavor: tuple[str, bool]) -> dict[str, Callable[..., Any]]:
    """The travel tools, taking the agent's request id (and ignoring it)."""
    box = ToolBox()
    if not flavor[1]:
        return {
            "get_weather": lambda city, request_id: box.get_weather(city),
            "get_time": lambda city, request_id: box.get_time(city),
        }

    async def get_weather(city: str, request_id: str) -> Any:
        return box.get_weather(city)

    async def get_time(city: str, request_id: str) -> Any:
        return box.get_time(city)

    return {"get_weather": get_weather, "get_time": get_time}


def test_a_temp_path_in_a_tool_result(
    fake_provider: FakeProvider,
    flavor: tuple[str, bool],
    tmp_path_factory: pytest.TempPathFactory,
    offline: Callable[[], list[str]],
) -> None:
    """An unwrapped tool runs in replay too: its result holds this run's temporary directory."""

    def tools(workdir: Path) -> dict[str, Callable[..., Any]]:
        def get_weather(city: str) -> dict[str, Any]:
            return {"city": city, "report": str(workdir / f"{city}.txt")}

        def get_time(city: str) -> dict[str, Any]:
            return {"city": city, "time": "14:05"}

        return {"get_weather": get_weather, "get_time": get_time}

    path = tmp_path_factory.mktemp("cassettes") / "tmp.json"
    record(fake_provider, flavor, path, tools=tools(tmp_path_factory.mktemp("record")))
    root = fake_provider.base_url
    offline()
    live = tools(tmp_path_factory.mktemp("replay"))
    run = replay(path, flavor, root, {"normalize": [(TMP_PATH, "<tmp>")]}, tools=live)
    assert run.answer == FINAL
    message = diverged(path, flavor, root, {}, tools=live)
    assert message.splitlines()[0] == "replay diverged at step 2, messages[2].content[0].result"


# -- ignore ----------------------------------------------------------------------------------------


def max_tokens(flavor: tuple[str, bool], limit: int) -> dict[str, Any]:
    """The agent option that sends ``limit`` as the request's token limit (``params.maxTokens``)."""
    return {"max_tokens": limit} if flavor[0] == "anthropic" else {"extra": {"max_completion_tokens": limit}}


def test_ignore_leaves_fields_out_of_the_comparison(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, offline: Callable[[], list[str]]
) -> None:
    path = tmp_path / "run.json"
    record(fake_provider, flavor, path, **max_tokens(flavor, 512))
    root = fake_provider.base_url
    offline()
    specs = tool_specs()
    specs[0]["description"] = "Weather now."
    rules = {"ignore": ["systemPrompt", "params.maxTokens", "tools[*].description"]}
    run = replay(path, flavor, root, rules, system="Be brief.", tool_specs=specs, **max_tokens(flavor, 64))
    assert run.answer == FINAL
    message = diverged(
        path, flavor, root, {"ignore": ["systemPrompt"]}, system="Be brief.", **max_tokens(flavor, 64)
    )
    assert message.splitlines()[:4] == [
        "replay diverged at step 0, params.maxTokens",
        "  recorded: 512",
        "  actual:   64",
        "  compared after the match rules: ignore systemPrompt",
    ]


# -- matcher ---------------------------------------------------------------------------------------


def test_a_matcher_adds_a_check_in_strict_mode_and_is_the_check_in_sequence_mode(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, offline: Callable[[], list[str]]
) -> None:
    path = tmp_path / "run.json"
    record(fake_provider, flavor, path)
    root = fake_provider.base_url
    offline()
    seen: list[tuple[Any, Any]] = []

    def same_model(recorded: Any, live: Any) -> str | None:
        seen.append((recorded, live))
        return (
            None
            if recorded["model"] == live["model"]
            else f"model {live['model']} is not {recorded['model']}"
        )

    run = replay(path, flavor, root, {"matcher": same_model})
    assert run.answer == FINAL and len(seen) == 3 and seen[0][0] == seen[0][1]
    loose = replay(path, flavor, root, {"matcher": same_model, "match": "sequence"}, system="Be brief.")
    assert loose.answer == FINAL
    models = {"anthropic": "claude-haiku-5", "openai": "gpt-5-mini"}
    message = diverged(path, flavor, root, {"matcher": same_model, "match": "sequence"}, models=models)
    model = models[flavor[0]]
    recorded_model = "claude-sonnet-5" if flavor[0] == "anthropic" else "gpt-5"
    assert message.splitlines()[:3] == [
        "replay diverged at step 0, matcher",
        "  recorded: a request the matcher accepts",
        f"  actual:   model {model} is not {recorded_model}",
    ]


def test_a_matcher_that_returns_something_else_is_a_usage_error(
    fake_provider: FakeProvider, tmp_path: Path, offline: Callable[[], list[str]]
) -> None:
    flavor = ("anthropic", False)
    path = tmp_path / "run.json"
    record(fake_provider, flavor, path)
    root = fake_provider.base_url
    offline()
    session = blackbox(mode="replay", cassette=path, matcher=lambda recorded, live: True)
    run_agent(flavor, root, session=session, finish=False, catch_errors=True)
    with pytest.raises(
        BlackboxUsageError,
        match=r"returned bool; it must return None \(the requests match\) or a reason string$",
    ):
        session.finish()


# -- long texts ------------------------------------------------------------------------------------


def test_a_date_appended_to_a_long_system_prompt_is_shown_where_it_differs(
    fake_provider: FakeProvider, flavor: tuple[str, bool], tmp_path: Path, offline: Callable[[], list[str]]
) -> None:
    long_system = "You are a careful travel assistant. " * 17  # 612 characters
    path = tmp_path / "long.json"
    record(fake_provider, flavor, path, system=long_system + "Today is 2026-01-01.")
    root = fake_provider.base_url
    offline()
    lines = diverged(path, flavor, root, {}, system=long_system + "Today is 2026-01-02.").splitlines()
    tail = long_system[630 - 60 :]  # the first difference is at 612 + len("Today is 2026-01-0")
    assert lines[:4] == [
        "replay diverged at step 0, systemPrompt",
        f'  recorded: "…{tail}Today is 2026-01-01."',
        f'  actual:   "…{tail}Today is 2026-01-02."',
        "  the texts differ from character 630 on (recorded 632 characters, actual 632)",
    ]
