"""boto3 and aiobotocore clients built at import are seen: Blackbox's handler is registered as they load.

botocore copies its built-in handlers into every session it creates, and every client copies its
session's; a handler added later reaches none of the clients already built. A test module may
build a ``bedrock-runtime`` client when it is imported, long before a blackbox test starts the
interception, so the plugin registers the interception layer's handler the moment
``botocore.handlers`` is imported, and maps it to its async twin the moment ``aiobotocore.hooks``
is (aiobotocore's sessions take the built-in handlers through that map). Neither is imported here:
a run that never uses boto3 pays nothing. Until an interceptor starts, the handler lets botocore
send every request. See docs/engine.md#model-calls.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..importwatch import when_imported

__all__ = ["watch_botocore"]

#: The modules whose loading registers the handler: botocore's built-in handlers, aiobotocore's map.
_WATCHED = ("botocore.handlers", "aiobotocore.hooks")
_ADAPTER = "pytest_blackbox.interception.botocore_adapter"


def _install(_: ModuleType) -> None:
    importlib.import_module(_ADAPTER).install()


def watch_botocore() -> None:
    """Register the handler now for what is loaded, and as soon as the rest loads (once per process)."""
    when_imported(_WATCHED, _install)
