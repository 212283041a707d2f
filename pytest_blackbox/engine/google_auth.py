"""The offline placeholder's Google credentials refresh without the network.

An offline run points ``GOOGLE_APPLICATION_CREDENTIALS`` at placeholder credentials
(``keys.GOOGLE_PLACEHOLDER_CREDENTIALS``) whose access token never expires, which is enough for
google-genai. ``AnthropicVertex`` refreshes the credentials it loads all the same, which would send
the placeholder refresh token to Google's token endpoint (through ``requests``, which nothing
intercepts): a replay would fail on the network, a recording on an answer of 401. So, while any
session runs, refreshing credentials whose refresh token is the placeholder hands back the
placeholder access token, offline; a recording then refuses the model call that would carry it,
asking for real credentials. Any other credentials refresh as usual.

google-auth is patched once it is imported, whenever that is, and nothing is imported for it:
google-auth stays optional, and a run that never loads it pays nothing.
See docs/providers.md#anthropic-on-vertex-ai.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Sequence
from datetime import datetime
from types import ModuleType
from typing import Any

from .keys import OFFLINE_PLACEHOLDER_KEY

__all__ = ["answer_placeholder_refresh"]

#: The module of google-auth's user credentials, the kind the placeholder file loads as.
_MODULE = "google.oauth2.credentials"
#: The placeholder token's expiry, as the placeholder file gives it.
_NEVER = datetime(2999, 12, 31, 23, 59, 59)
#: Set on the patched refresh, so a module imported again (``importlib.reload``, a fresh
#: ``sys.modules``) is patched again and a patched one never twice.
_MARK = "_blackbox_offline_placeholder"
_LOCK = threading.Lock()


def answer_placeholder_refresh() -> None:
    """From now on, refresh placeholder credentials offline (at once if google-auth is loaded)."""
    with _LOCK:
        module = sys.modules.get(_MODULE)
        if module is not None:
            _patch(module)
        elif not any(isinstance(finder, _Watcher) for finder in sys.meta_path):
            sys.meta_path.insert(0, _Watcher())


def _patch(module: ModuleType) -> None:
    """Wrap the user credentials' refresh: the placeholder's is answered here, any other's goes on."""
    credentials: Any = module.Credentials
    refresh = credentials._perform_refresh_token
    if getattr(refresh, _MARK, False):
        return

    def _perform_refresh_token(self: Any, request: Any) -> None:
        if self.refresh_token != OFFLINE_PLACEHOLDER_KEY:
            refresh(self, request)
            return
        self.token = OFFLINE_PLACEHOLDER_KEY
        self.expiry = _NEVER

    setattr(_perform_refresh_token, _MARK, True)
    credentials._perform_refresh_token = _perform_refresh_token


class _Watcher(importlib.abc.MetaPathFinder):
    """Patches google-auth's user credentials as they are imported, then steps aside."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _MODULE:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader)
        return spec


class _PatchingLoader(importlib.abc.Loader):
    """The module's own loader, and the patch once the module has run."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _patch(module)
