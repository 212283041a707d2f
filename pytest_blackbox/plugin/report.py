"""The short failure report of a test the plugin failed: a blackbox block, then only the user's own
frames and the exception line, never a traceback through the SDK or the plugin. See
docs/pytest.md#when-a-test-fails.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest
from _pytest._code.code import ReprExceptionInfo, ReprFileLocation, ReprTracebackNative

from ..errors import BlackboxError

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_STDLIB_DIR = Path(sysconfig.get_paths()["stdlib"])
_MAX_MESSAGE_LINES = 12


def shown_path(item: pytest.Item, path: Path) -> str:
    """A path as the user types it: relative to the rootdir when it is inside."""
    try:
        return path.relative_to(item.config.rootpath).as_posix()
    except ValueError:
        return str(path)


def short_report(item: pytest.Item, block: str, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """``block``, a blank line, the user's frames and the exception line."""
    return "\n".join([block, "", *_user_frames(item, excinfo), *_exception_lines(excinfo.value)])


def block_repr(item: pytest.Item, text: str) -> ReprExceptionInfo:
    """``text`` as pytest's own failure repr, whose crash message is the text's first line.

    A plain string would print the same in the failures section, but pytest's short test summary
    repeats a string whole when ``CI`` is set (or with ``-vv``), so the block would print twice; it
    repeats only the crash message of a repr. A repr also crosses to the pytest-xdist controller as
    it is (a string would not keep the first line apart).
    """
    lineno = item.location[1]
    crash = ReprFileLocation(str(item.path), (lineno or 0) + 1, text.split("\n", 1)[0])
    return ReprExceptionInfo(reprtraceback=ReprTracebackNative([text + "\n"]), reprcrash=crash)


def one_line_crash(report: pytest.TestReport) -> None:
    """Cut the crash message of a failure the plugin raised to its first line (see ``block_repr``)."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if isinstance(crash, ReprFileLocation):
        crash.message = crash.message.split("\n", 1)[0]


def _user_frames(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> list[str]:
    root = Path(str(item.config.rootpath))
    lines: list[str] = []
    for entry in excinfo.traceback:
        path = entry.path
        if not isinstance(path, Path) or entry.ishidden(excinfo) or not _is_user_file(path, root):
            continue
        lines.append(f"{shown_path(item, path)}:{entry.lineno + 1}: in {entry.name}")
        statement = str(entry.statement).strip().splitlines()
        if statement:
            lines.append(f"    {statement[0].strip()}")
    return lines


def _is_user_file(path: Path, root: Path) -> bool:
    """A frame worth showing: the user's code, not an installed library, the stdlib or this plugin."""
    if "site-packages" in path.parts or "dist-packages" in path.parts:
        return False
    if path.is_relative_to(_PACKAGE_DIR):
        return False
    if path.is_relative_to(_STDLIB_DIR):
        return False
    return path.is_relative_to(root)


def _exception_lines(exc: BaseException) -> list[str]:
    kind = type(exc)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    message = str(exc)
    if isinstance(exc, BlackboxError) or "[blackbox]" in message:
        return [f"E   {name}: the blackbox error above"]
    shown = message.splitlines()[:_MAX_MESSAGE_LINES] or [""]
    first = f"E   {name}: {shown[0]}" if shown[0] else f"E   {name}"
    return [first, *(f"E   {line}" for line in shown[1:])]
