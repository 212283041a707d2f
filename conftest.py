"""Repository-wide test configuration."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_blackbox.fake_provider import FakeProvider


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A running scripted fake Anthropic/OpenAI server on 127.0.0.1; it sets no environment variables."""
    with FakeProvider() as provider:
        yield provider
