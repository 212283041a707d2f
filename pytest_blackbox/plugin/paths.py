"""Where a test's cassette lives: one file per node id, every path part safe on every operating system,
and a short hash wherever a test id had to change, so two ids never share a file. See
docs/pytest.md#where-cassettes-go.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import time
from collections.abc import Iterable
from pathlib import Path

#: Longest file name (without ``.json``), in characters, before it is shortened with a hash suffix.
MAX_NAME = 120
#: File systems limit a name to 255 *bytes*. The longest name a cassette gets on disk is the
#: temporary file of its pending recording: ``.<.<name>.json.<pid>.pending>.<12 hex>.tmp``, 40 bytes
#: around the name with a seven-digit process id (the largest Linux allows).
MAX_NAME_BYTES = 255 - len("." + "." + ".json" + ".4194304.pending" + ".0123456789ab.tmp")
#: What a ``..`` of a test file's folder becomes in the shared cassette tree (a test outside the rootdir).
PARENT_PART = "_up"
#: A pending file left by a process that is gone (killed mid-run) is removed by the next run; so is
#: one older than this, whatever its process id says (ids are reused).
STALE_PENDING_SECONDS = 24 * 3600
_HASH_LENGTH = 10
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f\ud800-\udfff]')
_RESERVED = {
    "CON",
    "PRN",
    "AUX",
    "NUL",
    *(f"COM{i}" for i in range(1, 10)),
    *(f"LPT{i}" for i in range(1, 10)),
}


def shared_cassette_advice(whom: str) -> str:
    """What to do when two tests derive one cassette path (said in the failure and in the summary)."""
    return (
        f"each test needs a cassette of its own: give {whom} another cassette_dir, or name its "
        "cassette with cassette= (tests may share a cassette only when they name it)"
    )


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_LENGTH]


def _fits(name: str) -> bool:
    return len(name) <= MAX_NAME and len(name.encode("utf-8")) <= MAX_NAME_BYTES


def _with_hash(cleaned: str, original: str) -> str:
    """``cleaned``, cut to fit with room for ``-<hash of original>``, then that suffix."""
    suffix = f"-{_digest(original)}"
    head = cleaned[: MAX_NAME - len(suffix)].encode("utf-8")[: MAX_NAME_BYTES - len(suffix)]
    return head.decode("utf-8", errors="ignore").rstrip(" .") + suffix


def _cleaned(name: str) -> str:
    cleaned = _UNSAFE.sub("_", name).rstrip(" .") or "_"
    if cleaned.split(".")[0].upper() in _RESERVED:
        cleaned = "_" + cleaned
    return cleaned


def safe_name(name: str) -> str:
    """A file-name part every OS accepts, within its limits; different inputs never give the same part."""
    cleaned = _cleaned(name)
    if cleaned == name and _fits(cleaned):
        return cleaned
    return _with_hash(cleaned, name)


def case_distinct_name(name: str) -> str:
    """The name of a test whose id differs from another's only in case (``test_x[A]``, ``test_x[a]``).

    On a case-insensitive file system (macOS, Windows) both would open one file, so each gets its
    hash; a name that already ends in one is distinct as it is.
    """
    cleaned = safe_name(name)
    return cleaned if cleaned != name else _with_hash(cleaned, name)


def test_stem(classes: Iterable[str], test_name: str) -> str:
    """The test's id inside its module, as the cassette name spells it: ``Outer.Inner.test_x[id]``."""
    return ".".join([*classes, test_name])


def case_collisions(stems: Iterable[str]) -> set[str]:
    """The stems of one module that share their file name with another one on a case-insensitive disk."""
    by_folded: dict[str, set[str]] = {}
    for stem in stems:
        by_folded.setdefault(safe_name(stem).casefold(), set()).add(stem)
    return {
        stem for group in by_folded.values() if len(group) > 1 for stem in group if safe_name(stem) == stem
    }


def cassette_name(stem: str, collisions: set[str] | frozenset[str] = frozenset()) -> str:
    """The file name (with ``.json``) of a test's cassette, given its module's case collisions."""
    return (case_distinct_name(stem) if stem in collisions else safe_name(stem)) + ".json"


def module_folder(test_file: Path, shared: tuple[Path, Path] | None = None) -> Path:
    """The folder holding the cassettes of one test module.

    ``shared`` is ``(cassette dir, rootdir)`` when the ``blackbox_cassette_dir`` ini key puts every
    cassette in one tree: the module's folder then repeats the test file's path relative to the
    rootdir, so two ``test_x.py`` files in different folders never share cassettes. A test file
    outside the rootdir (``-c other/pytest.ini``) keeps its relative path, each ``..`` written as
    :data:`PARENT_PART`.
    """
    if shared is None:
        return test_file.parent / "cassettes" / safe_name(test_file.stem)
    base_dir, root = shared
    parts = [
        PARENT_PART if part == ".." else safe_name(part) for part in _relative_parts(test_file.parent, root)
    ]
    return base_dir.joinpath(*parts, safe_name(test_file.stem))


def _relative_parts(folder: Path, root: Path) -> tuple[str, ...]:
    try:
        relative = os.path.relpath(folder, root)
    except ValueError:  # another drive (Windows): no relative path exists
        return tuple(part.replace(":", "") for part in Path(folder).parts)
    return () if relative == "." else Path(relative).parts


def legacy_cassette(
    test_file: Path, innermost_class: str | None, test_name: str, shared: tuple[Path, Path] | None
) -> Path:
    """Where pytest-blackbox 0.1 put this test's cassette: only the innermost class in the name, and
    every test file outside the rootdir in the shared tree's top folder. Kept to point users at a
    cassette the current rule moved."""
    stem = test_stem([innermost_class] if innermost_class else [], test_name)
    if shared is not None:
        base_dir, root = shared
        try:
            relative = test_file.parent.relative_to(root)
        except ValueError:
            relative = Path()
        folder = base_dir.joinpath(*(safe_name(part) for part in relative.parts), safe_name(test_file.stem))
    else:
        folder = module_folder(test_file)
    return folder / (safe_name(stem) + ".json")


def resolve_override(base: Path, cassette: str | os.PathLike[str]) -> Path:
    """A ``cassette=`` path: relative paths are relative to ``base`` (the test file's folder)."""
    path = Path(cassette)
    if path.suffix != ".json":
        path = path.with_name(path.name + ".json")
    return path if path.is_absolute() else base / path


def trace_id_for(path: Path) -> str:
    """The trace id of a test cassette is its file's base name."""
    return path.name[: -len(".json")] if path.name.endswith(".json") else path.name


def pending_path(target: Path, pid: int | None = None) -> Path:
    """The hidden file a recording goes to until the test passed: ``.<name>.<pid>.pending``."""
    return target.with_name(f".{target.name}.{os.getpid() if pid is None else pid}.pending")


_PENDING = re.compile(r"\.(?P<name>.+\.json)\.(?P<pid>\d+)\.pending")


def pending_owner(file_name: str) -> int | None:
    """The process id in a pending file's name, or ``None`` if it is not one."""
    match = _PENDING.fullmatch(file_name)
    return int(match["pid"]) if match else None


def _process_gone(pid: int) -> bool:
    if sys.platform == "win32":
        return False  # no cheap, harmless liveness check there: the age decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def remove_stale_pending(folder: Path, cleaned: set[Path]) -> None:
    """Remove the pending files of recordings whose process died (a SIGTERM, a kill), once per folder.

    Without this, ``git add cassettes/`` would commit them. A live process's files are never touched,
    so a parallel worker's recording in progress is safe.
    """
    if folder in cleaned:
        return
    cleaned.add(folder)
    cutoff = time.time() - STALE_PENDING_SECONDS
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        pid = pending_owner(entry.name)
        if pid is None or pid == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if _process_gone(pid) or entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
