"""Calls belong to their test: a thread or task started during one test is owned by it.

A model call from a thread (or task) that outlived the test that started it would otherwise reach
whichever session is intercepting when it comes: the next test's, which would record it into its
own cassette and then never replay it. The plugin marks the test running now (:func:`claim_calls`);
tasks inherit the mark with their context, and threads get it from ``threading.Thread.start`` and
``ThreadPoolExecutor.submit``, patched once :func:`claim_calls` is first called. A session asks
:func:`stray_owner` before it handles a call: a call owned by another test is refused, naming that test.
See docs/pytest.md#background-threads-and-tasks.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import functools
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import StrayCallWarning
from ..interception import ModelRequest, Reply
from .wire import WireCall, refusal

__all__ = [
    "CallOwner",
    "claim_calls",
    "current",
    "refuse_stray_call",
    "release_calls",
    "running_as",
    "stray_owner",
    "unowned",
]


@dataclass(frozen=True, eq=False)
class CallOwner:
    """A test that owns the threads and tasks started while it runs (compared by identity)."""

    name: str


#: ``None``: not known (inherit the thread's owner); :data:`_NOBODY`: owned by no test.
_OWNER: contextvars.ContextVar[CallOwner | None] = contextvars.ContextVar(
    "pytest_blackbox_owner", default=None
)
_NOBODY = CallOwner("")
_ATTRIBUTE = "_pytest_blackbox_owner"
_patched = False
_patch_lock = threading.Lock()


def current() -> CallOwner | None:
    """The test the running code belongs to: its context's, else its thread's; ``None`` if no test's."""
    owner = _OWNER.get()
    if owner is None:
        owner = getattr(threading.current_thread(), _ATTRIBUTE, None)
    return None if owner is _NOBODY else owner


def claim_calls(owner: CallOwner) -> contextvars.Token[CallOwner | None]:
    """Mark the code running from now on, and what it starts, as ``owner``'s."""
    _patch()
    return _OWNER.set(owner)


def release_calls(token: contextvars.Token[CallOwner | None]) -> None:
    """Undo :func:`claim_calls` (from the same context; otherwise the mark is simply cleared)."""
    try:
        _OWNER.reset(token)
    except ValueError:
        _OWNER.set(None)


def stray_owner(session_owner: CallOwner | None) -> CallOwner | None:
    """The other test a call made now belongs to, when it is not ``session_owner``'s."""
    owner = current()
    if owner is None or session_owner is None or owner is session_owner:
        return None
    return owner


def refuse_stray_call(request: ModelRequest, other: CallOwner, this: CallOwner | None) -> Reply:
    """The refusal of a call owned by ``other`` that came while ``this`` test ran (also a warning:
    the thread that made it may swallow the error)."""
    text = (
        f"a model call came from a thread or task started by {other.name}, which has ended, while "
        f"{this.name if this is not None else 'another test'} ran: it was not sent, nor recorded in "
        "this test's cassette; join the thread (or await the task) before the test that started it ends"
    )
    warnings.warn(text, StrayCallWarning, stacklevel=2)
    return refusal(WireCall.provider_of(request), "[blackbox] " + text)


@contextmanager
def running_as(owner: CallOwner | None) -> Iterator[None]:
    """Run a block as ``owner``'s (the relay answering a child of the test running now)."""
    token = _OWNER.set(owner if owner is not None else _NOBODY)
    try:
        yield
    finally:
        _OWNER.reset(token)


@contextmanager
def unowned() -> Iterator[None]:
    """Start threads that belong to no test (they serve every test)."""
    with running_as(None):
        yield


def _patch() -> None:
    """Threads and executor jobs carry the owner of the code that started them (once per process)."""
    global _patched
    with _patch_lock:
        if _patched:
            return
        _patched = True
        threading.Thread.start = _owned_start(threading.Thread.start)  # type: ignore[method-assign,assignment]
        executor = concurrent.futures.ThreadPoolExecutor
        executor.submit = _owned_submit(executor.submit)  # type: ignore[method-assign]


def _owned_start(start: Callable[[threading.Thread], None]) -> Callable[[threading.Thread], None]:
    @functools.wraps(start)
    def owned_start(thread: threading.Thread) -> None:
        owner = _OWNER.get()
        if owner is None:
            owner = getattr(threading.current_thread(), _ATTRIBUTE, None)
        if owner is not None and not hasattr(thread, _ATTRIBUTE):
            setattr(thread, _ATTRIBUTE, owner)
        start(thread)

    return owned_start


def _owned_submit(submit: Callable[..., Any]) -> Callable[..., Any]:
    """A job runs as the owner of the code that submitted it, whichever worker thread runs it."""

    @functools.wraps(submit)
    def owned_submit(executor: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        owner = current()
        if owner is None:
            return submit(executor, fn, *args, **kwargs)
        return submit(executor, _as_owner(owner, fn), *args, **kwargs)

    return owned_submit


def _as_owner(owner: CallOwner, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with running_as(owner):
            return fn(*args, **kwargs)

    return run
