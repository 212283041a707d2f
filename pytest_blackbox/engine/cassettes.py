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
from typing import TypeVar

from ..analysis.verify import VerifyReport, verify_trace
from ..trace.io import load_trace, parse_trace
from ..trace.model import Trace

__all__ = ["load_cassette", "load_verified"]

#: Checked cassettes by the SHA-256 of their bytes: replaying the same file again (parametrized tests,
#: a benchmark, a flaky-test rerun) skips the parse, schema and hash-chain checks. Bounded, and keyed
#: by content, so an edited file is always checked again.
_CHECKED: OrderedDict[str, Trace] = OrderedDict()
#: Cassettes that passed ``verify``, by path, the SHA-256 of their bytes and the keys looked for.
_VERIFIED: OrderedDict[tuple[str, str, tuple[str, ...]], tuple[VerifyReport, Trace]] = OrderedDict()
_REMEMBERED = 16

_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(cache: OrderedDict[_K, _V], key: _K, value: _V) -> None:
    cache[key] = value
    if len(cache) > _REMEMBERED:
        cache.popitem(last=False)


def _digest(path: Path) -> str | None:
    """The SHA-256 of the file's bytes, or ``None`` if it cannot be read (the check then says why)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


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
        _remember(_CHECKED, key, trace)
    return trace


def load_verified(path: Path, api_keys: Sequence[str] = ()) -> tuple[VerifyReport, Trace | None]:
    """``blackbox verify`` of the cassette at ``path`` and, when every invariant passes, the trace it read.

    A replay that must verify its cassette first (the pytest plugin) gets both from one read: the
    schema, the hash chain, provider neutrality (``api_keys`` as in ``verify_trace``) and
    replayability are checked once, on the very trace the session then replays (hand it to
    ``Session(…, trace=…)``), so the file is neither parsed twice nor read again after its check.

    A cassette that passed is remembered by its path, the SHA-256 of its bytes and ``api_keys``: the
    tests of one process that replay the same unchanged file share one check and one trace (never
    mutate it). The bytes are hashed before and after the check and only remembered when both agree,
    so a file edited meanwhile, or at any time after, is checked again.
    """
    before = _digest(path)
    key = (os.fspath(path), before or "", tuple(api_keys))
    known = _VERIFIED.get(key) if before is not None else None
    if known is not None:
        _VERIFIED.move_to_end(key)
        return known
    report = verify_trace(path, api_keys=api_keys, keep_trace=True)
    if not report.ok or report.trace is None:
        return report, None
    if before is not None and _digest(path) == before:
        _remember(_VERIFIED, key, (report, report.trace))
    return report, report.trace
