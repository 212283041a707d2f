"""Reading a cassette to replay: checked once per content, and verified in the same read when the
caller (the pytest plugin) must verify it first.

See docs/engine.md#replay-what-is-compared.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from ..analysis.verify import VerifyReport, verify_trace
from ..trace.io import load_trace, parse_trace
from ..trace.model import Trace

__all__ = ["load_cassette", "load_verified"]

#: Checked cassettes by the SHA-256 of their bytes: replaying the same file again (parametrized tests,
#: a benchmark, a flaky-test rerun) skips the parse, schema and hash-chain checks. Bounded, and keyed
#: by content, so an edited file is always checked again.
_CHECKED: OrderedDict[str, Trace] = OrderedDict()
_CHECKED_MAX = 16


def load_cassette(path: Path) -> Trace:
    """``load_trace``, remembering what was already checked. The trace is shared: never mutate it."""
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return load_trace(path)  # it raises the CassetteReadError that names the problem
    key = hashlib.sha256(data).hexdigest()
    trace = _CHECKED.get(key)
    if trace is None:
        trace = parse_trace(text, path=os.fspath(path))
        _CHECKED[key] = trace
        if len(_CHECKED) > _CHECKED_MAX:
            _CHECKED.popitem(last=False)
    return trace


def load_verified(path: Path, api_keys: Sequence[str] = ()) -> tuple[VerifyReport, Trace | None]:
    """``blackbox verify`` of the cassette at ``path`` and, when every invariant passes, the trace it read.

    A replay that must verify its cassette first (the pytest plugin) gets both from one read: the
    schema, the hash chain, provider neutrality (``api_keys`` as in ``verify_trace``) and
    replayability are checked once, on the very trace the session then replays (hand it to
    ``Session(…, trace=…)``), so the file is neither parsed twice nor read again after its check.
    """
    report = verify_trace(path, api_keys=api_keys, keep_trace=True)
    return report, report.trace if report.ok else None
