"""The exit safety net: an unfinished recording is still written when the process ends.

A run that crashes, is interrupted or simply never calls ``finish()`` is often the run worth
looking at. At interpreter exit, on an uncaught exception, on Ctrl-C and on SIGTERM, every
unfinished record session writes its cassette with the terminal step that says how the run ended
(``run_failed / process_exit`` with the exit code, or ``calls_in_flight`` while calls were running),
and every unfinished replay session is checked as ``finish()`` would check it, so the launcher can
report it.

Python's ``atexit`` does not receive the exit status, so the code is taken from what this module can
observe: an uncaught exception (1), ``KeyboardInterrupt`` (130), SIGTERM (143); any other exit,
``sys.exit(3)`` included, counts as clean. ``os._exit`` and SIGKILL skip every hook. The SIGTERM
handler is installed only from the main thread and only when no other handler is set. Under pytest
the plugin owns the session's end and this net is not installed.

See docs/engine.md#the-exit-safety-net.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import weakref
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, TypeVar

S = TypeVar("S")

SIGINT_EXIT = 130
SIGTERM_EXIT = 143

#: Each watched session, held weakly (a session the user dropped is not ended, nor kept alive, by
#: this module), and the function of its ending method.
_ending: weakref.WeakKeyDictionary[Any, Callable[[Any, int], None]] = weakref.WeakKeyDictionary()
_installed = False
_exit_code = 0


def watch(session: S, end: Callable[[S, int], None]) -> None:
    """Call ``end(session, exit_code)`` at process exit unless ``session`` is forgotten first (``end`` a
    plain function, such as the session class's method: a bound method would hold the session)."""
    _install()
    _ending[session] = end


def forget(session: object) -> None:
    _ending.pop(session, None)


def _end_all(code: int) -> None:
    for session, end in list(_ending.items()):
        _ending.pop(session, None)
        try:
            end(session, code)
        except Exception as exc:  # the process is ending: report, never raise
            print(f"blackbox (at process exit): {exc}", file=sys.stderr)


def _excepthook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    global _exit_code
    _exit_code = SIGINT_EXIT if issubclass(kind, KeyboardInterrupt) else 1
    _previous_excepthook(kind, value, tb)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    _end_all(SIGTERM_EXIT)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


_previous_excepthook = sys.excepthook


def _install() -> None:
    global _installed, _previous_excepthook
    if _installed:
        return
    _installed = True
    _previous_excepthook = sys.excepthook
    sys.excepthook = _excepthook
    atexit.register(lambda: _end_all(_exit_code))
    in_main = threading.current_thread() is threading.main_thread()
    if in_main and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _on_sigterm)
