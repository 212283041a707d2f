"""Reading a cassette to replay: checked once per content, and verified in the same read when the
caller (the pytest plugin) must verify it first.

See docs/engine.md#replay-what-is-compared.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from ..analysis.verify import VerifyReport, verify_trace
from ..trace.io import load_trace, parse_trace
from ..trace.model import Trace
from .recorded import note_media_free

__all__ = ["load_cassette", "load_verified"]

#: Checked cassettes by the SHA-256 of their bytes: replaying the same file again (parametrized tests,
#: a benchmark, a flaky-test rerun) skips the parse, schema and hash-chain checks. Bounded, and keyed
#: by content, so an edited file is always checked again.
_CHECKED: OrderedDict[str, Trace] = OrderedDict()
#: Cassettes that passed ``verify``, by path, the SHA-256 of their bytes and the keys looked for.
_VERIFIED: OrderedDict[tuple[str, str, tuple[str, ...]], tuple[VerifyReport, Trace]] = OrderedDict()
_REMEMBERED = 16
#: Files whose metadata stands for their bytes: path → (signature, SHA-256 of the bytes). See
#: :func:`_fingerprint`.
_FINGERPRINTS: OrderedDict[str, tuple[tuple[int, ...], str]] = OrderedDict()
#: How long before it was hashed a file must have last changed for its metadata to stand for its
#: bytes: an edit within one tick of the file system's clock (up to 2 s on some) can leave them alike.
SETTLED_NS = 2_000_000_000
_now_ns = time.time_ns

_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(cache: OrderedDict[_K, _V], key: _K, value: _V, bound: int = _REMEMBERED) -> None:
    cache[key] = value
    if len(cache) > bound:
        cache.popitem(last=False)


def _signature(stat: os.stat_result) -> tuple[int, ...]:
    """What changes with a file's bytes: its identity, size and times (``ctime`` no one can set back)."""
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _fingerprint(path: Path) -> tuple[str, bytes | None]:
    """The SHA-256 of the file's bytes, and the bytes when they had to be read (raises ``OSError``).

    A replay reads the same cassette again and again (every test, every run of a benchmark), and
    hashing a long run's cassette (16 MB at 200 calls) costs more than replaying a call. So a file's
    metadata stands for its bytes (``None`` comes back) while its signature (device, inode, size,
    modification and change times) is the one it had when they were hashed, provided it had not
    changed for :data:`SETTLED_NS` by then: any later write moves its change time, and a write too
    close to the hash to move it visibly is ruled out (git treats "racily clean" files alike).
    """
    name = os.fspath(path)
    before = os.stat(name)
    known = _FINGERPRINTS.get(name)
    if known is not None and known[0] == _signature(before):
        return known[1], None
    started = _now_ns()
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    after = os.stat(name)
    settled = max(after.st_mtime_ns, after.st_ctime_ns) < started - SETTLED_NS
    if settled and _signature(after) == _signature(before):
        _remember(_FINGERPRINTS, name, (_signature(after), digest), bound=1024)
    return digest, data


def load_cassette(path: Path) -> Trace:
    """``load_trace``, remembering what was already checked. The trace is shared: never mutate it."""
    try:
        key, data = _fingerprint(path)
        trace = _CHECKED.get(key)
        if trace is not None:
            return trace
        if data is None:  # known by its metadata, but its trace was forgotten since
            data = path.read_bytes()
            key = hashlib.sha256(data).hexdigest()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return load_trace(path)  # it raises the CassetteReadError that names the problem
    trace = parse_trace(text, path=os.fspath(path), shared=True)
    note_media_free(trace, text)
    _remember(_CHECKED, key, trace)
    return trace


def load_verified(path: Path, api_keys: Sequence[str] = ()) -> tuple[VerifyReport, Trace | None]:
    """``blackbox verify`` of the cassette at ``path`` and, when every invariant passes, the trace it read.

    A replay that must verify its cassette first (the pytest plugin) gets both from one read: the
    schema, the hash chain, provider neutrality (``api_keys`` as in ``verify_trace``) and
    replayability are checked once, on the very trace the session then replays (hand it to
    ``Session(…, trace=…)``), so the file is neither parsed twice nor read again after its check.

    A cassette that passed is remembered by its path, the SHA-256 of the bytes read and ``api_keys``:
    the tests of one process that replay the same unchanged file share one check and one trace (never
    mutate it). The bytes hashed are the bytes checked, so a file edited at any time, by a byte, is
    checked again.
    """
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except (OSError, ValueError):  # not UTF-8 among them
        return verify_trace(path, api_keys=api_keys), None  # its report names the problem
    key = (os.fspath(path), hashlib.sha256(data).hexdigest(), tuple(api_keys))
    known = _VERIFIED.get(key)
    if known is not None:
        _VERIFIED.move_to_end(key)
        return known
    report = verify_trace(path, api_keys=api_keys, keep_trace=True, text=text)
    if not report.ok or report.trace is None:
        return report, None
    _remember(_VERIFIED, key, (report, report.trace))
    return report, report.trace
