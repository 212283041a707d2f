"""Where the example's model calls go.

- Replaying (the default, and CI): to a closed port on 127.0.0.1. The plugin answers every model
  call from the cassette, so nothing is ever sent; if something were, it would fail at once.
- Recording (``--record-mode=...``): to the bundled fake provider, scripted by ``fake_model.py``.
- Recording with ``BLACKBOX_EXAMPLE_LIVE=1``: to the real API, with ``ANTHROPIC_API_KEY`` (and
  ``ANTHROPIC_BASE_URL`` if set) from the environment.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from fake_model import respond

from pytest_blackbox import Session
from pytest_blackbox.testing import FakeProvider

#: The key the SDK sends to the fake provider; the fake accepts anything.
FAKE_KEY = "fake-provider-key"


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def anthropic_options(blackbox: Session) -> Iterator[dict[str, Any]]:
    """Keyword arguments for ``anthropic.Anthropic(...)`` / ``AsyncAnthropic(...)``."""
    pure_replay = blackbox.mode == "replay" and blackbox.options.on_divergence == "fail"
    if pure_replay:
        yield {"base_url": _closed_port_url()}
    elif os.environ.get("BLACKBOX_EXAMPLE_LIVE") == "1":
        base_url = os.environ.get("ANTHROPIC_BASE_URL")
        yield {"base_url": base_url} if base_url else {}
    else:
        with FakeProvider(respond=respond) as provider:
            yield {"base_url": provider.anthropic_base_url, "api_key": FAKE_KEY}
