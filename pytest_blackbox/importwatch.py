"""Run a function the moment a module loads: how clients of optional libraries built later are seen.

An interception that patches a library (botocore's built-in handlers, DSPy's transports) must be in
place before the user's code builds its clients, which may happen when a test module is imported,
yet importing the library up front would make every run pay for it. A meta-path finder that finds
nothing itself follows the loading of the named modules with the function, and steps aside once
all of them have loaded. It imports nothing of the package, so every layer may use it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

__all__ = ["when_imported"]

Hook = Callable[[ModuleType], None]


class _Watch(importlib.abc.MetaPathFinder):
    """Follows the loading of its modules with its hook; leaves ``sys.meta_path`` after the last."""

    def __init__(self, names: frozenset[str], hook: Hook) -> None:
        self.names = names
        self.hook = hook

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        loader = spec.loader if spec is not None else None
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return None
        execute = loader.exec_module
        hook = self.hook

        def exec_module(module: ModuleType) -> None:
            execute(module)
            hook(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        if all(name == fullname or name in sys.modules for name in self.names):
            sys.meta_path[:] = [finder for finder in sys.meta_path if finder is not self]
        return spec


def when_imported(names: Sequence[str], hook: Hook) -> None:
    """Call ``hook`` now with each named module already loaded, and with each other one as it loads.

    A hook is watched for once at a time, so calling this again (per session, per test) adds no
    second finder; hooks must be safe to call more than once.
    """
    for name in names:
        module = sys.modules.get(name)
        if module is not None:
            hook(module)
    pending = frozenset(name for name in names if name not in sys.modules)
    if pending and _WATCHES.get(hook) not in sys.meta_path:
        watch = _WATCHES[hook] = _Watch(pending, hook)
        sys.meta_path.insert(0, watch)


#: The last watch of each hook, found in ``sys.meta_path`` while it follows its modules: every session
#: asks, and the other finders need not be looked at.
_WATCHES: dict[Hook, _Watch] = {}
