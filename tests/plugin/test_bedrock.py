"""Amazon Bedrock in a CI run with no AWS credentials: clients built at import replay keyless.

A boto3 ``bedrock-runtime`` client, an aiobotocore session and an ``AnthropicBedrock`` client are
built when the agent module is imported, in a fresh interpreter, before any session starts: the
plugin's handler is registered as botocore and aiobotocore load, and its placeholder credentials and
region let the clients start in a replay (docs/providers.md#keyless-replay-on-aws). Recording with
those placeholders is refused.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_blackbox.testing import FakeProvider
from tests import QUIET

from .conftest import exact, summary

pytest.importorskip("boto3", reason="boto3 is not installed (pip install 'pytest-blackbox[test]')")
pytest.importorskip(
    "aiobotocore", reason="aiobotocore is not installed (pip install 'pytest-blackbox[test]')"
)

AWS = {
    "AWS_ACCESS_KEY_ID": "AKIABLACKBOXFAKE0002",
    "AWS_SECRET_ACCESS_KEY": "blackbox-fake-secret-access-key-abcdefghij",
    "AWS_SESSION_TOKEN": "blackbox-fake-session-token-abcdefghij012345",
    "AWS_DEFAULT_REGION": "eu-west-1",
}

AGENT = '''
"""Clients built at import, configured by the environment, the way Bedrock deployments are."""
import os

import aiobotocore.session
import anthropic
import boto3

MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
RUNTIME = boto3.client("bedrock-runtime", endpoint_url=os.environ["BEDROCK_ENDPOINT"])
ASYNC_SESSION = aiobotocore.session.get_session()
CLAUDE = anthropic.AnthropicBedrock(max_retries=0)


def converse(question):
    answer = RUNTIME.converse(modelId=MODEL, messages=[{"role": "user", "content": [{"text": question}]}])
    return answer["output"]["message"]["content"][0]["text"]


async def converse_async(question):
    endpoint = os.environ["BEDROCK_ENDPOINT"]
    async with ASYNC_SESSION.create_client("bedrock-runtime", endpoint_url=endpoint) as runtime:
        messages = [{"role": "user", "content": [{"text": question}]}]
        answer = await runtime.converse(modelId=MODEL, messages=messages)
    return answer["output"]["message"]["content"][0]["text"]


def invoke(question):
    message = CLAUDE.messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": question}]
    )
    return message.content[0].text
'''
TESTS = """
import asyncio

import pytest

import agent


@pytest.mark.blackbox
def test_converse():
    assert agent.converse("hi") == "hello from converse"


@pytest.mark.blackbox
def test_converse_async():
    assert asyncio.run(agent.converse_async("hi")) == "hello from aiobotocore"


@pytest.mark.blackbox
def test_invoke():
    assert agent.invoke("hi") == "hello from claude"
"""


@pytest.fixture
def fake(bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    """The fake provider as every client's endpoint, recording and replaying alike."""
    bare_dir.makepyfile(agent=AGENT, test_bedrock_agent=TESTS)
    with FakeProvider() as provider:
        clean_env.setenv("BEDROCK_ENDPOINT", provider.base_url)
        clean_env.setenv("ANTHROPIC_BEDROCK_BASE_URL", provider.base_url)
        provider.queue_converse_text("hello from converse")
        provider.queue_converse_text("hello from aiobotocore")
        provider.queue_anthropic_text("hello from claude")
        yield provider


def test_a_ci_run_with_no_aws_credentials_replays_clients_built_at_import(
    bare_dir: pytest.Pytester, clean_env: pytest.MonkeyPatch, fake: FakeProvider
) -> None:
    for name, value in AWS.items():
        clean_env.setenv(name, value)
    recorded = bare_dir.runpytest_subprocess(*QUIET, "--record-mode=once")
    recorded.assert_outcomes(passed=3)
    recorded.stdout.fnmatch_lines([exact(summary(recorded=3))])
    converse, converse_async, invoke = fake.requests
    assert (
        converse.path == converse_async.path == "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    )
    assert invoke.path == "/model/anthropic.claude-sonnet-4-5-20250929-v1:0/invoke"
    for request in fake.requests:
        assert request.headers["authorization"].startswith(
            f"AWS4-HMAC-SHA256 Credential={AWS['AWS_ACCESS_KEY_ID']}/"
        )
        assert request.headers["x-amz-security-token"] == AWS["AWS_SESSION_TOKEN"]
    written = "".join(
        path.read_text(encoding="utf-8") for path in (bare_dir.path / "cassettes").rglob("*.json")
    )
    assert all(f"hello from {road}" in written for road in ("converse", "aiobotocore", "claude"))
    signatures = [request.headers["authorization"].rsplit("Signature=", 1)[1] for request in fake.requests]
    for secret in (
        AWS["AWS_ACCESS_KEY_ID"],
        AWS["AWS_SECRET_ACCESS_KEY"],
        AWS["AWS_SESSION_TOKEN"],
        *signatures,
    ):
        assert secret not in written

    for name in AWS:
        clean_env.delenv(name)
    clean_env.setenv("CI", "true")
    replayed = bare_dir.runpytest_subprocess(*QUIET)
    replayed.assert_outcomes(passed=3)
    replayed.stdout.fnmatch_lines([exact(summary(replayed=3))])
    assert len(fake.requests) == 3  # nothing reached the provider


def test_recording_with_the_placeholder_credentials_asks_for_real_ones(
    bare_dir: pytest.Pytester, fake: FakeProvider
) -> None:
    """With no AWS credentials set, the clients start on the placeholders; a recording sends nothing."""
    result = bare_dir.runpytest_subprocess(*QUIET, "--record-mode=once")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*recording needs real AWS credentials: this request is signed with the offline placeholder "
            "credentials (blackbox-offline-placeholder), so it was not sent; set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) to record*"
        ]
        * 3,
        consecutive=False,
    )
    assert fake.requests == []
