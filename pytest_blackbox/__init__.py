"""pytest-blackbox's public API: the session, cassette I/O, verification, forks and the errors.

Only the errors are imported eagerly; every other name loads its module on first use, because pytest
imports this package in every project that has the plugin installed (``tests/plugin/test_startup.py``
holds it to that). No optional SDK is needed to import any of them: ``mcp_client`` says what to
install when it is used without the ``mcp`` extra. ``__version__`` is the installed distribution's,
read from its metadata, so the version is written once, in pyproject.toml. See docs/index.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    BlackboxError,
    BlackboxUnsupportedError,
    BlackboxUsageError,
    CassetteError,
    DroppedFieldWarning,
    OfflineRequestError,
    RecordedToolError,
    RelaxedMatchWarning,
    ReplayDivergenceError,
    SecretLeakError,
    StrayCallWarning,
    UnreplayableWarning,
)

if TYPE_CHECKING:
    __version__: str

    from .analysis.verify import verify_trace
    from .demo.fork import fork_run
    from .engine.ending import RunReport
    from .engine.mcp import MCPClient, mcp_client
    from .engine.observed import AgentRun, ModelCall, ToolCall
    from .engine.rules import Secrets
    from .engine.session import Session, blackbox
    from .plugin.testrun import CassetteSession
    from .trace.io import dumps_trace, load_trace, parse_trace, save_trace
    from .trace.model import Trace, TraceStep

__all__ = [
    "AgentRun",
    "BlackboxError",
    "BlackboxUnsupportedError",
    "BlackboxUsageError",
    "CassetteError",
    "CassetteSession",
    "DroppedFieldWarning",
    "MCPClient",
    "ModelCall",
    "OfflineRequestError",
    "RecordedToolError",
    "RelaxedMatchWarning",
    "ReplayDivergenceError",
    "RunReport",
    "SecretLeakError",
    "Secrets",
    "Session",
    "StrayCallWarning",
    "ToolCall",
    "Trace",
    "TraceStep",
    "UnreplayableWarning",
    "blackbox",
    "dumps_trace",
    "fork_run",
    "load_trace",
    "mcp_client",
    "parse_trace",
    "save_trace",
    "verify_trace",
]

_LAZY = {
    "AgentRun": "engine.observed",
    "ModelCall": "engine.observed",
    "ToolCall": "engine.observed",
    "CassetteSession": "plugin.testrun",
    "MCPClient": "engine.mcp",
    "mcp_client": "engine.mcp",
    "RunReport": "engine.ending",
    "Secrets": "engine.rules",
    "Session": "engine.session",
    "blackbox": "engine.session",
    "fork_run": "demo.fork",
    "dumps_trace": "trace.io",
    "load_trace": "trace.io",
    "parse_trace": "trace.io",
    "save_trace": "trace.io",
    "Trace": "trace.model",
    "TraceStep": "trace.model",
    "verify_trace": "analysis.verify",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from .version import installed_version

        globals()[name] = value = installed_version()
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_blackbox' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
