"""Which hosts a replay may still reach: loopback, and the hosts a test allows (``allowed_hosts``).

A replay answers model calls itself; anything else an agent sends must stay on this machine (users
run local services in tests) or go to a host they named. The session applies this rule to requests
through httpx/httpx2, the pytest plugin's socket guard to every other connection, so both agree.
See docs/pytest.md#network-blocking.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from ..errors import BlackboxUsageError

__all__ = ["check_allowed_hosts", "host_allowed", "is_local", "looks_like_ip"]

_HOST_NAME = re.compile(r"(?:[A-Za-z0-9*_-]+\.)*[A-Za-z0-9*_-]+\.?")


def looks_like_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def is_local(host: str) -> bool:
    """Loopback (or the unspecified address, which connects to this machine), as a name or an IP."""
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return host.lower().rstrip(".") == "localhost"
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        address = mapped
    return address.is_loopback or address.is_unspecified


def host_allowed(allowed: Iterable[str], *names: str) -> bool:
    """Whether any of ``names`` (a host as named, or as resolved) matches an allowed pattern."""
    return any(fnmatchcase(name.lower().rstrip("."), pattern) for name in names for pattern in allowed)


def _host(value: str) -> str:
    host = value.strip()
    if not looks_like_ip(host.strip("[]")) and not _HOST_NAME.fullmatch(host):
        raise BlackboxUsageError(
            f"allowed_hosts: {value!r} is not a host name or IP address "
            '(write the host only, such as "api.example.com" or "*.internal": no scheme, port or path)'
        )
    return host.strip("[]").lower()


def check_allowed_hosts(value: Any) -> tuple[str, ...]:
    """``allowed_hosts``: host names or IP addresses (``*`` wildcards), one or a list."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) and i.strip() for i in items):
        raise BlackboxUsageError(f"allowed_hosts={value!r} must be a list of host names or IP addresses")
    return tuple(_host(item) for item in items)
