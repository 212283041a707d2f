"""Nothing passes by unseen: a request to a model API that no protocol records fails the run naming it,
loopback or not, while recording and in a replay, and is never sent; a wrapped tool may make it."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from pytest_blackbox import BlackboxUnsupportedError, blackbox
from pytest_blackbox.testing import FakeProvider
from tests.agents.loop import settle

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
BEDROCK_MODEL = "anthropic.claude-sonnet-4-5-v1:0"
HAS_BOTOCORE = importlib.util.find_spec("botocore") is not None


def refusal(mode: str, shown: str, api: str) -> str:
    return (
        f"{mode} mode: POST {shown} is a call to {api}, which Blackbox does not record, so it was not "
        "sent (a cassette without it would look complete). Send the model call through a client "
        "Blackbox records (docs/providers.md), or make it inside a wrapped tool (blackbox.tool)"
    )


def bedrock_client(base_url: str, is_async: bool) -> Any:
    kind: Any = anthropic.AsyncAnthropicBedrock if is_async else anthropic.AnthropicBedrock
    return kind(
        base_url=base_url,
        aws_access_key="AKIAIOSFODNN7EXAMPLE",
        aws_secret_key=AWS_SECRET,
        aws_region="us-east-1",
        max_retries=0,
    )


@pytest.mark.skipif(not HAS_BOTOCORE, reason="AnthropicBedrock signs with botocore (pip install boto3)")
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_anthropic_on_bedrock_fails_the_recording_instead_of_passing_by_unrecorded(
    fake_provider: FakeProvider, tmp_path: Path, is_async: bool, provider_keys: pytest.MonkeyPatch
) -> None:
    session = blackbox(mode="record", out=tmp_path / "run.json")
    api = bedrock_client(fake_provider.base_url, is_async)
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(anthropic.APIConnectionError):
        asyncio.run(settle(api.messages.create(model=BEDROCK_MODEL, max_tokens=16, messages=messages)))
    with pytest.raises(BlackboxUnsupportedError) as caught:
        session.finish()
    shown = f"{fake_provider.base_url}/model/{BEDROCK_MODEL}/invoke"
    assert str(caught.value) == refusal("record", shown, "Amazon Bedrock's InvokeModel")
    assert AWS_SECRET not in str(caught.value)
    assert fake_provider.requests == []
    assert list(tmp_path.iterdir()) == []


PATHS = {
    "/model/amazon.nova-pro-v1:0/converse-stream": "Amazon Bedrock's Converse API",
    "/v1/projects/p/locations/us-east5/publishers/meta/models/llama-4:streamRawPredict": (
        "Vertex AI's rawPredict"
    ),
    "/v1/complete": "the Anthropic Text Completions API",
    "/v1/completions": "the OpenAI Completions API (legacy)",
    "/v1/messages/": "the Anthropic Messages API, on a path the routes do not cover",
}


@pytest.mark.parametrize("mode", ["record", "replay"])
@pytest.mark.parametrize("path", list(PATHS))
def test_a_model_api_path_on_loopback_is_refused_and_never_sent(
    fake_provider: FakeProvider, tmp_path: Path, path: str, mode: str, provider_keys: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "run.json"
    blackbox(mode="record", out=cassette).finish(result="empty")
    session = blackbox(mode="record", out=tmp_path / "again.json") if mode == "record" else None
    session = session or blackbox(mode="replay", cassette=cassette)
    url = f"{fake_provider.base_url}{path}?key=AIzaSyQueryKey0123456789abcdefghijklmnop"
    with pytest.raises(BlackboxUnsupportedError) as caught:
        httpx2.post(url, json={"prompt": "hi"})
    assert str(caught.value) == refusal(mode, fake_provider.base_url + path, PATHS[path])
    assert fake_provider.requests == []
    with pytest.raises(BlackboxUnsupportedError):
        session.finish()
    assert not (tmp_path / "again.json").exists()


def test_any_request_to_a_model_api_host_is_refused_naming_the_host(tmp_path: Path) -> None:
    """Embeddings on OpenAI's host: not a model call Blackbox records (a mock transport answers it)."""
    sent: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(str(request.url))
        return httpx2.Response(200)

    transport = httpx2.MockTransport(answer)
    session = blackbox(mode="record", out=tmp_path / "run.json")
    with pytest.raises(BlackboxUnsupportedError) as caught, httpx2.Client(transport=transport) as http:
        http.post("https://api.openai.com/v1/embeddings", json={"input": "hi"})
    assert str(caught.value) == refusal("record", "https://api.openai.com/v1/embeddings", "the OpenAI API")
    assert sent == []
    session.discard()


def test_other_requests_on_loopback_pass_and_a_wrapped_tool_may_call_a_model_api(
    fake_provider: FakeProvider, tmp_path: Path
) -> None:
    fake_provider.queue_status(200, {"data": []})
    fake_provider.queue_status(200, {"completion": "from the tool"})
    session = blackbox(mode="record", out=tmp_path / "run.json")
    assert httpx2.post(fake_provider.base_url + "/v1/models", json={}).json() == {"data": []}

    def complete() -> Any:
        return httpx2.post(fake_provider.base_url + "/v1/complete").json()

    assert session.tool("complete", complete)() == {"completion": "from the tool"}
    session.finish(result="done")
    assert [request.path for request in fake_provider.requests] == ["/v1/models", "/v1/complete"]
