"""Model calls through aiohttp, which the client-level interception cannot see: refused, never let through."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from pytest_blackbox.errors import BlackboxUnsupportedError
from pytest_blackbox.interception import Interceptor, Reply
from pytest_blackbox.interception.aiohttp_guard import AIOHTTP_MESSAGE
from pytest_blackbox.providers import ROUTES
from pytest_blackbox.testing.fake_provider import FakeProvider, ScriptedResponse

GEMINI_PATH = "/v1beta/models/gemini-2.5-flash:generateContent"


def post(url: str) -> tuple[int, str]:
    async def go() -> tuple[int, str]:
        async with aiohttp.ClientSession() as session, session.post(url, json={"contents": []}) as response:
            return response.status, await response.text()

    return asyncio.run(go())


def never(_: object) -> Reply:
    raise AssertionError("an aiohttp request never reaches the interceptor's handler")


@pytest.mark.parametrize("path", [GEMINI_PATH, "/v1/messages", "/v1/chat/completions"])
def test_a_model_call_through_aiohttp_is_refused_while_intercepting(
    fake_provider: FakeProvider, path: str
) -> None:
    with Interceptor(never, routes=ROUTES), pytest.raises(BlackboxUnsupportedError) as caught:
        post(fake_provider.base_url + path + "?alt=sse")
    assert str(caught.value) == AIOHTTP_MESSAGE
    assert fake_provider.requests == []


def test_other_aiohttp_traffic_passes_and_the_guard_ends_with_the_last_interceptor(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.queue(ScriptedResponse(200, {"models": []}), ScriptedResponse(200, {"candidates": []}))
    with Interceptor(never, routes=ROUTES):
        with Interceptor(never, routes=ROUTES):
            assert post(fake_provider.base_url + "/v1beta/models") == (200, '{"models":[]}')
        with pytest.raises(BlackboxUnsupportedError):
            post(fake_provider.base_url + GEMINI_PATH)
    assert post(fake_provider.base_url + GEMINI_PATH) == (200, '{"candidates":[]}')
    assert [request.path for request in fake_provider.requests] == ["/v1beta/models", GEMINI_PATH]
