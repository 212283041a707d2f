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
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["watch_botocore"]

#: The modules whose loading registers the handler: botocore's built-in handlers, aiobotocore's map.
_WATCHED = ("botocore.handlers", "aiobotocore.hooks")
_ADAPTER = "pytest_blackbox.interception.botocore_adapter"


def _install() -> None:
    importlib.import_module(_ADAPTER).install()


class _Watch(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when a watched module is found, its loading is followed by the
    registration, and the watch steps aside once every watched module has loaded."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _WATCHED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        loader = spec.loader if spec is not None else None
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return None
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            _install()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        if all(name == fullname or name in sys.modules for name in _WATCHED):
            _unwatch()
        return spec


def watch_botocore() -> None:
    """Register the handler now for what is loaded, and as soon as the rest loads (once per process)."""
    if any(name in sys.modules for name in _WATCHED):
        _install()
    if not all(name in sys.modules for name in _WATCHED) and not any(
        isinstance(finder, _Watch) for finder in sys.meta_path
    ):
        sys.meta_path.insert(0, _Watch())


def _unwatch() -> None:
    sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, _Watch)]
