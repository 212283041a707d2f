"""Amazon Bedrock's roads record and replay: ``AnthropicBedrock`` (sync and async, plain and streamed)
and ``bedrock-runtime`` through boto3 and, async, aiobotocore (``converse``, ``converse_stream``,
``invoke_model`` and ``invoke_model_with_response_stream`` with Anthropic bodies).

Each flavor runs the same tool-using agent against the fake provider, whose Bedrock paths answer in
Bedrock's shapes (the AWS event stream included), and proves the framework contract: the replay is
offline and runs no tool, and a changed system prompt fails at ``systemPrompt``. The AWS credentials
are the suite's obviously fake ones; docs/providers.md#anthropic-on-amazon-bedrock.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.engine.keys import OFFLINE_PLACEHOLDER_KEY
from pytest_blackbox.engine.session import Session
from pytest_blackbox.testing.fake_provider import FakeProvider
from tests.conftest import NetworkGuard

from .conftest import INSTRUCTIONS, LOCAL_TIME, WEATHER, TravelTools, go_keyless, payload, step_types
from .conftest import TWO_TOOLS_THEN_ANSWER as STEP_TYPES
from .contract import Recording, fails_strictly, record, replays_offline

anthropic = pytest.importorskip("anthropic")
boto3 = pytest.importorskip("boto3", reason="boto3 is not installed (pip install 'pytest-blackbox[test]')")
aiobotocore = pytest.importorskip(
    "aiobotocore.session", reason="aiobotocore is not installed (pip install 'pytest-blackbox[test]')"
)

MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
PROMPT = "What's the weather and the local time in Paris?"
FINAL = "Paris is clear at 21 °C, and it is 14:05 there."
CALLS = [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
DESCRIPTIONS = (("get_weather", "Current weather for a city."), ("get_time", "Local time."))
#: Obviously fake AWS credentials, for recording against the fake provider only.
AWS = {
    "AWS_ACCESS_KEY_ID": "AKIABLACKBOXFAKE0001",
    "AWS_SECRET_ACCESS_KEY": "blackbox-fake-secret-access-key-0123456789",
    "AWS_SESSION_TOKEN": "blackbox-fake-session-token-0123456789abcdef",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@dataclass(frozen=True)
class Flavor:
    """A client of Bedrock and the way it is called."""

    client: str
    style: str

    @property
    def streamed(self) -> bool:
        return self.style.endswith("stream")

    @property
    def is_async(self) -> bool:
        return self.style.startswith("async")

    def script(self, fake: FakeProvider) -> None:
        queue = (
            fake.queue_converse_tool_calls if self.client == "converse" else fake.queue_anthropic_tool_calls
        )
        queue(CALLS)
        queue([], text=FINAL)


FLAVORS = [
    *(
        pytest.param(Flavor("anthropic", style), id=f"anthropic-bedrock-{style}")
        for style in ("sync", "sync-stream", "async", "async-stream")
    ),
    *(
        pytest.param(Flavor(client, style), id=f"{library}-{client}-{style}")
        for client in ("converse", "invoke")
        for library, styles in (
            ("boto3", ("sync", "sync-stream")),
            ("aiobotocore", ("async", "async-stream")),
        )
        for style in styles
    ),
]


@pytest.fixture(autouse=True)
def _aws(provider_keys: pytest.MonkeyPatch) -> None:
    for name, value in AWS.items():
        provider_keys.setenv(name, value)


# -- the agent over each client ------------------------------------------------------------------


def anthropic_tools() -> list[dict[str, Any]]:
    return [{"name": name, "description": text, "input_schema": CITY} for name, text in DESCRIPTIONS]


async def anthropic_call(flavor: Flavor, root: str, system: str, messages: list[Any]) -> Any:
    """One Messages call through ``AnthropicBedrock`` or ``AsyncAnthropicBedrock``."""
    options = {
        "model": MODEL,
        "max_tokens": 512,
        "system": system,
        "messages": messages,
        "tools": anthropic_tools(),
    }
    if flavor.is_async:
        client = anthropic.AsyncAnthropicBedrock(base_url=root)
        if flavor.streamed:
            async with client.messages.stream(**options) as stream:
                return await stream.get_final_message()
        return await client.messages.create(**options)
    sync = anthropic.AnthropicBedrock(base_url=root)
    if flavor.streamed:
        with sync.messages.stream(**options) as stream:
            return stream.get_final_message()
    return sync.messages.create(**options)


def run_anthropic(flavor: Flavor, root: str, bb: Session, travel: TravelTools, instructions: str) -> str:
    tools = bb.tools({"get_weather": travel.get_weather, "get_time": travel.get_time})
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    while True:
        message = asyncio.run(anthropic_call(flavor, root, instructions, messages))
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in message.content if block.type == "text")
        messages.append(
            {
                "role": "assistant",
                "content": [block.model_dump(exclude_none=True) for block in message.content],
            }
        )
        results = [
            {
                "type": "tool_result",
                "tool_use_id": use.id,
                "content": json.dumps(tools[use.name](**use.input)),
            }
            for use in uses
        ]
        messages.append({"role": "user", "content": results})


async def runtime_call(flavor: Flavor, root: str, operation: str, **options: Any) -> Any:
    """One ``bedrock-runtime`` call through boto3 or aiobotocore: the answer, or the events of its stream
    (read while the aiobotocore client is open), or the body ``invoke_model`` returns."""
    if not flavor.is_async:
        # a session per call, as aiobotocore's: boto3's default one would keep the recording's credentials
        client = boto3.session.Session().client("bedrock-runtime", endpoint_url=root)
        answer = getattr(client, operation)(**options)
        if flavor.streamed:
            return list(answer.get("stream") or answer["body"])
        return answer["body"].read() if "body" in answer else answer
    session = aiobotocore.get_session()
    async with session.create_client("bedrock-runtime", endpoint_url=root) as client:
        answer = await getattr(client, operation)(**options)
        if flavor.streamed:
            return [event async for event in answer.get("stream") or answer["body"]]
        return await answer["body"].read() if "body" in answer else answer


def converse_call(flavor: Flavor, root: str, system: str, messages: list[Any]) -> dict[str, Any]:
    """One Converse call; a stream is added up from its events as the boto3 documentation shows."""
    tools = [
        {"toolSpec": {"name": name, "description": text, "inputSchema": {"json": CITY}}}
        for name, text in DESCRIPTIONS
    ]
    options = {
        "modelId": MODEL,
        "system": [{"text": system}],
        "messages": messages,
        "toolConfig": {"tools": tools},
        "inferenceConfig": {"maxTokens": 512},
    }
    if not flavor.streamed:
        return asyncio.run(runtime_call(flavor, root, "converse", **options))["output"]["message"]  # type: ignore[no-any-return]
    blocks: dict[int, dict[str, Any]] = {}
    inputs: dict[int, str] = {}
    for event in asyncio.run(runtime_call(flavor, root, "converse_stream", **options)):
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            blocks[start["contentBlockIndex"]] = {"toolUse": dict(start["start"]["toolUse"])}
        elif "contentBlockDelta" in event:
            index, delta = (
                event["contentBlockDelta"]["contentBlockIndex"],
                event["contentBlockDelta"]["delta"],
            )
            if "text" in delta:
                blocks.setdefault(index, {"text": ""})["text"] += delta["text"]
            else:
                inputs[index] = inputs.get(index, "") + delta["toolUse"]["input"]
    for index, text in inputs.items():
        blocks[index]["toolUse"]["input"] = json.loads(text)
    return {"role": "assistant", "content": [blocks[index] for index in sorted(blocks)]}


def run_converse(flavor: Flavor, root: str, bb: Session, travel: TravelTools, instructions: str) -> str:
    tools = bb.tools({"get_weather": travel.get_weather, "get_time": travel.get_time})
    messages: list[Any] = [{"role": "user", "content": [{"text": PROMPT}]}]
    while True:
        message = converse_call(flavor, root, instructions, messages)
        uses = [block["toolUse"] for block in message["content"] if "toolUse" in block]
        if not uses:
            return "".join(block.get("text", "") for block in message["content"])
        messages.append(message)
        results = [
            {
                "toolResult": {
                    "toolUseId": use["toolUseId"],
                    "content": [{"json": tools[use["name"]](**use["input"])}],
                }
            }
            for use in uses
        ]
        messages.append({"role": "user", "content": results})


def invoke_call(flavor: Flavor, root: str, system: str, messages: list[Any]) -> dict[str, Any]:
    """One InvokeModel call with an Anthropic body; a stream's chunks are Messages stream events."""
    body = json.dumps(
        {
            "anthropic_version": "bedrock-2023-05-31",
            "max_tokens": 512,
            "system": system,
            "messages": messages,
            "tools": anthropic_tools(),
        }
    )
    if not flavor.streamed:
        return json.loads(asyncio.run(runtime_call(flavor, root, "invoke_model", modelId=MODEL, body=body)))  # type: ignore[no-any-return]
    content: list[dict[str, Any]] = []
    inputs: dict[int, str] = {}
    stream = asyncio.run(
        runtime_call(flavor, root, "invoke_model_with_response_stream", modelId=MODEL, body=body)
    )
    for event in stream:
        data = json.loads(event["chunk"]["bytes"])
        if data["type"] == "content_block_start":
            content.append(dict(data["content_block"]))
        elif data["type"] == "content_block_delta" and data["delta"]["type"] == "text_delta":
            content[data["index"]]["text"] += data["delta"]["text"]
        elif data["type"] == "content_block_delta":
            inputs[data["index"]] = inputs.get(data["index"], "") + data["delta"]["partial_json"]
    for index, text in inputs.items():
        content[index]["input"] = json.loads(text)
    return {"content": content}


def run_invoke(flavor: Flavor, root: str, bb: Session, travel: TravelTools, instructions: str) -> str:
    tools = bb.tools({"get_weather": travel.get_weather, "get_time": travel.get_time})
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    while True:
        content = invoke_call(flavor, root, instructions, messages)["content"]
        uses = [block for block in content if block["type"] == "tool_use"]
        if not uses:
            return "".join(block["text"] for block in content if block["type"] == "text")
        messages.append({"role": "assistant", "content": content})
        results = [
            {
                "type": "tool_result",
                "tool_use_id": use["id"],
                "content": json.dumps(tools[use["name"]](**use["input"])),
            }
            for use in uses
        ]
        messages.append({"role": "user", "content": results})


RUNS = {"anthropic": run_anthropic, "converse": run_converse, "invoke": run_invoke}


def run(flavor: Flavor, root: str, bb: Session, travel: TravelTools, instructions: str = INSTRUCTIONS) -> str:
    return RUNS[flavor.client](flavor, root, bb, travel, instructions)


# -- the contract --------------------------------------------------------------------------------


@pytest.fixture
def recorded(
    fake_provider: FakeProvider, flavor: Flavor, tmp_path: Path, sessions: Callable[..., Session]
) -> Recording:
    flavor.script(fake_provider)
    recording, answer, tools = record(
        fake_provider, tmp_path / "bedrock.json", sessions, partial(run, flavor)
    )
    assert answer == FINAL
    assert tools.calls == [("get_weather", "Paris"), ("get_time", "Paris")]
    return recording


def test_the_recording_holds_the_model_from_the_path_and_no_aws_credential(recorded: Recording) -> None:
    """One recording read twice: the run as the agent made it, then every credential kept out."""
    assert step_types(recorded.path) == STEP_TYPES
    first = payload(recorded.path, 0)
    assert (first["systemPrompt"], first["model"]) == (INSTRUCTIONS, MODEL)
    assert [definition["name"] for definition in first["tools"]] == ["get_weather", "get_time"]
    assert [call["toolName"] for call in payload(recorded.path, 1)["calls"]] == ["get_weather", "get_time"]
    assert payload(recorded.path, 3)["result"] == WEATHER
    assert payload(recorded.path, 5)["result"] == LOCAL_TIME
    assert payload(recorded.path, 7)["text"] == FINAL
    text = recorded.path.read_text(encoding="utf-8")
    for secret in (AWS["AWS_ACCESS_KEY_ID"], AWS["AWS_SECRET_ACCESS_KEY"], AWS["AWS_SESSION_TOKEN"]):
        assert secret not in text
    assert "Signature" not in text and "AWS4-HMAC" not in text


@pytest.fixture
def keyless(recorded: Recording, provider_keys: pytest.MonkeyPatch) -> Recording:
    """The recording, replayed with no key and no AWS credential set: only the placeholders the
    pytest plugin sets before conftests load (here set as it sets them)."""
    go_keyless(provider_keys)
    assert os.environ["AWS_ACCESS_KEY_ID"] == OFFLINE_PLACEHOLDER_KEY
    return recorded


def test_replay_is_offline_and_a_changed_instruction_fails_strictly(
    keyless: Recording, flavor: Flavor, network_guard: NetworkGuard, sessions: Callable[..., Session]
) -> None:
    """One recording, replayed as recorded (offline, no tool run), then with changed instructions."""
    replays_offline(keyless, network_guard, sessions, partial(run, flavor), final=FINAL, steps=9)
    rejected = anthropic.BadRequestError if flavor.client == "anthropic" else _client_error()
    fails_strictly(keyless, network_guard, sessions, partial(run, flavor), rejected)


def _client_error() -> type[BaseException]:
    from botocore.exceptions import ClientError

    error: type[BaseException] = ClientError
    return error
