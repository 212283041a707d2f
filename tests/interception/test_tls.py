"""The default TLS context shared by the clients built while the interceptor runs, against a real TLS
server on 127.0.0.1."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anthropic
import httpx
import httpx2
import pytest
import trustme

from pytest_blackbox.interception import Forward, Interceptor, ModelRequest
from pytest_blackbox.providers import ROUTES
from pytest_blackbox.testing.fake_provider import FakeProvider
from tests import QUIET

LIBRARIES = pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])


def forward(request: ModelRequest) -> Forward:
    return Forward()


def context_of(client: Any) -> ssl.SSLContext:
    """The TLS context of a client's transport (the SDK client's own httpx client, for an SDK client)."""
    client = getattr(client, "_client", client)
    context: ssl.SSLContext = client._transport._pool._ssl_context
    return context


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_file(authority: trustme.CA, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture
def tls_provider(authority: trustme.CA) -> Iterator[FakeProvider]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(context)
    with FakeProvider(tls=context) as provider:
        yield provider


@pytest.fixture(autouse=True)
def no_certificate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "SSLKEYLOGFILE"):
        monkeypatch.delenv(name, raising=False)


@LIBRARIES
def test_clients_built_while_intercepting_share_the_default_context(lib: ModuleType) -> None:
    with Interceptor(forward, routes=ROUTES):
        first, second = lib.Client(), lib.Client()
        assert context_of(first) is context_of(second)
        assert context_of(first).verify_mode == ssl.CERT_REQUIRED
        assert context_of(first).check_hostname
        assert context_of(first).cert_store_stats()["x509_ca"] > 0  # the authorities are loaded
    assert context_of(lib.Client()) is not context_of(first)  # stopped: each client builds its own again


@LIBRARIES
def test_a_context_of_the_tests_own_or_verify_off_is_never_shared(lib: ModuleType) -> None:
    own = ssl.create_default_context()
    with Interceptor(forward, routes=ROUTES):
        shared = context_of(lib.Client())
        unverified = lib.Client(verify=False)
        assert context_of(lib.Client(verify=own)) is own
        assert context_of(unverified) is not shared
        assert context_of(unverified).verify_mode == ssl.CERT_NONE
        assert context_of(lib.Client(verify=False)) is not context_of(unverified)


@LIBRARIES
def test_another_certificate_bundle_in_the_environment_gets_its_own_context(
    lib: ModuleType, ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Interceptor(forward, routes=ROUTES):
        default = context_of(lib.Client())
        monkeypatch.setenv("SSL_CERT_FILE", ca_file)
        bundle = context_of(lib.Client())
        assert bundle is not default
        assert context_of(lib.Client()) is bundle
        assert context_of(lib.Client(trust_env=False)) is not bundle  # the variable is not read then
        monkeypatch.delenv("SSL_CERT_FILE")
        assert context_of(lib.Client()) is default


def test_an_sdk_client_built_while_recording_verifies_the_server_with_the_shared_context(
    tls_provider: FakeProvider, ca_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two SDK clients, one context, each request verified against the authority the environment names."""
    monkeypatch.setenv("SSL_CERT_FILE", ca_file)
    tls_provider.queue_anthropic_text("first")
    tls_provider.queue_anthropic_text("second")
    url = tls_provider.base_url
    with Interceptor(forward, routes=ROUTES):
        clients = [anthropic.Anthropic(api_key="sk-ant-test", base_url=url, max_retries=0) for _ in range(2)]
        answers = [
            client.messages.create(
                model="claude-test", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
            )
            for client in clients
        ]
    assert [answer.content[0].text for answer in answers] == ["first", "second"]  # type: ignore[union-attr]
    assert context_of(clients[0]) is context_of(clients[1])
    assert len(tls_provider.requests) == 2


def test_the_shared_context_still_refuses_a_server_it_does_not_trust(tls_provider: FakeProvider) -> None:
    """Without the test's authority in the environment, the shared default context rejects the server."""
    with Interceptor(forward, routes=ROUTES):
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=tls_provider.base_url, max_retries=0)
        with pytest.raises(anthropic.APIConnectionError) as failure:
            client.messages.create(
                model="claude-test", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
            )
    assert "CERTIFICATE_VERIFY_FAILED" in repr(failure.value.__cause__) + repr(failure.value.__context__)
    assert tls_provider.requests == []


def test_clients_built_in_blackbox_tests_share_one_context_across_the_tests(
    pytester: pytest.Pytester,
) -> None:
    """Through the plugin: a client built in a function-scoped fixture and in the body of each test pays
    for the certificate authorities once; a test without the marker builds its own context."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        test_clients="""
        import anthropic
        import pytest

        CONTEXTS = []

        def context(client):
            return client._client._transport._pool._ssl_context

        @pytest.fixture
        def client():
            return anthropic.Anthropic(api_key="sk-ant-test", base_url="http://127.0.0.1:9")

        @pytest.mark.blackbox
        @pytest.mark.parametrize("n", [1, 2])
        def test_agent(n, client):
            CONTEXTS.append(context(client))
            CONTEXTS.append(context(anthropic.Anthropic(api_key="sk-ant-test")))

        def test_unmarked():
            assert len(CONTEXTS) == 4 and all(c is CONTEXTS[0] for c in CONTEXTS)
            assert context(anthropic.Anthropic(api_key="sk-ant-test")) is not CONTEXTS[0]
        """
    )
    result = pytester.runpytest(*QUIET, "--record-mode=once")
    result.assert_outcomes(passed=3)
