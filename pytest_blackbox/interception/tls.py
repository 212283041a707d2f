"""One default TLS context for the httpx and httpx2 clients built while the interceptor runs.

An httpx client builds its transport's TLS context as it is constructed, and loading the certificate
authorities into it is nearly all an SDK client's construction costs (about 40 ms; a replayed model
call costs a fraction of a millisecond). A test that builds its client in its body or in a
function-scoped fixture pays that every time, for a context a replayed call never opens a connection
with. While the interceptor runs, :func:`shared_default` hands every transport asking for the
*default* context (``verify=True``, no ``cert``) the one its library built first for the same
settings, as aiohttp does for all its sessions: the same certificates, the same checks, so a request
that does go out (recording, an allowed host) is verified exactly as before. Anything else (a context
of the test's own, ``verify=False``, a CA bundle, a client certificate) is built as it always is.
See docs/engine.md#model-calls.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["ENVIRONMENT", "MODULES", "shared_default"]

#: The modules whose ``create_ssl_context`` builds a transport's context (httpx2 first, as the SDKs use it).
MODULES = ("httpx2._transports.default", "httpx._transports.default")
#: What the default context is built from besides ``trust_env``: the CA bundle or folder the
#: environment names (read only with ``trust_env``), and the file TLS secrets are logged to.
ENVIRONMENT = ("SSL_CERT_FILE", "SSL_CERT_DIR", "SSLKEYLOGFILE")

MakeContext = Callable[..., Any]


def shared_default(original: MakeContext) -> MakeContext:
    """``original`` (a library's ``create_ssl_context``), building the default context once per
    ``trust_env`` and environment and handing that one out again; every other call goes through."""
    made: dict[tuple[object, ...], Any] = {}
    lock = threading.Lock()

    def create_ssl_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        if verify is not True or cert is not None:
            return original(verify=verify, cert=cert, trust_env=trust_env)
        settings = (bool(trust_env), *map(os.environ.get, ENVIRONMENT))
        with lock:
            if settings not in made:
                made[settings] = original(verify=True, cert=None, trust_env=trust_env)
            return made[settings]

    return create_ssl_context
