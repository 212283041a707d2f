"""Where a test's cassette lives, with every path part made safe for every operating system and a
short hash wherever a test id had to change, so two ids never share a file. See
docs/pytest.md#where-cassettes-go.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

#: Longest file name (without ``.json``) before it is shortened with a hash suffix.
MAX_NAME = 120
_HASH_LENGTH = 10
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_RESERVED = {
    "CON",
    "PRN",
    "AUX",
    "NUL",
    *(f"COM{i}" for i in range(1, 10)),
    *(f"LPT{i}" for i in range(1, 10)),
}


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_LENGTH]


def safe_name(name: str) -> str:
    """A file-name part every OS accepts; different inputs never give the same part."""
    cleaned = _UNSAFE.sub("_", name).rstrip(" .") or "_"
    if cleaned.split(".")[0].upper() in _RESERVED:
        cleaned = "_" + cleaned
    if cleaned == name and len(cleaned) <= MAX_NAME:
        return cleaned
    head = cleaned[: MAX_NAME - _HASH_LENGTH - 1].rstrip(" .")
    return f"{head}-{_digest(name)}"


def default_cassette(
    test_file: Path, class_name: str | None, test_name: str, shared: tuple[Path, Path] | None = None
) -> Path:
    """The default cassette path of one test; ``shared`` is explained at :func:`module_folder`."""
    stem = f"{class_name}.{test_name}" if class_name else test_name
    return module_folder(test_file, shared) / (safe_name(stem) + ".json")


def module_folder(test_file: Path, shared: tuple[Path, Path] | None = None) -> Path:
    """The folder holding the cassettes of one test module.

    ``shared`` is ``(cassette dir, rootdir)`` when the ``blackbox_cassette_dir`` ini key puts every
    cassette in one tree: the module's folder then repeats the test file's path relative to the
    rootdir, so two ``test_x.py`` files in different folders never share cassettes.
    """
    if shared is None:
        return test_file.parent / "cassettes" / safe_name(test_file.stem)
    base_dir, root = shared
    try:
        relative = test_file.parent.relative_to(root)
    except ValueError:
        relative = Path()
    parts = [safe_name(part) for part in relative.parts]
    return base_dir.joinpath(*parts, safe_name(test_file.stem))


def resolve_override(test_file: Path, cassette: str | Path) -> Path:
    """A ``cassette=`` marker argument: relative paths are relative to the test file's directory."""
    path = Path(cassette)
    if path.suffix != ".json":
        path = path.with_name(path.name + ".json")
    return path if path.is_absolute() else test_file.parent / path


def trace_id_for(path: Path) -> str:
    """The trace id of a test cassette is its file's base name."""
    return path.name[: -len(".json")] if path.name.endswith(".json") else path.name
