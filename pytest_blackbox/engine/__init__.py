"""One agent run: the session that records a cassette or replays one, and what it needs.

Data flows one way: intercepted request → provider → session → trace recorder when recording, and
cassette → replay cursor → provider → reply when replaying. See docs/engine.md.

The names below are what the other layers (the plugin, the CLI, the importers, the demo) use; they
import them from here, never from the modules inside (``tests/test_import_boundary.py`` holds them
to it). Each loads its module on first use, so the plugin's start-up stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cassettes import load_cassette, load_verified
    from .children import ChildWatch, follow_children
    from .ending import RunReport
    from .fields import check_drop_fields
    from .fork import SessionFork, fork_options_for, read_fork_set
    from .hosts import check_allowed_hosts, host_allowed, is_local, looks_like_ip
    from .jsonvalue import to_json_value
    from .keys import (
        GOOGLE_PLACEHOLDER_CREDENTIALS,
        KEY_VARIABLES,
        OFFLINE_PLACEHOLDER_KEY,
        environment_keys,
        is_placeholder,
        set_placeholder_keys,
    )
    from .launched import LAUNCHED_VAR, write_report
    from .mcp import MCPClient, mcp_client
    from .observed import AgentRun
    from .options import SESSION_ENV_VARS, SessionOptions, resolve_options
    from .owners import CallOwner, claim_calls, refuse_stray_call, release_calls, stray_owner
    from .rules import RULE_VALIDATORS, Secrets
    from .session import Session, blackbox
    from .tools import same_json
    from .wire import WireCall, refusal

__all__ = [
    "GOOGLE_PLACEHOLDER_CREDENTIALS",
    "KEY_VARIABLES",
    "LAUNCHED_VAR",
    "OFFLINE_PLACEHOLDER_KEY",
    "RULE_VALIDATORS",
    "SESSION_ENV_VARS",
    "AgentRun",
    "CallOwner",
    "ChildWatch",
    "MCPClient",
    "RunReport",
    "Secrets",
    "Session",
    "SessionFork",
    "SessionOptions",
    "WireCall",
    "blackbox",
    "check_allowed_hosts",
    "check_drop_fields",
    "claim_calls",
    "environment_keys",
    "follow_children",
    "fork_options_for",
    "host_allowed",
    "is_local",
    "is_placeholder",
    "load_cassette",
    "load_verified",
    "looks_like_ip",
    "mcp_client",
    "read_fork_set",
    "refusal",
    "refuse_stray_call",
    "release_calls",
    "resolve_options",
    "same_json",
    "set_placeholder_keys",
    "stray_owner",
    "to_json_value",
    "write_report",
]

_LAZY = {
    "load_cassette": "cassettes",
    "load_verified": "cassettes",
    "ChildWatch": "children",
    "follow_children": "children",
    "RunReport": "ending",
    "check_drop_fields": "fields",
    "SessionFork": "fork",
    "fork_options_for": "fork",
    "read_fork_set": "fork",
    "check_allowed_hosts": "hosts",
    "host_allowed": "hosts",
    "is_local": "hosts",
    "looks_like_ip": "hosts",
    "to_json_value": "jsonvalue",
    "GOOGLE_PLACEHOLDER_CREDENTIALS": "keys",
    "KEY_VARIABLES": "keys",
    "OFFLINE_PLACEHOLDER_KEY": "keys",
    "environment_keys": "keys",
    "is_placeholder": "keys",
    "set_placeholder_keys": "keys",
    "LAUNCHED_VAR": "launched",
    "write_report": "launched",
    "MCPClient": "mcp",
    "mcp_client": "mcp",
    "AgentRun": "observed",
    "CallOwner": "owners",
    "claim_calls": "owners",
    "refuse_stray_call": "owners",
    "release_calls": "owners",
    "stray_owner": "owners",
    "SESSION_ENV_VARS": "options",
    "SessionOptions": "options",
    "resolve_options": "options",
    "RULE_VALIDATORS": "rules",
    "Secrets": "rules",
    "Session": "session",
    "blackbox": "session",
    "same_json": "tools",
    "WireCall": "wire",
    "refusal": "wire",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
