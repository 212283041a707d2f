"""Amazon Bedrock's wire: InvokeModel's Anthropic bodies, the Converse API, and the AWS event stream.

What the contract tests (tests/frameworks/test_bedrock.py) do not reach: refusals, each one line
naming what is wrong, media and tool results, and the event-stream framing read by botocore's own
decoder (docs/providers.md#anthropic-on-amazon-bedrock).
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox import BlackboxUnsupportedError, Session, providers
from pytest_blackbox.engine.keys import OFFLINE_PLACEHOLDER_KEY, header_secrets, set_placeholder_keys
from pytest_blackbox.providers import CallIds, bedrock, bedrock_converse
from pytest_blackbox.providers.eventstream import encode_message, read_events
from pytest_blackbox.providers.sse import StreamCutShort
from pytest_blackbox.testing import FakeProvider

eventstream = pytest.importorskip("botocore.eventstream")

INVOKE = "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke"
CONVERSE = "/model/us.amazon.nova-pro-v1%3A0/converse"
PNG = base64.b64encode(b"\x89PNG fake image bytes").decode()
PDF = base64.b64encode(b"%PDF-1.7 fake document").decode()


# -- InvokeModel ---------------------------------------------------------------------------------


def test_an_invoke_body_is_the_messages_body_with_the_model_from_the_path() -> None:
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
    }
    normalized = bedrock.normalize_request(body, CallIds(), path=INVOKE)
    assert normalized == {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [],
        "model": "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "params": {"maxTokens": 64},
    }


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("amazon.titan-text-express-v1", "amazon"),
        ("us.meta.llama3-2-90b-instruct-v1:0", "meta"),
        ("mistral.mistral-large-2402-v1:0", "mistral"),
    ],
)
def test_an_invoke_body_of_another_family_is_refused_naming_it(model: str, family: str) -> None:
    with pytest.raises(BlackboxUnsupportedError) as caught:
        bedrock.normalize_request({"inputText": "hi"}, CallIds(), path=f"/model/{model}/invoke")
    message = str(caught.value)
    assert f'InvokeModel body for the "{family}" model family ({model})' in message
    assert "use the Converse API" in message and "\n" not in message


def test_boto3_invoke_model_with_a_titan_body_is_refused_before_it_is_sent(
    fake_provider: FakeProvider, tmp_path: Path, sessions: Callable[..., Session]
) -> None:
    """boto3 raises the refusal as Bedrock's ValidationException; the run fails with it, nothing sent."""
    boto3 = pytest.importorskip("boto3")
    from botocore.exceptions import ClientError

    session = sessions(mode="record", out=tmp_path / "run.json")
    runtime = boto3.client(
        "bedrock-runtime",
        endpoint_url=fake_provider.base_url,
        region_name="us-east-1",
        aws_access_key_id="AKIABLACKBOXFAKE0003",
        aws_secret_access_key="blackbox-fake-secret-0123456789",
    )
    refusal = (
        'an InvokeModel body for the "amazon" model family (amazon.titan-text-express-v1) is not supported '
        "yet; only Anthropic (Claude) bodies, with anthropic_version, can be recorded through InvokeModel; "
        "use the Converse API (converse / converse_stream) for other families"
    )
    with pytest.raises(ClientError) as raised:
        runtime.invoke_model(modelId="amazon.titan-text-express-v1", body=json.dumps({"inputText": "hi"}))
    assert str(raised.value).endswith(f"[blackbox] {refusal}")
    with pytest.raises(BlackboxUnsupportedError) as failed:
        session.finish()
    assert refusal in str(failed.value)
    assert fake_provider.requests == []
    assert list(tmp_path.iterdir()) == []


def test_an_invoke_stream_is_read_through_its_chunks_and_a_cut_one_is_refused() -> None:
    events = bedrock.synthesize_stream(
        {"type": "final_answer", "text": "hello there, traveller"}, output_index=1, model="m", timestamp=0
    )
    whole = b"".join(events)
    assert bedrock.collect_stream(whole)["content"] == [
        {"type": "text", "text": "hello there, traveller", "citations": None}
    ]
    decoded = [json.loads(message["payload"])["bytes"] for message in _botocore_messages(whole)]
    assert json.loads(base64.b64decode(decoded[0]))["type"] == "message_start"
    with pytest.raises(StreamCutShort, match="ended before message_stop"):
        bedrock.collect_stream(whole[: len(whole) - 10])


# -- the event stream ----------------------------------------------------------------------------


def _botocore_messages(body: bytes) -> list[dict[str, Any]]:
    """Messages as botocore's own decoder reads them: an independent check of the framing."""
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(body)
    return [{"headers": message.headers, "payload": message.payload} for message in buffer]


def test_the_framing_is_what_botocore_reads() -> None:
    body = encode_message("messageStart", {"role": "assistant"}) + encode_message(
        "messageStop", {"stopReason": "end_turn"}
    )
    [first, second] = _botocore_messages(body)
    assert first["headers"] == {
        ":event-type": "messageStart",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert json.loads(second["payload"]) == {"stopReason": "end_turn"}
    assert read_events(body) == [
        ("messageStart", {"role": "assistant"}),
        ("messageStop", {"stopReason": "end_turn"}),
    ]


def test_a_damaged_message_and_an_exception_are_refused() -> None:
    message = bytearray(encode_message("messageStart", {"role": "assistant"}))
    message[-6] ^= 0xFF
    with pytest.raises(BlackboxUnsupportedError, match="damaged event-stream message"):
        read_events(bytes(message))
    with pytest.raises(BlackboxUnsupportedError, match=r'reported an error \("throttlingException"\)'):
        bedrock_converse.collect_stream(_exception("throttlingException"))


def _exception(kind: str) -> bytes:
    """An exception message as Bedrock sends one mid-stream (built with botocore's header layout)."""
    headers = b""
    for name, value in (
        (":exception-type", kind),
        (":content-type", "application/json"),
        (":message-type", "exception"),
    ):
        headers += (
            bytes([len(name)]) + name.encode() + b"\x07" + len(value).to_bytes(2, "big") + value.encode()
        )
    payload = b'{"message":"slow down"}'
    prelude = (12 + len(headers) + len(payload) + 4).to_bytes(4, "big") + len(headers).to_bytes(4, "big")
    prelude += zlib.crc32(prelude).to_bytes(4, "big")
    body = prelude + headers + payload
    return body + zlib.crc32(body).to_bytes(4, "big")


# -- Converse ------------------------------------------------------------------------------------


def test_a_converse_request_with_media_and_tool_results_normalizes() -> None:
    ids = CallIds()
    body = {
        "system": [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"text": "What is in these?"},
                    {"image": {"format": "png", "source": {"bytes": PNG}}},
                    {"document": {"format": "pdf", "name": "report", "source": {"bytes": PDF}}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"reasoningText": {"text": "hmm"}}},
                    {"toolUse": {"toolUseId": "tooluse_1", "name": "lookup", "input": {"q": "x"}}},
                    {"toolUse": {"toolUseId": "tooluse_2", "name": "fail", "input": {}}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": "tooluse_1", "content": [{"json": {"found": 1}}]}},
                    {
                        "toolResult": {
                            "toolUseId": "tooluse_2",
                            "content": [{"text": "boom"}],
                            "status": "error",
                        }
                    },
                ],
            },
        ],
        "toolConfig": {
            "tools": [{"toolSpec": {"name": "lookup", "inputSchema": {"json": {"type": "object"}}}}],
            "toolChoice": {"auto": {}},
        },
        "inferenceConfig": {"maxTokens": 100, "temperature": 0.5, "stopSequences": ["END"]},
    }
    normalized = bedrock_converse.normalize_request(body, ids, path=CONVERSE)
    assert normalized["systemPrompt"] == "Be brief."
    assert normalized["model"] == "us.amazon.nova-pro-v1:0"
    assert normalized["params"] == {
        "maxTokens": 100,
        "temperature": 0.5,
        "stop": ["END"],
        "toolChoice": {"auto": {}},
    }
    assert normalized["tools"] == [{"name": "lookup", "description": "", "inputSchema": {"type": "object"}}]
    content = normalized["messages"][0]["content"]
    assert isinstance(content, list)
    image, document = content[1:]
    assert (image["kind"], image["mediaType"], document["mediaType"], document["title"]) == (
        "image",
        "image/png",
        "application/pdf",
        "report",
    )
    assert normalized["messages"][1]["content"] == [
        {"type": "tool_use", "toolCallId": "call-0", "toolName": "lookup", "toolInput": {"q": "x"}},
        {"type": "tool_use", "toolCallId": "call-1", "toolName": "fail", "toolInput": {}},
    ]
    assert normalized["messages"][2]["content"] == [
        {"type": "tool_result", "toolCallId": "call-0", "toolName": "lookup", "result": {"found": 1}},
        {"type": "tool_result", "toolCallId": "call-1", "toolName": "fail", "error": "boom"},
    ]


@pytest.mark.parametrize(
    ("body", "refused"),
    [
        (
            {"messages": [], "guardrailConfig": {"guardrailIdentifier": "g"}},
            '"guardrailConfig" in a Converse request',
        ),
        ({"messages": [{"role": "user", "content": [{"video": {}}]}]}, 'a "video" block in a user message'),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"image": {"format": "png", "source": {"s3Location": {}}}}]}
                ]
            },
            'a image source other than bytes ("s3Location")',
        ),
    ],
    ids=["guardrail", "video", "s3-image"],
)
def test_what_a_converse_replay_could_not_give_back_is_refused(body: dict[str, Any], refused: str) -> None:
    with pytest.raises(BlackboxUnsupportedError) as caught:
        bedrock_converse.normalize_request(body, CallIds(), path=CONVERSE)
    assert refused in str(caught.value)


def test_a_converse_response_replays_as_it_came_usage_and_metrics_dropped() -> None:
    ids = CallIds()
    response = {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"text": "Let me look."},
                    {"toolUse": {"toolUseId": "tooluse_9", "name": "lookup", "input": {"q": "x"}}},
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
        "metrics": {"latencyMs": 420},
    }
    output = bedrock_converse.normalize_response(response, ids)
    assert output == {
        "type": "tool_calls",
        "calls": [{"toolCallId": "call-0", "toolName": "lookup", "toolInput": {"q": "x"}}],
        "text": "Let me look.",
    }
    replayed = bedrock_converse.synthesize_response(output, output_index=1, model=None, timestamp=0)
    assert replayed["output"] == {
        "message": {
            "role": "assistant",
            "content": [
                {"text": "Let me look."},
                {"toolUse": {"toolUseId": "call-0", "name": "lookup", "input": {"q": "x"}}},
            ],
        }
    }
    assert replayed["stopReason"] == "tool_use"
    streamed = b"".join(bedrock_converse.synthesize_stream(output, output_index=1, model=None, timestamp=0))
    assert bedrock_converse.normalize_response(bedrock_converse.collect_stream(streamed), CallIds()) == output


def test_a_guardrail_stop_is_refused() -> None:
    response = {
        "output": {"message": {"role": "assistant", "content": [{"text": "no"}]}},
        "stopReason": "guardrail_intervened",
    }
    with pytest.raises(BlackboxUnsupportedError, match='stopReason "guardrail_intervened"'):
        bedrock_converse.normalize_response(response, CallIds())


def test_a_model_arn_is_the_model() -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5"
    path = "/model/" + arn.replace(":", "%3A").replace("/", "%2F") + "/converse"
    assert providers.provider_for_path(path.replace("%3A", ":").replace("%2F", "/")) is bedrock_converse
    normalized = bedrock_converse.normalize_request({"messages": []}, CallIds(), path=path)
    assert normalized["model"] == arn


# -- credentials ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environment", "given"),
    [
        ({}, {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"}),
        ({"AWS_PROFILE": "ci"}, set()),
        ({"AWS_ACCESS_KEY_ID": "AKIAREAL", "AWS_REGION": "eu-west-1"}, set()),
        ({"AWS_WEB_IDENTITY_TOKEN_FILE": "token", "AWS_DEFAULT_REGION": "eu-west-1"}, set()),
        ({"AWS_SECRET_ACCESS_KEY": "real-secret"}, {"AWS_ACCESS_KEY_ID", "AWS_DEFAULT_REGION"}),
    ],
    ids=["none", "profile", "key-and-region", "web-identity", "secret-only"],
)
def test_aws_placeholders_only_where_no_credential_source_is_set(
    environment: dict[str, str], given: set[str]
) -> None:
    env = dict(environment)
    aws = {name for name in set_placeholder_keys(env) if name.startswith("AWS_")}
    assert aws == given
    assert {name: env[name] for name in given} == {
        name: "us-east-1" if name == "AWS_DEFAULT_REGION" else OFFLINE_PLACEHOLDER_KEY for name in given
    }


def test_a_sigv4_signature_gives_its_key_id_and_signature_as_secrets() -> None:
    value = (
        "AWS4-HMAC-SHA256 Credential=AKIABLACKBOXFAKE0005/20260101/us-east-1/bedrock/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=0123456789abcdef0123456789abcdef"
    )
    assert header_secrets([("authorization", value), ("x-amz-security-token", "session-token")]) == [
        ("authorization", "AKIABLACKBOXFAKE0005"),
        ("authorization", "0123456789abcdef0123456789abcdef"),
        ("x-amz-security-token", "session-token"),
    ]


def test_an_unknown_converse_response_field_is_refused_naming_it() -> None:
    response = {"output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}}, "trace": {"x": 1}}
    with pytest.raises(BlackboxUnsupportedError, match='"trace" in a Converse response'):
        bedrock_converse.normalize_response(response, CallIds())
