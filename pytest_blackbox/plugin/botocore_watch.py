"""boto3 clients built at import are seen: Blackbox's botocore handler is registered as botocore loads.

botocore copies its built-in handlers into every session it creates, and every client copies its
session's; a handler added later reaches none of the clients already built. A test module may
build a ``bedrock-runtime`` client when it is imported, long before a blackbox test starts the
interception, so the plugin registers a small handler the moment ``botocore.handlers`` is imported,
without importing botocore (or the interception layer) itself: a run that never uses boto3 pays
nothing. The handler hands each request to the interception layer's once that is loaded, and
otherwise lets botocore send it. See docs/engine.md#model-calls.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from ..vocabulary import BOTOCORE_HANDLER_MARK

__all__ = ["watch_botocore"]

_HANDLERS = "botocore.handlers"
_ADAPTER = "pytest_blackbox.interception.botocore_adapter"


def _before_send(**kwargs: Any) -> Any:
    """botocore's ``before-send``: the interception layer decides once it is loaded (an interceptor
    has started); until then the request is botocore's to send."""
    adapter = sys.modules.get(_ADAPTER)
    return None if adapter is None else adapter.before_send(**kwargs)


setattr(_before_send, BOTOCORE_HANDLER_MARK, True)


def _register(handlers: ModuleType) -> None:
    registered: list[tuple[Any, ...]] = handlers.BUILTIN_HANDLERS
    if not any(getattr(spec[1], BOTOCORE_HANDLER_MARK, False) for spec in registered if len(spec) > 1):
        registered.append(("before-send", _before_send))


class _Watch(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``botocore.handlers`` is found, its loading is followed by the
    registration, and the watch steps aside."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _HANDLERS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        loader = spec.loader if spec is not None else None
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return None
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            _register(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        _unwatch()
        return spec


def watch_botocore() -> None:
    """Register the handler now if botocore is loaded, else as soon as it is (once per process)."""
    handlers = sys.modules.get(_HANDLERS)
    if handlers is not None:
        _register(handlers)
    elif not any(isinstance(finder, _Watch) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Watch())


def _unwatch() -> None:
    sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, _Watch)]
