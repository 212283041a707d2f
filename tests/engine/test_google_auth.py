"""Placeholder Google credentials refresh offline while a session runs; any others refresh as usual.

``AnthropicVertex`` refreshes the credentials it loads before its first call; with the placeholder
credentials of an offline run that refresh would go to Google's token endpoint
(docs/providers.md#anthropic-on-vertex-ai).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.oauth2.credentials import Credentials

from pytest_blackbox import blackbox
from pytest_blackbox.engine import GOOGLE_PLACEHOLDER_CREDENTIALS, OFFLINE_PLACEHOLDER_KEY


class Refused(Exception):
    """What the transport of these tests raises: no refresh may reach it unasked."""


def transport(*args: Any, **kwargs: Any) -> Any:
    raise Refused("a refresh reached the token endpoint")


def placeholder_credentials() -> Any:
    info = json.loads(Path(GOOGLE_PLACEHOLDER_CREDENTIALS).read_text(encoding="utf-8"))
    return Credentials.from_authorized_user_info(info)  # type: ignore[no-untyped-call]


def test_the_placeholder_refreshes_offline_and_other_credentials_do_not(tmp_path: Path) -> None:
    session = blackbox(mode="record", out=tmp_path / "run.json")
    try:
        credentials = placeholder_credentials()
        credentials.token = None
        credentials.refresh(transport)
        assert credentials.token == OFFLINE_PLACEHOLDER_KEY and credentials.valid
        own: Any = Credentials(  # type: ignore[no-untyped-call]
            token=None,
            refresh_token="a-real-refresh-token",
            client_id="id",
            client_secret="secret",
            token_uri="https://oauth2.googleapis.com/token",
        )
        with pytest.raises(Refused):
            own.refresh(transport)
    finally:
        session.discard()
