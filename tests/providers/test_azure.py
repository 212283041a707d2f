"""Azure OpenAI through the real ``AzureOpenAI`` / ``AsyncAzureOpenAI``: recorded, replayed keyless.

The replay runs with no Azure key or token in the environment (the session's placeholder lets the
client start), with the fake provider stopped and the network blocked (docs/providers.md#azure-openai).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox import ReplayDivergenceError, blackbox
from pytest_blackbox.engine import OFFLINE_PLACEHOLDER_KEY, set_placeholder_keys
from pytest_blackbox.testing import FakeProvider
from tests.conftest import NetworkGuard

openai = pytest.importorskip("openai")

KEY = "azure-suite-key-0123456789abcdef"
TOKEN = "eyJazure-entra-token-0123456789abcdef"
API_VERSION = "2024-10-21"
DEPLOYMENT = "gpt-4o-travel"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def get_weather(city: str) -> str:
    return json.dumps({"city": city, "temp": 18})


async def _settle(value: Any) -> Any:
    return await value if asyncio.iscoroutine(value) else value


def _client(is_async: bool, endpoint: str, credential: str | None) -> Any:
    """The client as users build it; ``credential``: an Entra ID token, else the key from the env."""
    options: dict[str, Any] = {"azure_endpoint": endpoint, "api_version": API_VERSION, "max_retries": 0}
    if credential is not None:
        options["azure_ad_token"] = credential
    return (openai.AsyncAzureOpenAI if is_async else openai.AzureOpenAI)(**options)


async def _agent(client: Any, tools: dict[str, Any], *, system: str, stream: bool) -> str:
    """A tool loop over Chat Completions on the deployment, streamed or not."""
    messages: list[Any] = [
        {"role": "system", "content": system},
        {"role": "user", "content": "Weather in Oslo?"},
    ]
    try:
        for _ in range(3):
            if stream:
                manager = client.chat.completions.stream(model=DEPLOYMENT, messages=messages, tools=[WEATHER])
                if hasattr(manager, "__aenter__"):
                    async with manager as events:
                        completion = await events.get_final_completion()
                else:
                    with manager as events:
                        completion = events.get_final_completion()
            else:
                completion = await _settle(
                    client.chat.completions.create(model=DEPLOYMENT, messages=messages, tools=[WEATHER])
                )
            message = completion.choices[0].message
            if not message.tool_calls:
                return str(message.content)
            messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
            for call in message.tool_calls:
                result = tools[call.function.name](**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        return "gave up"
    finally:
        await _settle(client.close())


def _run(is_async: bool, endpoint: str, credential: str | None, *, system: str, stream: bool, bb: Any) -> str:
    tools = bb.tools({"get_weather": get_weather})
    return asyncio.run(_agent(_client(is_async, endpoint, credential), tools, system=system, stream=stream))


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("credential", ["key", "entra"])
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_azure_records_and_replays_keyless(
    is_async: bool,
    credential: str,
    stream: bool,
    fake_provider: FakeProvider,
    clean_env: pytest.MonkeyPatch,
    network_guard: NetworkGuard,
    tmp_path: Path,
) -> None:
    token = TOKEN if credential == "entra" else None
    if token is None:
        clean_env.setenv("AZURE_OPENAI_API_KEY", KEY)
    fake_provider.queue_openai_tool_calls([("get_weather", {"city": "Oslo"})])
    fake_provider.queue_openai_text("Oslo is 18C.")
    path = tmp_path / "azure.json"
    endpoint = fake_provider.base_url
    recording = blackbox(mode="record", out=path)
    answer = _run(is_async, endpoint, token, system="Be brief.", stream=stream, bb=recording)
    recording.finish(result=answer)
    assert answer == "Oslo is 18C."
    paths = [request.path for request in fake_provider.requests]
    assert paths == [f"/openai/deployments/{DEPLOYMENT}/chat/completions"] * 2
    sent_credential = {"api-key": KEY} if token is None else {"authorization": f"Bearer {TOKEN}"}
    assert sent_credential.items() <= fake_provider.requests[0].headers.items()
    written = path.read_text(encoding="utf-8")
    assert KEY not in written and TOKEN not in written
    assert json.loads(written)["steps"][0]["payload"]["model"] == DEPLOYMENT

    # The replay: no key or token anywhere, the provider gone, every connection refused.
    sent = len(fake_provider.requests)
    fake_provider.stop()
    clean_env.delenv("AZURE_OPENAI_API_KEY", raising=False)
    attempts = network_guard.block()
    with clean_env.context() as env:
        for name in set_placeholder_keys({}):
            env.setenv(name, OFFLINE_PLACEHOLDER_KEY)
        replay = blackbox(mode="replay", cassette=path)
        replayed = _run(is_async, endpoint, None, system="Be brief.", stream=stream, bb=replay)
        replay.finish(result=replayed)
        assert replayed == answer

        changed = blackbox(mode="replay", cassette=path)
        with pytest.raises(openai.APIError):  # the diverging call is answered with a refusal
            _run(is_async, endpoint, None, system="Be chatty.", stream=stream, bb=changed)
        with pytest.raises(ReplayDivergenceError) as divergence:
            changed.finish(result=replayed)
        assert divergence.value.path == "systemPrompt"
    assert attempts == [] and len(fake_provider.requests) == sent


@pytest.mark.parametrize("credential", ["AZURE_OPENAI_AD_TOKEN", "AZURE_API_KEY", "AZURE_AD_TOKEN"])
def test_azure_key_variables_get_the_placeholder(credential: str) -> None:
    """An ``AzureOpenAI()`` built from the environment starts with only the placeholder set; none is
    set beside an Entra ID token, or beside the key or token in LiteLLM's variables, which LiteLLM
    reads after AZURE_OPENAI_API_KEY (a placeholder there would be sent instead)."""
    env: dict[str, str] = {}
    assert "AZURE_OPENAI_API_KEY" in set_placeholder_keys(env)
    assert env["AZURE_OPENAI_API_KEY"] == OFFLINE_PLACEHOLDER_KEY
    assert "AZURE_OPENAI_API_KEY" not in set_placeholder_keys({credential: TOKEN})


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_the_deployment_is_compared_and_the_v1_paths_record(
    is_async: bool, api: str, fake_provider: FakeProvider, clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A deployment path records its deployment; another deployment diverges; ``/openai/v1`` has none."""
    clean_env.setenv("AZURE_OPENAI_API_KEY", KEY)
    endpoint = fake_provider.base_url

    def client(deployment: str | None) -> Any:
        """Azure's deployment path, or its v1 API through the plain client (as Azure documents it)."""
        if deployment is None:
            plain = openai.AsyncOpenAI if is_async else openai.OpenAI
            return plain(base_url=f"{endpoint}/openai/v1", api_key=KEY, max_retries=0)
        cls = openai.AsyncAzureOpenAI if is_async else openai.AzureOpenAI
        base_url = f"{endpoint}/openai/deployments/{deployment}"
        return cls(base_url=base_url, api_version=API_VERSION, max_retries=0)

    def ask(deployment: str | None, session: Any) -> Any:
        async def go(sdk: Any) -> None:
            try:
                if api == "chat":
                    messages = [{"role": "user", "content": "hi"}]
                    await _settle(sdk.chat.completions.create(model="gpt-4o", messages=messages))
                else:
                    await _settle(sdk.responses.create(model="gpt-4o", input="hi"))
            finally:
                await _settle(sdk.close())

        asyncio.run(go(client(deployment)))
        return session

    def payload(path: Path) -> dict[str, Any]:
        step: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["steps"][0]["payload"]
        return step

    queue = fake_provider.queue_openai_text if api == "chat" else fake_provider.queue_responses_text
    for deployment in ("travel-prod", None):
        queue("hello")
        path = tmp_path / f"{deployment}.json"
        ask(deployment, blackbox(mode="record", out=path)).finish(result="ok")
        assert (payload(path).get("params") or {}).get("azureDeployment") == deployment
    route = "chat/completions" if api == "chat" else "responses"
    paths = [request.path for request in fake_provider.requests]
    assert paths == [f"/openai/deployments/travel-prod/{route}", f"/openai/v1/{route}"]

    ask("travel-prod", blackbox(mode="replay", cassette=tmp_path / "travel-prod.json")).finish(result="ok")
    changed = blackbox(mode="replay", cassette=tmp_path / "travel-prod.json")
    with pytest.raises(openai.APIError):
        ask("travel-staging", changed)
    with pytest.raises(ReplayDivergenceError) as divergence:
        changed.finish(result="ok")
    assert divergence.value.path == "params.azureDeployment"
    assert len(fake_provider.requests) == 2
