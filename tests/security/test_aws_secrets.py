"""AWS credentials never reach a cassette: the access key id, the secret, a session's token and the
request's SigV4 signature are secrets, learned from the environment and from each signed request.

Each test plants one of them in what a boto3 ``converse`` call sends (the system prompt) and records
against the fake provider: the recording refuses to write, naming where the value came from, and
writes nothing. A clean recording holds none of them (tests/frameworks/test_bedrock.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_blackbox.engine.session import blackbox
from pytest_blackbox.errors import SecretLeakError
from pytest_blackbox.testing.fake_provider import FakeProvider

from .conftest import files_in

boto3 = pytest.importorskip("boto3", reason="boto3 is not installed (pip install 'pytest-blackbox[test]')")

ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "AKIABLACKBOXENV00001",
    "AWS_SECRET_ACCESS_KEY": "blackbox-env-secret-access-key-0123456789",
    "AWS_DEFAULT_REGION": "us-east-1",
}
#: Credentials handed to the client itself, not in the environment: learned from the signed request.
CLIENT = {
    "aws_access_key_id": "AKIABLACKBOXCLIENT01",
    "aws_secret_access_key": "blackbox-client-secret-access-key-0123",
    "aws_session_token": "blackbox-client-session-token-0123456789",
}
LEAK = "refusing to write the cassette: it contains your API key"


@pytest.mark.parametrize(
    ("planted", "source"),
    [
        (ENVIRONMENT["AWS_SECRET_ACCESS_KEY"], "the value of AWS_SECRET_ACCESS_KEY"),
        (CLIENT["aws_access_key_id"], "the value of the authorization request header"),
        (CLIENT["aws_session_token"], "the value of the x-amz-security-token request header"),
        ("signature", "the value of the authorization request header"),
    ],
    ids=["secret-from-environment", "key-id-from-signature", "session-token-from-header", "signature"],
)
def test_a_planted_aws_credential_refuses_the_cassette(
    fake_provider: FakeProvider, tmp_path: Path, clean_env: pytest.MonkeyPatch, planted: str, source: str
) -> None:
    for name, value in ENVIRONMENT.items():
        clean_env.setenv(name, value)
    fake_provider.queue_converse_text("ok")
    fake_provider.queue_converse_text("ok")
    session = blackbox(mode="record", out=tmp_path / "run.json")
    runtime = boto3.client("bedrock-runtime", endpoint_url=fake_provider.base_url, **CLIENT)
    messages = [{"role": "user", "content": [{"text": "hi"}]}]
    runtime.converse(modelId="amazon.nova-pro-v1:0", messages=messages)
    if planted == "signature":
        planted = fake_provider.requests[0].headers["authorization"].rsplit("Signature=", 1)[1]
    system = [{"text": f"Remember {planted}."}]
    runtime.converse(modelId="amazon.nova-pro-v1:0", messages=messages, system=system)
    with pytest.raises(SecretLeakError) as caught:
        session.finish(result="done")
    assert str(caught.value).startswith(f"{LEAK} ({source}) in step 2 (model_input) at systemPrompt")
    assert planted not in str(caught.value)
    assert files_in(tmp_path) == []
