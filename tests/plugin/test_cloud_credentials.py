"""No cloud credential reaches any output of a pytest run: Bedrock, Vertex AI and Azure, every report on.

One inner suite calls Amazon Bedrock (boto3 and aiobotocore, signed with SigV4 from an access key
id, a secret and a session token), Vertex AI (``AnthropicVertex`` with an OAuth bearer token, and
google-genai signing with Google's application default credentials: a token, a refresh token and a
client secret) and Azure OpenAI (an ``api-key`` header, and an Entra ID token). It records with
the junit XML and the markdown report on, records again with a changed system prompt into the
GitHub job summary, replays with no credential, and replays with the first system prompt (every
test diverges). The terminal of each run, every file left behind (cassettes, reports, junit files,
pytest's cache) and what the CLI shows of each cassette (``verify``, ``inspect``, the ``view``
page) hold none of the credentials, nor the SigV4 signatures the provider received
(docs/security.md#secrets).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_blackbox.testing import FakeProvider
from tests import OTHER_PLUGINS_OFF
from tests.conftest import cli_outputs

from .conftest import exact, summary

pytest.importorskip("boto3", reason="boto3 is not installed (pip install 'pytest-blackbox[test]')")
pytest.importorskip(
    "aiobotocore", reason="aiobotocore is not installed (pip install 'pytest-blackbox[test]')"
)
pytest.importorskip(
    "google.auth", reason="google-auth is not installed (pip install 'pytest-blackbox[test]')"
)

#: Obviously fake but realistic credentials, in the shapes the clouds hand out.
AWS = {
    "AWS_ACCESS_KEY_ID": "AKIAQX7LM2PV9RT4WZ8Y",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYqq3Fk8Zt2w",
    "AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjEBlackboxFakeSessionToken0123456789abcdefghijklmn",
    "AWS_DEFAULT_REGION": "us-west-2",
}
VERTEX_TOKEN = "ya29.a0AfB_byBlackboxFakeVertexAccessToken0123456789"
#: Google's application default credentials of a user, as ``gcloud auth application-default login`` writes.
GOOGLE_USER = {
    "type": "authorized_user",
    "client_id": "764086051850-blackboxfake.apps.googleusercontent.com",
    "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty",
    "refresh_token": "1//0gBlackboxFakeRefreshToken0123456789abcdefghijklmnop",
    "token": "ya29.a0AfB_byBlackboxFakeGeminiAccessToken9876543210",
    "expiry": "2999-01-01T00:00:00Z",
}
AZURE_KEY = "3f9c2e1b5d7a4c8e9f0a1b2c3d4e5f6a"
ENTRA_TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJibGFja2JveC1mYWtlIn0.c2lnbmF0dXJl"

AGENT = '''
"""One question to each cloud, with the credentials the environment (or the caller) gives."""
import os

import aiobotocore.session
import anthropic
import boto3
import openai
from google import genai
from google.genai import types

URL = os.environ["FAKE_CLOUD_URL"]
SYSTEM = os.environ["AGENT_SYSTEM"]
BEDROCK_MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"


def _converse_options(question):
    messages = [{"role": "user", "content": [{"text": question}]}]
    return {"modelId": BEDROCK_MODEL, "system": [{"text": SYSTEM}], "messages": messages}


def _converse_text(answer):
    return answer["output"]["message"]["content"][0]["text"]


def bedrock(question):
    # a session of its own: boto3's default one keeps the credentials it first found, for the process
    runtime = boto3.session.Session().client("bedrock-runtime", endpoint_url=URL)
    return _converse_text(runtime.converse(**_converse_options(question)))


async def bedrock_async(question):
    session = aiobotocore.session.get_session()
    async with session.create_client("bedrock-runtime", endpoint_url=URL) as runtime:
        return _converse_text(await runtime.converse(**_converse_options(question)))


def vertex(question):
    client = anthropic.AnthropicVertex(
        region="us-east5", project_id="blackbox-suite", base_url=URL + "/v1", max_retries=0,
        access_token=os.environ.get("AGENT_VERTEX_TOKEN"),
    )
    messages = [{"role": "user", "content": question}]
    message = client.messages.create(
        model="claude-sonnet-4-5@20250929", max_tokens=64, system=SYSTEM, messages=messages
    )
    return message.content[0].text


def gemini(question):
    client = genai.Client(
        vertexai=True, project="blackbox-suite", location="us-central1",
        http_options=types.HttpOptions(base_url=URL),
    )
    config = types.GenerateContentConfig(system_instruction=SYSTEM)
    return client.models.generate_content(model="gemini-2.5-flash", contents=question, config=config).text


def azure(question, token=None):
    client = openai.AzureOpenAI(
        azure_endpoint=URL, api_version="2024-10-21", azure_ad_token=token, max_retries=0
    )
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    completion = client.chat.completions.create(model="gpt-4o-prod", messages=messages)
    return completion.choices[0].message.content
'''
TESTS = """
import asyncio
import os

import pytest

import agent


@pytest.mark.blackbox
def test_bedrock():
    assert agent.bedrock("hi") == "hello from bedrock"


@pytest.mark.blackbox
def test_bedrock_async():
    assert asyncio.run(agent.bedrock_async("hi")) == "hello from aiobotocore"


@pytest.mark.blackbox
def test_vertex():
    assert agent.vertex("hi") == "hello from vertex"


@pytest.mark.blackbox
def test_gemini():
    assert agent.gemini("hi") == "hello from gemini"


@pytest.mark.blackbox
def test_azure_key():
    assert agent.azure("hi") == "hello from azure"


@pytest.mark.blackbox
def test_azure_entra():
    assert agent.azure("hi", os.environ.get("AGENT_ENTRA_TOKEN")) == "hello from entra"
"""
TESTS_RUN = 6
#: pytest's cache stays on: what it writes is checked like every other file.


@pytest.fixture
def fake(bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    """The fake provider as every cloud's endpoint."""
    bare_dir.makepyfile(agent=AGENT, test_clouds=TESTS)
    clean_env.delitem(__import__("sys").modules, "agent", raising=False)
    clean_env.delenv("AZURE_OPENAI_AD_TOKEN", raising=False)
    with FakeProvider() as provider:
        clean_env.setenv("FAKE_CLOUD_URL", provider.base_url)
        yield provider


def _queue_answers(fake: FakeProvider) -> None:
    fake.queue_converse_text("hello from bedrock")
    fake.queue_converse_text("hello from aiobotocore")
    fake.queue_anthropic_text("hello from vertex")
    fake.queue_gemini_text("hello from gemini")
    fake.queue_openai_text("hello from azure")
    fake.queue_openai_text("hello from entra")


def _credentials(clean_env: pytest.MonkeyPatch, google: Path) -> None:
    for name, value in AWS.items():
        clean_env.setenv(name, value)
    google.write_text(json.dumps(GOOGLE_USER), encoding="utf-8")
    clean_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(google))
    clean_env.setenv("AGENT_VERTEX_TOKEN", VERTEX_TOKEN)
    clean_env.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    clean_env.setenv("AGENT_ENTRA_TOKEN", ENTRA_TOKEN)


def _record(
    bare_dir: pytest.Pytester, env: pytest.MonkeyPatch, fake: FakeProvider, system: str, *report: str
) -> pytest.RunResult:
    """Record every test again with ``system`` as the system prompt and ``report`` switched on."""
    env.setenv("AGENT_SYSTEM", system)
    _queue_answers(fake)
    result = bare_dir.runpytest(*OTHER_PLUGINS_OFF, "--record-mode=all", *report)
    result.assert_outcomes(passed=TESTS_RUN)
    return result


def _signatures(fake: FakeProvider) -> list[str]:
    """The SigV4 signature of every request that was signed with the AWS credentials."""
    signed = [request.headers.get("authorization", "") for request in fake.requests]
    return [header.rsplit("Signature=", 1)[1] for header in signed if header.startswith("AWS4-HMAC-SHA256")]


def test_no_cloud_credential_reaches_any_output_with_every_report_on(
    bare_dir: pytest.Pytester,
    clean_env: pytest.MonkeyPatch,
    fake: FakeProvider,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    _credentials(clean_env, tmp_path / "adc.json")
    runs = [
        _record(
            bare_dir, clean_env, fake, "Be brief.", "--junitxml=record.xml", "--blackbox-report=out/record.md"
        ),
    ]
    clean_env.setenv("GITHUB_STEP_SUMMARY", str(bare_dir.path / "out" / "job-summary.md"))
    runs.append(
        _record(bare_dir, clean_env, fake, "Be thorough.", "--junitxml=again.xml", "--blackbox-report=github")
    )
    bedrock, bedrock_async, vertex, gemini, azure, entra = fake.requests[TESTS_RUN:]
    for signed in (bedrock, bedrock_async):
        assert signed.headers["authorization"].startswith(
            f"AWS4-HMAC-SHA256 Credential={AWS['AWS_ACCESS_KEY_ID']}/"
        )
        assert signed.headers["x-amz-security-token"] == AWS["AWS_SESSION_TOKEN"]
    assert vertex.headers["authorization"] == f"Bearer {VERTEX_TOKEN}"
    assert gemini.headers["authorization"] == f"Bearer {GOOGLE_USER['token']}"
    assert azure.headers["api-key"] == AZURE_KEY
    assert entra.headers["authorization"] == f"Bearer {ENTRA_TOKEN}"
    report = (bare_dir.path / "out" / "job-summary.md").read_text(encoding="utf-8")
    assert (
        "| `cassettes/test_clouds/test_vertex.json` | changed at step 0 model_input: systemPrompt |" in report
    )

    names = (*AWS, "GOOGLE_APPLICATION_CREDENTIALS", "AGENT_VERTEX_TOKEN", "AZURE_OPENAI_API_KEY")
    for name in (*names, "AGENT_ENTRA_TOKEN", "GITHUB_STEP_SUMMARY"):
        clean_env.delenv(name)
    clean_env.setenv("CI", "true")
    replayed = bare_dir.runpytest(
        *OTHER_PLUGINS_OFF, "--junitxml=replay.xml", "--blackbox-report=out/replay.md"
    )
    replayed.assert_outcomes(passed=TESTS_RUN)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=TESTS_RUN))])
    clean_env.setenv("AGENT_SYSTEM", "Be brief.")
    diverged = bare_dir.runpytest(
        *OTHER_PLUGINS_OFF, "--junitxml=diverged.xml", "--blackbox-report=out/diverged.md"
    )
    diverged.assert_outcomes(failed=TESTS_RUN)
    diverged.stdout.fnmatch_lines(["blackbox: replay diverged at step 0, systemPrompt"] * TESTS_RUN)
    assert len(fake.requests) == 2 * TESTS_RUN  # neither replay reached the provider

    secrets = [AWS["AWS_ACCESS_KEY_ID"], AWS["AWS_SECRET_ACCESS_KEY"], AWS["AWS_SESSION_TOKEN"]]
    secrets += [VERTEX_TOKEN, AZURE_KEY, ENTRA_TOKEN, *_signatures(fake)]
    secrets += [GOOGLE_USER[name] for name in ("client_secret", "refresh_token", "token")]
    assert len(secrets) == 9 + 2 * 2  # each recording signed two Bedrock requests

    def leaked(text: str) -> list[str]:
        return [secret for secret in secrets if secret in text]

    for run in (*runs, replayed, diverged):
        assert leaked("\n".join(run.stdout.lines + run.stderr.lines)) == []
    cassettes = sorted((bare_dir.path / "cassettes").rglob("*.json"))
    assert len(cassettes) == TESTS_RUN
    assert [
        leaked(text) for cassette in cassettes for text in cli_outputs(cassette, capsys) if leaked(text)
    ] == []
    files = [path for path in bare_dir.path.rglob("*") if path.is_file()]
    assert {"record.xml", "again.xml", "replay.xml", "diverged.xml", "record.md", "job-summary.md"} <= {
        path.name for path in files
    }
    assert {
        path.relative_to(bare_dir.path).as_posix(): leaked(path.read_text(encoding="utf-8", errors="replace"))
        for path in files
        if leaked(path.read_text(encoding="utf-8", errors="replace"))
    } == {}
