"""The base-URL variables a test points at its children's relay: which variable a request came
through, where it really goes (sent on in a recording only), and how a refusal names it."""

from __future__ import annotations

from pytest_blackbox.engine.children import BaseUrls
from pytest_blackbox.interception import Forward, OtherRequest, Reply

RELAY = "http://127.0.0.1:4242"


def _recording(**originals: str | None) -> BaseUrls:
    return BaseUrls(RELAY, dict(originals), retarget=True)


def test_each_variable_goes_back_to_its_value_before_the_test_or_its_sdks_default() -> None:
    urls = _recording(OPENAI_BASE_URL=None, ANTHROPIC_BASE_URL="http://127.0.0.1:9000/")
    assert urls.value("OPENAI_BASE_URL") == f"{RELAY}/OPENAI_BASE_URL"
    assert urls.real_url(f"{RELAY}/OPENAI_BASE_URL/chat/completions?x=1") == (
        "https://api.openai.com/v1/chat/completions?x=1"
    )
    assert urls.real_url(f"{RELAY}/ANTHROPIC_BASE_URL/v1/messages") == "http://127.0.0.1:9000/v1/messages"
    assert urls.real_url(f"{RELAY}/GOOGLE_GEMINI_BASE_URL/v1beta/models") is None  # not closed
    assert urls.real_url("http://127.0.0.1:9000/v1/messages") is None  # not the relay
    assert BaseUrls(RELAY, {"OPENAI_BASE_URL": None}).real_url(f"{RELAY}/OPENAI_BASE_URL/x") is None  # replay


def test_a_forwarded_request_is_decided_and_sent_as_the_real_one() -> None:
    urls = _recording(OPENAI_BASE_URL=None)
    seen: list[str] = []

    def handler(request: OtherRequest) -> Reply | Forward:
        seen.append(request.url)
        return Forward()

    request = OtherRequest("GET", f"{RELAY}/OPENAI_BASE_URL/models", [], b"", False)
    decision = urls.handle(handler, request)
    assert isinstance(decision, Forward)
    assert seen == [decision.target] == ["https://api.openai.com/v1/models"]
    answered = urls.handle(lambda _: Reply(200, b"{}"), request)
    assert isinstance(answered, Reply)


def test_a_refusal_names_the_method_host_and_path_the_child_meant() -> None:
    urls = BaseUrls(RELAY, {"ANTHROPIC_BASE_URL": None, "GOOGLE_VERTEX_BASE_URL": None})
    assert urls.shown("POST /ANTHROPIC_BASE_URL/v1/messages") == "POST api.anthropic.com/v1/messages"
    assert urls.shown("POST /GOOGLE_VERTEX_BASE_URL/v1/x") == "POST /v1/x through GOOGLE_VERTEX_BASE_URL"
    assert urls.shown("api.anthropic.com:443") == "api.anthropic.com:443"  # a proxy's CONNECT
