"""botocore's ``before-send`` hook outside pytest: a program that imports boto3 (or aiobotocore), then
starts a session, has its calls recorded (the interceptor registers the handler itself), once.

Run in a fresh interpreter: in this one the plugin registered the handler as botocore loaded, and
the adapter's own registration would prove nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_blackbox.testing import FakeProvider
from tests.machine import scaled

PROGRAMS = {
    "boto3": """
import sys

import boto3

from pytest_blackbox import blackbox

session = blackbox(mode="record", out=sys.argv[2])
messages = [{"role": "user", "content": [{"text": "hi"}]}]
for _ in range(2):
    runtime = boto3.client("bedrock-runtime", endpoint_url=sys.argv[1], region_name="us-east-1")
    answer = runtime.converse(modelId="amazon.nova-pro-v1:0", messages=messages)
session.finish(result=answer["output"]["message"]["content"][0]["text"])
""",
    "aiobotocore": """
import asyncio
import sys

import aiobotocore.session

from pytest_blackbox import blackbox


async def main():
    messages = [{"role": "user", "content": [{"text": "hi"}]}]
    for _ in range(2):
        aws = aiobotocore.session.get_session()
        client = aws.create_client("bedrock-runtime", endpoint_url=sys.argv[1], region_name="us-east-1")
        async with client as runtime:
            answer = await runtime.converse(modelId="amazon.nova-pro-v1:0", messages=messages)
    return answer["output"]["message"]["content"][0]["text"]


session = blackbox(mode="record", out=sys.argv[2])
session.finish(result=asyncio.run(main()))
""",
}


@pytest.mark.parametrize("library", list(PROGRAMS))
def test_a_program_outside_pytest_records_its_calls_once_each(
    library: str, fake_provider: FakeProvider, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    pytest.importorskip(library, reason=f"{library} is not installed (pip install 'pytest-blackbox[test]')")
    clean_env.setenv("AWS_ACCESS_KEY_ID", "AKIABLACKBOXFAKE0006")
    clean_env.setenv("AWS_SECRET_ACCESS_KEY", "blackbox-fake-secret-access-key-program")
    fake_provider.queue_converse_text("first")
    fake_provider.queue_converse_text("second")
    out = tmp_path / "run.json"
    done = subprocess.run(
        [sys.executable, "-c", PROGRAMS[library], fake_provider.base_url, str(out)],
        capture_output=True,
        text=True,
        timeout=scaled(120),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    steps = json.loads(out.read_text(encoding="utf-8"))["steps"]
    assert [step["type"] for step in steps] == ["model_input", "model_output"] * 2 + ["metadata"]
    assert [step["payload"]["text"] for step in steps if step["type"] == "model_output"] == [
        "first",
        "second",
    ]
    assert len(fake_provider.requests) == 2
