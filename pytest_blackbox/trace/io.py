"""Reading and writing cassette files: strict JSON in, byte-exact JSON out, atomic writes.

Reading is stricter than ``JSON.parse`` on purpose: a cassette is evidence, so whatever two readers
could understand differently is refused rather than guessed at. See
docs/cassette-format.md#loading-a-cassette.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import marshal
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from .canonical import js_number, pretty_json_shared
from .chain import validate_chain
from .errors import (
    BlackboxError,
    CanonicalJSONError,
    CassetteError,
    CassetteReadError,
    CassetteSchemaError,
    CassetteVersionError,
    where,
)
from .model import CURRENT_TRACE_VERSION, Trace
from .nesting import TOO_DEEP, nested_too_deeply
from .schema import validate_schema
from .strictjson import Refused, number_float, number_int, refuse_constant, unique_object

__all__ = [
    "cassette_text",
    "collector_paused",
    "dumps_trace",
    "load_trace",
    "move_into_place",
    "parse_json",
    "parse_trace",
    "read_text",
    "same_file",
    "save_text",
    "save_trace",
    "share_repeated",
]

_TRACE_KEYS = ("version", "id", "createdAt", "steps", "parentId", "forkedFromStepId")
_STEP_KEYS = ("id", "index", "type", "timestamp", "payload", "prevHash", "hash")


_where = where


# --------------------------------------------------------------------------------------------
# Strict JSON


_PROBLEMS = {
    "duplicate": "duplicate object key{at} (each key may appear only once in an object)",
    "constant": "NaN or Infinity{at}: JSON has no such numbers",
    "overflow": "a number{at} is too large for a double (it would become Infinity)",
    "unsafe": "an integer{at} cannot be stored exactly as a double (beyond 2**53); store it as a string",
}


_DECODER = json.JSONDecoder(
    object_pairs_hook=unique_object,
    parse_constant=refuse_constant,
    parse_float=number_float,
    parse_int=number_int,
)

# Tokens of a JSON text that has already parsed up to the problem: strings, punctuation, literals.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^\s{}\[\],:"]+', re.DOTALL)
_KEY_FOLLOWS = re.compile(r"[ \t\r\n]*:")


@functools.lru_cache(maxsize=1024)
def _literal_problem(token: str) -> str | None:
    """Why ``token`` (a literal, not a string) is refused, or ``None``; a pure function of the token,
    remembered because a large refused file repeats the same few (a long array of ``1``)."""
    if token in ("true", "false", "null"):
        return None
    if token in ("NaN", "Infinity", "-Infinity"):
        return "constant"
    try:
        number_int(token) if re.fullmatch(r"-?\d+", token) else number_float(token)
    except Refused as refused:
        return refused.kind
    except ValueError:
        return None
    return None


def _locate(text: str) -> tuple[str, int] | None:
    """The first refused token in document order, found by a flat scan (no recursion)."""
    objects: list[set[str] | None] = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first == "{":
            objects.append(set())
        elif first == "[":
            objects.append(None)
        elif first in "}]":
            if objects:
                objects.pop()
        elif first == '"':
            keys = objects[-1] if objects else None
            if keys is not None and _KEY_FOLLOWS.match(text, match.end()):
                key = json.loads(token)
                if key in keys:
                    return "duplicate", match.start()
                keys.add(key)
        elif first not in ",:":
            kind = _literal_problem(token)
            if kind is not None:
                return kind, match.start()
    return None


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - text.rfind("\n", 0, offset)


def _refused_error(text: str, refused: Refused, path: str | None) -> CassetteReadError:
    located = _locate(text)
    if located is None:
        problem = _PROBLEMS[refused.kind].format(at="")
    else:
        kind, offset = located
        line, column = _line_column(text, offset)
        problem = _PROBLEMS[kind].format(at=f" at line {line}, column {column}")
    return CassetteReadError(f"{_where(path)} is not valid cassette JSON: {problem}", path=path)


def parse_json(text: str, *, path: str | None = None) -> Any:
    """Strict JSON: duplicate keys, NaN/Infinity and inexact integers refused; integral floats become ints."""
    if not text.strip():
        raise CassetteReadError(f"{_where(path)} is empty: it holds no JSON", path=path)
    if text.startswith("\ufeff"):  # an editor's UTF-8 BOM: JSON allows none, and a message must say so
        raise CassetteReadError(
            f"{_where(path)} starts with a byte order mark (BOM), which JSON does not allow; "
            "save it as UTF-8 without a BOM",
            path=path,
        )
    try:
        doc = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        reason = exc.msg.removesuffix(" at")
        raise CassetteReadError(
            f"{_where(path)} is not valid JSON: {reason} at line {exc.lineno}, column {exc.colno}", path=path
        ) from None
    except Refused as refused:
        raise _refused_error(text, refused, path) from None
    except RecursionError:
        raise _too_deep(path) from None
    return doc


def _too_deep(path: str | None) -> CassetteReadError:
    return CassetteReadError(f"{_where(path)} is {TOO_DEEP}", path=path)


# --------------------------------------------------------------------------------------------
# Traces


def _check_version(doc: dict[str, Any], path: str | None) -> None:
    prefix = f"{_where(path)} is not a v2 cassette"
    if "version" not in doc:
        raise CassetteVersionError(f"{prefix}: version field is missing", path=path)
    version = doc["version"]
    if isinstance(version, bool) or not isinstance(version, (int, float)):
        raise CassetteVersionError(f"{prefix}: version field is not a number", path=path)
    if version == 1:
        raise CassetteVersionError(
            f"{prefix}: version 1 is unreadable: re-record the run (there is no v1 → v2 migration)", path=path
        )
    if version != CURRENT_TRACE_VERSION:
        raise CassetteVersionError(
            f"{prefix}: version {js_number(version)} is not supported (expected {CURRENT_TRACE_VERSION})",
            path=path,
        )


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off meanwhile (as it was before, after), while a cassette is read.

    Parsing a cassette allocates one object per JSON value and keeps them all, so the collector would
    run again and again, each time walking the whole growing document (a third of a long cassette's
    load time) to find nothing: parsed JSON holds no cycles, and what the checks drop is freed by
    reference counting.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse_trace(text: str, *, path: str | None = None, shared: bool = False) -> Trace:
    """Parse a cassette's text and check, in order: JSON, version, schema, hash chain.

    ``shared``: each message and tool that a later ``model_input`` repeats exactly is the object read
    first (:func:`share_repeated`), walked for depth and hashed once (a 200-call cassette loads in
    about half the time); for a caller that only reads the trace: editing a shared item in place
    would edit it in every step.
    """
    with collector_paused():
        return _parse_trace(text, path, shared)


#: The lists of a ``model_input`` payload that every later request of the conversation repeats.
_REPEATED = ("messages", "tools")


def share_repeated(step: Any, seen: dict[bytes, Any]) -> None:
    """Make each message and tool of ``step`` (a ``model_input``) that an earlier step read with the
    same ``seen`` held already the object read first.

    Two items count as the same only if ``marshal`` (format 2, which writes no back-references)
    writes them alike: the same JSON, key for key in the same order, each scalar of the same type and
    value, where ``==`` takes ``true`` for ``1``. The checks after it walk and hash a shared item once
    (by identity), so a long conversation's cassette no longer costs the square of its length to
    check. Only for a trace its reader never edits: one edit would show in every step.
    """
    payload = step.get("payload") if type(step) is dict and step.get("type") == "model_input" else None
    if type(payload) is not dict:
        return
    for items in (payload.get(name) for name in _REPEATED):
        if isinstance(items, list):
            _share_items(items, seen)


def _share_items(items: list[Any], seen: dict[bytes, Any]) -> None:
    for index, item in enumerate(items):
        try:
            written = marshal.dumps(item, 2)
        except ValueError:  # nested deeper than marshal goes: the depth check refuses it next
            continue
        items[index] = seen.setdefault(written, item)


def _parse_trace(text: str, path: str | None, shared: bool) -> Trace:
    doc = parse_json(text, path=path)
    if not isinstance(doc, dict):
        raise CassetteSchemaError(
            f"{_where(path)} does not match the trace v2 schema at the top level: must be an object",
            path=path,
        )
    _check_version(doc, path)
    steps = doc.get("steps")
    walked: dict[int, int] | None = None
    if shared and isinstance(steps, list):
        seen: dict[bytes, Any] = {}
        for step in steps:
            share_repeated(step, seen)
        walked = {}
    for position, step in enumerate(steps if isinstance(steps, list) else []):
        if nested_too_deeply(step, walked=walked):  # verify's limit for each step: both tools agree
            raise CassetteReadError(f"{_where(path)} step {position} is {TOO_DEEP}", path=path)
    try:
        validate_schema(doc, path=path)
        validate_chain(doc, path=path)
    except RecursionError:
        raise _too_deep(path) from None
    return cast(Trace, doc)


#: How a read failure is worded, by problem: for a cassette (named as ``where`` names it), and for
#: another input file the user gave (a transcript, a fork script, a ``--set`` file).
_CASSETTE_PROBLEMS = {
    "missing": "{where} does not exist",
    "directory": "{where} is a directory, not a cassette file",
    "denied": "{where} cannot be read: permission denied",
    "os": "{where} cannot be read: {detail}",
    "path": "{where} is not a valid file path",
    "encoding": "{where} is not UTF-8 text (invalid byte at offset {detail})",
}
_INPUT_PROBLEMS = {
    "missing": "cannot read the {subject} {path}: no such file",
    "directory": "cannot read the {subject} {path}: it is a directory",
    "denied": "cannot read the {subject} {path}: {detail}",
    "os": "cannot read the {subject} {path}: {detail}",
    "path": "cannot read the {subject} {path}: it is not a valid file path",
    "encoding": "cannot read the {subject} {path}: it is not UTF-8 text",
}


def read_text(
    path: str, *, subject: str | None = None, error: Callable[[str], BlackboxError] = BlackboxError
) -> str:
    """A user file's text; every failure one line naming the file, never a traceback.

    A cassette (no ``subject``) is read byte-exact and fails as a ``CassetteReadError``. Any other
    input (``subject="transcript"``, with the ``error`` the command raises) may start with a byte-order
    mark, which editors on Windows add and which is dropped.
    """
    try:
        if os.path.isdir(path):
            raise IsADirectoryError(path)
        data = Path(path).read_bytes()
        return data.decode("utf-8" if subject is None else "utf-8-sig")
    except FileNotFoundError:
        problem, detail = "missing", ""
    except IsADirectoryError:
        problem, detail = "directory", ""
    except PermissionError as exc:
        problem, detail = "denied", _os_reason(exc)
    except OSError as exc:
        problem, detail = "os", _os_reason(exc)
    except UnicodeDecodeError as exc:
        problem, detail = "encoding", str(exc.start)
    except (ValueError, UnicodeError):  # a NUL byte or a lone surrogate: no OS can open it
        problem, detail = "path", ""
    if subject is None:
        message = _CASSETTE_PROBLEMS[problem].format(where=_where(path), detail=detail)
        raise CassetteReadError(message, path=path) from None
    message = _INPUT_PROBLEMS[problem].format(subject=subject, path=path, detail=detail)
    raise error(message) from None


def load_trace(path: str | os.PathLike[str], *, shared: bool = False) -> Trace:
    """Read and fully check a cassette file; every failure is a ``CassetteError`` naming the file.

    ``shared``: see :func:`parse_trace`.
    """
    name = os.fspath(path)
    return parse_trace(read_text(name), path=name, shared=shared)


# --------------------------------------------------------------------------------------------
# Writing


def _ordered(record: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """``order`` first (the original's writer order), then anything else as it came."""
    ordered = {key: record[key] for key in order if key in record}
    for key, value in record.items():
        ordered.setdefault(key, value)
    return ordered


def dumps_trace(trace: Trace) -> str:
    """The cassette file text: ``JSON.stringify(trace, null, 2)`` in the writer's key order, no newline."""
    doc = _ordered(cast("dict[str, Any]", trace), _TRACE_KEYS)
    steps = doc.get("steps")
    if isinstance(steps, list):
        doc["steps"] = [_ordered(s, _STEP_KEYS) if isinstance(s, dict) else s for s in steps]
    return pretty_json_shared(doc)


def _os_reason(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__


#: A temporary file older than this belongs to a writer that died (kill -9, power loss): no live
#: save holds one open for minutes, so the next save of the same cassette may remove it.
STALE_TEMP_SECONDS = 15 * 60

_TEMP_TAIL = re.compile(r"[0-9a-f]{12}\.tmp")


def _temp_prefix(name: str) -> str:
    return f".{name}."


def _open_temp(directory: str, name: str) -> tuple[int, str]:
    """A fresh file next to the target, created with the umask's mode like any new file."""
    while True:
        candidate = os.path.join(directory, f"{_temp_prefix(name)}{secrets.token_hex(6)}.tmp")
        try:
            return os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), candidate
        except FileExistsError:
            continue


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` may write less than asked (a signal, a nearly full disk): keep going from there."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable; not every platform lets a directory be opened, so best effort."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_stale_temps(directory: str, name: str) -> None:
    """Without this, every writer killed mid-save would leave one more hidden file for good.

    Only this cassette's own temporary files are touched, and only old ones, so a concurrent
    writer's file in progress is never pulled from under it. Best effort: a save never fails here.
    """
    prefix = _temp_prefix(name)
    cutoff = time.time() - STALE_TEMP_SECONDS
    try:
        with os.scandir(directory) as entries:
            stale = [
                entry.path
                for entry in entries
                if entry.name.startswith(prefix)
                and _TEMP_TAIL.fullmatch(entry.name, len(prefix))
                and entry.is_file(follow_symlinks=False)
                and entry.stat(follow_symlinks=False).st_mtime < cutoff
            ]
    except OSError:
        return
    for path in stale:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _write_replacing(target: str, data: bytes) -> None:
    directory = os.path.dirname(target) or "."
    os.makedirs(directory, exist_ok=True)
    fd, temp = _open_temp(directory, os.path.basename(target))
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temp, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(directory)
    _remove_stale_temps(directory, os.path.basename(target))


def move_into_place(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Rename a finished file (a pending recording) over ``target``, durably: the rename is ``fsync``ed.

    ``source`` must be complete and in the same directory; after a crash the target is either the
    previous file or the new one.
    """
    os.replace(source, target)
    _fsync_directory(os.path.dirname(os.fspath(target)) or ".")


def save_trace(trace: Trace, path: str | os.PathLike[str]) -> None:
    """Write atomically: the file is either the previous version or the complete new one, never half.

    The text goes to ``.<name>.<12 hex>.tmp`` in the same directory, is ``fsync``ed and renamed over
    the target. A writer killed mid-save leaves that hidden file behind (the cassette itself is
    untouched); the next successful save of the same cassette removes such files once they are
    older than ``STALE_TEMP_SECONDS``.
    """
    save_text(cassette_text(trace, path), path)


def cassette_text(trace: Trace, path: str | os.PathLike[str]) -> str:
    """:func:`dumps_trace`, for the file at ``path``: a trace with no JSON text is refused naming it."""
    try:
        return dumps_trace(trace)
    except CanonicalJSONError as exc:
        target = os.fspath(path)
        raise CassetteError(f"could not write `{target}`: {exc}", path=target) from None


def save_text(text: str, path: str | os.PathLike[str]) -> None:
    """Write a cassette's :func:`cassette_text` as :func:`save_trace` does (for a writer that looked at
    the text first: a recording scans it for keys before writing it)."""
    target = os.fspath(path)
    try:
        _write_replacing(target, text.encode("utf-8"))
    except OSError as exc:
        raise CassetteError(
            f"could not write `{target}`: {_os_reason(exc)}; any previous file there is unchanged",
            path=target,
        ) from None


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file, however spelled: ``..``, symlinks and hard links all count.

    An existing file is compared by device and inode; a path that does not exist yet cannot be
    any existing file, whatever its spelling.
    """
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
