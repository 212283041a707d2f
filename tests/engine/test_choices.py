"""Several choices per request through the real SDKs: Chat ``n > 1`` and Gemini ``candidateCount > 1``.

Recorded against the fake provider (plain, streamed, sync and async), each choice is kept (the first
as the model output, the others in its ``choices``) and a replay hands the SDK every choice back, in
order with its finish reason, with no request reaching the provider and no key in the environment.
The agent goes on with the choice it picks (here the second, which calls a tool): its tool call's
neutral id carries into the next request, compared strictly; asking for another number of choices
is a divergence.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import openai
import pytest
from google import genai
from google.genai import errors, types

from pytest_blackbox import verify_trace
from pytest_blackbox.testing import FakeProvider
from tests.agents.loop import settle
from tests.engine.conftest import RecordOnce, ReplayDiverges, ReplayOffline

TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a city up.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
ANSWERS: Any = [("Paris is sunny.", []), (None, [("lookup", {"city": "Paris"})])]


def chat(base_url: str, flavor: str, n: int = 2) -> Any:
    """Ask for ``n`` choices, go on with the second: what the SDK handed the agent each time."""
    options: Any = {"model": "gpt-x", "tools": TOOLS, "n": n}
    question = {"role": "user", "content": "Weather in Paris?"}
    client_type = openai.OpenAI if flavor == "sync" else openai.AsyncOpenAI
    client: Any = client_type(base_url=base_url + "/v1", api_key="not-a-key", max_retries=0)

    async def ask(messages: list[Any]) -> Any:
        if flavor == "stream":
            async with client.chat.completions.stream(messages=messages, **options) as stream:
                return await stream.get_final_completion()
        return await settle(client.chat.completions.create(messages=messages, **options))

    async def converse() -> Any:
        first = await ask([question])
        picked = first.choices[1].message
        result = {"role": "tool", "tool_call_id": picked.tool_calls[0].id, "content": "sunny"}
        second = await ask([question, picked.model_dump(exclude_none=True), result])
        return [_seen(first), _seen(second)]

    return asyncio.run(converse())


def _seen(completion: Any) -> list[Any]:
    """Each choice as the agent reads it: index, finish reason, content and calls (ids left out)."""
    seen = []
    for choice in completion.choices:
        calls = [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls or []]
        seen.append((choice.index, choice.finish_reason, choice.message.content, calls))
    return seen


@pytest.fixture(params=["sync", "async", "stream"])
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def recorded(flavor: str, record_once: RecordOnce) -> tuple[Path, Any]:
    def queue(fake: FakeProvider) -> None:
        fake.queue_openai_choices(ANSWERS)
        fake.queue_openai_choices([("Sunny, as looked up.", []), ("It is sunny.", [])])

    return record_once("choices.json", queue, lambda fake, _: chat(fake.base_url, flavor))


def test_every_choice_is_recorded_and_given_back_in_order(
    recorded: tuple[Path, Any], flavor: str, replay_offline: ReplayOffline
) -> None:
    path, live = recorded
    steps = json.loads(path.read_text(encoding="utf-8"))["steps"]
    assert steps[0]["payload"]["params"]["choiceCount"] == 2
    assert steps[1]["payload"] == {
        "type": "final_answer",
        "text": "Paris is sunny.",
        "choices": [
            {
                "type": "tool_calls",
                "calls": [{"toolCallId": "call-0", "toolName": "lookup", "toolInput": {"city": "Paris"}}],
            }
        ],
    }
    assert steps[2]["payload"]["messages"][1]["content"][0]["toolCallId"] == "call-0"
    assert steps[3]["payload"]["choices"] == [{"type": "final_answer", "text": "It is sunny."}]
    assert verify_trace(path).ok  # neutral: no provider id, no key the original's verify flags
    replayed = replay_offline(path, lambda fake, _: chat(fake.base_url, flavor))
    assert replayed == live
    assert replayed[0][1] == (1, "tool_calls", None, [("lookup", {"city": "Paris"})])


def test_asking_for_another_number_of_choices_diverges(
    recorded: tuple[Path, Any],
    flavor: str,
    replay_diverges: ReplayDiverges,
) -> None:
    path, _ = recorded
    error = replay_diverges(path, lambda fake, _: chat(fake.base_url, flavor, n=3), openai.APIError)
    assert error.path == "params.choiceCount"


# -- Gemini candidateCount ---------------------------------------------------------------------


def gemini_chat(base_url: str, flavor: str, count: int = 2) -> Any:
    """Ask for ``count`` candidates, go on with the second: what the SDK handed the agent each time."""
    client = genai.Client(api_key="not-a-key", http_options=types.HttpOptions(base_url=base_url))
    declaration = types.FunctionDeclaration(
        name="lookup",
        description="Look a city up.",
        parameters_json_schema=TOOLS[0]["function"]["parameters"],
    )
    config = types.GenerateContentConfig(
        candidate_count=count, tools=[types.Tool(function_declarations=[declaration])]
    )
    question = types.Content(role="user", parts=[types.Part(text="Weather in Paris?")])

    async def ask(contents: list[Any]) -> list[Any]:
        """Each candidate as ``(index, finish reason, parts as JSON without call ids)``, a stream's
        chunks gathered (a replay hands out neutral call ids)."""
        options: Any = {"model": "gemini-2.5-flash", "contents": contents, "config": config}
        responses: list[Any]
        if flavor == "sync":
            responses = [client.models.generate_content(**options)]
        elif flavor == "async":
            responses = [await client.aio.models.generate_content(**options)]
        else:
            responses = [chunk async for chunk in await client.aio.models.generate_content_stream(**options)]
        found: dict[int, Any] = {}
        for response in responses:
            for candidate in response.candidates or []:
                index, parts = candidate.index or 0, (candidate.content.parts or [])
                seen = found.setdefault(index, [index, None, []])
                seen[1] = candidate.finish_reason or seen[1]
                for part in parts:  # a stream's text pieces joined: a replay cuts other pieces
                    value = json.loads(
                        part.model_dump_json(exclude_none=True, exclude={"function_call": {"id"}})
                    )
                    if seen[2] and "text" in seen[2][-1] and "text" in value:
                        seen[2][-1]["text"] += value["text"]
                    else:
                        seen[2].append(value)
        return [tuple(found[index]) for index in sorted(found)]

    async def converse() -> Any:
        first = await ask([question])
        picked = types.Content(role="model", parts=[types.Part.model_validate(p) for p in first[1][2]])
        result = types.Part.from_function_response(name="lookup", response={"weather": "sunny"})
        second = await ask([question, picked, types.Content(role="user", parts=[result])])
        return [first, second]

    return asyncio.run(converse())


@pytest.fixture
def gemini_recorded(flavor: str, record_once: RecordOnce) -> tuple[Path, Any]:
    def queue(fake: FakeProvider) -> None:
        fake.queue_gemini_candidates(ANSWERS)
        fake.queue_gemini_candidates([("Sunny, as looked up.", []), ("It is sunny.", [])])

    return record_once("candidates.json", queue, lambda fake, _: gemini_chat(fake.gemini_base_url, flavor))


def test_every_candidate_is_recorded_and_given_back_in_order(
    gemini_recorded: tuple[Path, Any], flavor: str, replay_offline: ReplayOffline
) -> None:
    path, live = gemini_recorded
    steps = json.loads(path.read_text(encoding="utf-8"))["steps"]
    assert steps[0]["payload"]["params"]["choiceCount"] == 2
    assert steps[1]["payload"]["text"] == "Paris is sunny."
    assert steps[1]["payload"]["choices"] == [
        {
            "type": "tool_calls",
            "calls": [{"toolCallId": "call-0", "toolName": "lookup", "toolInput": {"city": "Paris"}}],
        }
    ]
    assert steps[2]["payload"]["messages"][1]["content"][0]["toolCallId"] == "call-0"
    assert verify_trace(path).ok
    replayed = replay_offline(path, lambda fake, _: gemini_chat(fake.gemini_base_url, flavor))
    assert replayed == live
    assert replayed[0][1][2] == [{"function_call": {"args": {"city": "Paris"}, "name": "lookup"}}]


def test_asking_for_another_number_of_candidates_diverges(
    gemini_recorded: tuple[Path, Any],
    flavor: str,
    replay_diverges: ReplayDiverges,
) -> None:
    path, _ = gemini_recorded
    error = replay_diverges(
        path, lambda fake, _: gemini_chat(fake.gemini_base_url, flavor, count=3), errors.ClientError
    )
    assert error.path == "params.choiceCount"
