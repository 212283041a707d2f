"""The roads to a model that ``replay_bench.py --roads`` measures: one tool-using agent per wire protocol,
its client for each road, and each road's floor.

A road is a client of one cloud: the Anthropic SDK direct, ``AnthropicVertex`` (Vertex AI's
``:rawPredict``), ``AnthropicBedrock`` (Bedrock's ``/invoke``, signed with SigV4), ``AzureOpenAI``
(Chat Completions on a deployment path) and ``bedrock-runtime`` ``converse`` through boto3 and
aiobotocore. Each road's floor is the same client doing all of its own work (building, signing and
parsing every call) with prebuilt answers in place of the network: an ``httpx2.MockTransport`` for
the httpx-based SDKs, and for boto3 and aiobotocore a ``before-send`` handler returning the
library's own response over the bytes (the hook botocore's ``Stubber`` answers from, one step later
so the response is parsed as it would be off the wire). aiobotocore's client is driven call by call
on one event loop of its own (``run_until_complete``), which both of its variants pay. The agent
makes ``calls`` model calls (one ``lookup`` tool round each but the last), every request carrying
the whole history, like ``replay_bench``'s Anthropic agent.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import aiobotocore.session
import anthropic
import boto3
import httpx2
import openai
from aiobotocore.awsrequest import AioAWSResponse
from botocore.awsrequest import AWSResponse, HeadersDict
from urllib3.response import HTTPResponse

from pytest_blackbox.testing import FakeProvider

SYSTEM = "You are a research assistant. Look up every item before answering."
DESCRIPTION = "Look up one numbered item."
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
TOOLS = [{"name": "lookup", "description": DESCRIPTION, "input_schema": SCHEMA}]
#: Obviously fake credentials: the clients sign with them, the fake provider never checks them.
AWS = {"aws_access_key_id": "AKIABENCHFAKE0000001", "aws_secret_access_key": "bench-fake-secret-access-key"}
REGION = "us-east-1"

Tools = dict[str, Callable[..., Any]]
#: The next prebuilt answer of the run being replayed.
NextBody = Callable[[], bytes]


def messages_agent(client: Any, model: str, calls: int, tools: Tools) -> str:
    """The Anthropic Messages agent, through the direct, Vertex or Bedrock client."""
    messages: list[Any] = [{"role": "user", "content": f"Look up items 0 to {calls - 2}."}]
    for _ in range(calls):
        response = client.messages.create(
            model=model, max_tokens=256, system=SYSTEM, messages=messages, tools=TOOLS
        )
        uses = [block for block in response.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in response.content if block.type == "text")
        messages.append({"role": "assistant", "content": response.content})
        results = [
            {
                "type": "tool_result",
                "tool_use_id": use.id,
                "content": json.dumps(tools[use.name](**use.input)),
            }
            for use in uses
        ]
        messages.append({"role": "user", "content": results})
    raise RuntimeError("the agent did not finish")


def chat_agent(client: Any, model: str, calls: int, tools: Tools) -> str:
    """The same agent over Chat Completions (Azure OpenAI)."""
    definitions = [
        {"type": "function", "function": {"name": "lookup", "description": DESCRIPTION, "parameters": SCHEMA}}
    ]
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Look up items 0 to {calls - 2}."},
    ]
    for _ in range(calls):
        message = client.chat.completions.create(model=model, messages=messages, tools=definitions)
        message = message.choices[0].message
        if not message.tool_calls:
            return str(message.content)
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = tools[call.function.name](**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    raise RuntimeError("the agent did not finish")


def converse_agent(client: Any, model: str, calls: int, tools: Tools) -> str:
    """The same agent over Bedrock's Converse API (boto3)."""
    config = {
        "tools": [
            {"toolSpec": {"name": "lookup", "description": DESCRIPTION, "inputSchema": {"json": SCHEMA}}}
        ]
    }
    messages: list[Any] = [{"role": "user", "content": [{"text": f"Look up items 0 to {calls - 2}."}]}]
    for _ in range(calls):
        answer = client.converse(
            modelId=model, system=[{"text": SYSTEM}], messages=messages, toolConfig=config
        )
        message = answer["output"]["message"]
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
    raise RuntimeError("the agent did not finish")


def _mock(next_body: NextBody) -> httpx2.Client:
    headers = {"content-type": "application/json"}
    return httpx2.Client(
        transport=httpx2.MockTransport(
            lambda request: httpx2.Response(200, content=next_body(), headers=headers)
        )
    )


def _answered_by(client: Any, next_body: NextBody) -> Any:
    """A boto3 client whose ``before-send`` hands botocore its own response over the next answer's bytes."""

    def answer(request: Any, **_: Any) -> AWSResponse:
        raw = HTTPResponse(body=io.BytesIO(next_body()), preload_content=False)
        return AWSResponse(request.url, 200, HeadersDict({"content-type": "application/json"}), raw)

    client.meta.events.register("before-send", answer)
    return client


class _AioBody:
    """What aiobotocore reads of an answer that is not streamed: the whole body, awaited."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    async def read(self) -> bytes:
        return self._body


def _aio_answered_by(next_body: NextBody) -> Callable[..., Any]:
    """The async ``before-send`` handler of aiobotocore's floor: its own response over the next answer."""

    async def answer(request: Any, **_: Any) -> AioAWSResponse:
        headers = HeadersDict({"content-type": "application/json"})
        return AioAWSResponse(request.url, 200, headers, _AioBody(next_body()))

    return answer


class _AsyncRuntime:
    """aiobotocore's ``bedrock-runtime`` client called the way ``converse_agent`` calls boto3's: the
    client opened once on an event loop of its own, each call run to its end on that loop."""

    def __init__(self, base_url: str, before_send: Callable[..., Any] | None = None) -> None:
        self._loop = asyncio.new_event_loop()
        session = aiobotocore.session.get_session()
        opening = session.create_client("bedrock-runtime", endpoint_url=base_url, region_name=REGION, **AWS)
        self._client = self._loop.run_until_complete(opening.__aenter__())
        if before_send is not None:
            self._client.meta.events.register("before-send", before_send)

    def converse(self, **options: Any) -> Any:
        return self._loop.run_until_complete(self._client.converse(**options))


def _azure(base_url: str, http_client: httpx2.Client | None = None) -> Any:
    options: dict[str, Any] = {"http_client": http_client} if http_client is not None else {}
    return openai.AzureOpenAI(
        api_key="bench-azure-key", azure_endpoint=base_url, api_version="2024-10-21", max_retries=0, **options
    )


def _vertex(base_url: str, http_client: httpx2.Client | None = None) -> Any:
    options: dict[str, Any] = {"http_client": http_client} if http_client is not None else {}
    return anthropic.AnthropicVertex(
        region="us-east5",
        project_id="bench",
        access_token="bench-vertex-token",
        base_url=base_url + "/v1",
        max_retries=0,
        **options,
    )


def _bedrock(base_url: str, http_client: httpx2.Client | None = None) -> Any:
    options: dict[str, Any] = {"http_client": http_client} if http_client is not None else {}
    return anthropic.AnthropicBedrock(
        aws_access_key=AWS["aws_access_key_id"],
        aws_secret_key=AWS["aws_secret_access_key"],
        aws_region=REGION,
        base_url=base_url,
        max_retries=0,
        **options,
    )


def _anthropic(base_url: str, http_client: httpx2.Client | None = None) -> Any:
    options: dict[str, Any] = {"http_client": http_client} if http_client is not None else {}
    return anthropic.Anthropic(api_key="bench-key-not-secret", base_url=base_url, max_retries=0, **options)


def _runtime(base_url: str) -> Any:
    return boto3.client("bedrock-runtime", endpoint_url=base_url, region_name=REGION, **AWS)


@dataclass(frozen=True)
class Road:
    """One client of one cloud: how the fake provider is scripted, and the client live and on its floor."""

    name: str
    model: str
    agent: Callable[[Any, str, int, Tools], str]
    tool_round: Callable[[FakeProvider], Callable[..., None]]
    final: Callable[[FakeProvider], Callable[[str], None]]
    live: Callable[[str], Any]
    floor: Callable[[str, NextBody], Any]

    def script(self, fake: FakeProvider, calls: int) -> None:
        for n in range(calls - 1):
            self.tool_round(fake)([("lookup", {"n": n})], text=f"Looking up item {n}.")
        self.final(fake)("All items found.")

    def run(self, client: Any, calls: int, tools: Tools) -> str:
        return self.agent(client, self.model, calls, tools)


def _httpx_floor(build: Callable[..., Any]) -> Callable[[str, NextBody], Any]:
    return lambda base_url, next_body: build(base_url, _mock(next_body))


ROADS = {
    road.name: road
    for road in (
        Road(
            "anthropic",
            "claude-sonnet-5",
            messages_agent,
            lambda fake: fake.queue_anthropic_tool_calls,
            lambda fake: fake.queue_anthropic_text,
            _anthropic,
            _httpx_floor(_anthropic),
        ),
        Road(
            "vertex",
            "claude-sonnet-4-5@20250929",
            messages_agent,
            lambda fake: fake.queue_anthropic_tool_calls,
            lambda fake: fake.queue_anthropic_text,
            _vertex,
            _httpx_floor(_vertex),
        ),
        Road(
            "bedrock",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            messages_agent,
            lambda fake: fake.queue_anthropic_tool_calls,
            lambda fake: fake.queue_anthropic_text,
            _bedrock,
            _httpx_floor(_bedrock),
        ),
        Road(
            "azure",
            "gpt-4o-bench",
            chat_agent,
            lambda fake: fake.queue_openai_tool_calls,
            lambda fake: fake.queue_openai_text,
            _azure,
            _httpx_floor(_azure),
        ),
        Road(
            "converse",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            converse_agent,
            lambda fake: fake.queue_converse_tool_calls,
            lambda fake: fake.queue_converse_text,
            _runtime,
            lambda base_url, next_body: _answered_by(_runtime(base_url), next_body),
        ),
        Road(
            "aioconverse",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            converse_agent,
            lambda fake: fake.queue_converse_tool_calls,
            lambda fake: fake.queue_converse_text,
            _AsyncRuntime,
            lambda base_url, next_body: _AsyncRuntime(base_url, _aio_answered_by(next_body)),
        ),
    )
}


def turns(bodies: list[bytes]) -> tuple[list[Iterator[bytes]], NextBody]:
    """The floor's answers: a list to append each run's fresh iterator to, and the next answer of the
    latest run."""
    answers: list[Iterator[bytes]] = []
    return answers, lambda: next(answers[-1])
