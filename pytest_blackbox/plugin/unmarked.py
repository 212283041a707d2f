"""``--blackbox-block-network``: a test that is not a blackbox test gets no model call through.

Without it, a test that makes a model call but forgot the marker reaches the provider, in CI too,
silently. The call is answered with the provider's own error shape (a status the SDKs do not
retry), and the test fails naming itself and the fix. See docs/pytest.md#network-blocking.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from .. import providers
from ..engine import WireCall, refusal
from ..interception import Interceptor, ModelRequest, Reply


class UnmarkedGuard:
    """Refuses every model call while started (one test, from its set-up to its teardown)."""

    def __init__(self, item: pytest.Item) -> None:
        self.item = item
        #: The first refused call's message, kept so a test that swallowed the SDK error still fails.
        self.refusal: str | None = None
        self._interceptor = Interceptor(self._on_model, None, routes=providers.ROUTES)

    def start(self) -> UnmarkedGuard:
        self._interceptor.start()
        return self

    def stop(self) -> None:
        self._interceptor.stop()

    def _on_model(self, request: ModelRequest) -> Reply:
        url = urlsplit(request.url)
        where = f"{url.scheme}://{url.hostname or ''}{f':{url.port}' if url.port else ''}{url.path}"
        text = (
            f"blackbox: {self.item.nodeid} is not a blackbox test, and --blackbox-block-network refuses "
            f"its model calls: {request.method} {where} was not sent\n"
            "mark it @pytest.mark.blackbox (or give it the blackbox fixture) to record and replay its "
            "model calls"
        )
        if self.refusal is None:
            self.refusal = text
        return refusal(WireCall.provider_of(request), "[blackbox] " + text)
