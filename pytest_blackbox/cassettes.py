"""Where a test's cassette lives: ``<test dir>/cassettes/<module>/<Class.>test_name[param-id].json``.

Names come from test ids, which may hold anything a parametrization produced, so every path part is
made safe for every operating system (no reserved characters or device names, no trailing dots or
spaces) and long names end in a short stable hash instead of being cut into collisions.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

#: Longest file name (without ``.json``) before it is shortened with a hash suffix.
MAX_NAME = 120
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_RESERVED = {
    "CON",
    "PRN",
    "AUX",
    "NUL",
    *(f"COM{i}" for i in range(1, 10)),
    *(f"LPT{i}" for i in range(1, 10)),
}


def safe_name(name: str) -> str:
    """A file-name part every OS accepts, stable for the same input."""
    cleaned = _UNSAFE.sub("_", name).rstrip(" .") or "_"
    if cleaned.split(".")[0].upper() in _RESERVED:
        cleaned = "_" + cleaned
    if len(cleaned) > MAX_NAME:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        cleaned = cleaned[: MAX_NAME - 11].rstrip(" .") + "-" + digest
    return cleaned


def default_cassette(
    test_file: Path, class_name: str | None, test_name: str, base_dir: Path | None = None
) -> Path:
    """The default cassette path of one test (``base_dir`` replaces ``<test dir>/cassettes``)."""
    root = base_dir if base_dir is not None else test_file.parent / "cassettes"
    stem = f"{class_name}.{test_name}" if class_name else test_name
    return root / safe_name(test_file.stem) / (safe_name(stem) + ".json")


def resolve_override(test_file: Path, cassette: str | Path) -> Path:
    """A ``cassette=`` marker argument: relative paths are relative to the test file's directory."""
    path = Path(cassette)
    if path.suffix != ".json":
        path = path.with_name(path.name + ".json")
    return path if path.is_absolute() else test_file.parent / path


def trace_id_for(path: Path) -> str:
    """The trace id of a test cassette is its file's base name."""
    return path.name[: -len(".json")] if path.name.endswith(".json") else path.name
