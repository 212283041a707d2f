"""``--blackbox-block-network``: a test that is not a blackbox test gets no model call through, and
no other way out of the machine either.

Without it, a test that makes a model call but forgot the marker reaches the provider, in CI too,
silently. The call is answered with the provider's own error shape (a status the SDKs do not
retry), and the test fails naming itself and the fix. Every other way out that the replay's socket
guard covers (a TCP or UDP connection, a datagram, a name lookup) is refused by that same guard,
worded for a test without the marker. See docs/pytest.md#network-blocking.
"""

from __future__ import annotations

from functools import partial
from urllib.parse import urlsplit

import pytest

from .. import providers
from ..engine import WireCall, refusal
from ..interception import Interceptor, ModelRequest, Reply
from . import messages
from .sockets import SocketGuard


class UnmarkedGuard:
    """Refuses every model call, and every connection, datagram and name lookup beyond loopback and
    the allowed hosts, while started (one test, from its set-up to its teardown)."""

    def __init__(self, item: pytest.Item, allowed_hosts: tuple[str, ...]) -> None:
        self.item = item
        #: The first refused model call's message.
        self._refused_call: str | None = None
        self._interceptor = Interceptor(self._on_model, None, routes=providers.ROUTES)
        describe = partial(messages.unmarked_network_refused, item.nodeid, allowed_hosts)
        self._sockets = SocketGuard(allowed_hosts, describe)

    @property
    def refusal(self) -> str | None:
        """What was refused first (a model call, else a way out), kept so that a test that swallowed
        the error still fails."""
        if self._refused_call is not None:
            return self._refused_call
        refused = self._sockets.refusal
        return str(refused) if refused is not None else None

    def start(self) -> UnmarkedGuard:
        self._interceptor.start()
        self._sockets.start()
        return self

    def stop(self) -> None:
        self._sockets.stop()
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
        if self._refused_call is None:
            self._refused_call = text
        return refusal(WireCall.provider_of(request), "[blackbox] " + text)
