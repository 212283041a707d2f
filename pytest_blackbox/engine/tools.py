"""Wrapped tools: how an invocation is turned into a tool argument and matched to the model's request.

A wrapped tool keeps its signature and its sync/async nature; the session decides whether it really
runs (record) or answers from the cassette (replay). Matching follows the original Blackbox
(arda-ulas/blackbox): an invocation claims an open call of the current model turn with the same name
and canonically equal arguments, else the first open call with that name; identical duplicates are
matched in invocation order.

See docs/engine.md#wrapped-tools.
"""

from __future__ import annotations

import functools
import inspect
import json
import json.encoder
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..trace.canonical import canonical_json
from ..trace.errors import CanonicalJSONError
from ..trace.model import ToolCallRef

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")


def tool_input_of(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The JSON tool input of one invocation: as close as possible to the input the model asked for.

    No arguments give ``{}``; one positional mapping gives that mapping (an agent calling
    ``tool(model_input)``); keyword arguments only give them as an object (``tool(**model_input)``).
    Anything else is bound to the parameter names, so ``tool("Paris")`` and ``tool(city="Paris")``
    record the same ``{"city": "Paris"}`` the model asked for. That matters for matching: an
    invocation claims the requested call with equal arguments, so ``get_weather("Rome")`` must find
    the ``{"city": "Rome"}`` call and not just the first ``get_weather`` call of the turn. A callable
    whose signature cannot be read or bound gives the single argument itself, or the list of them.
    """
    if not args and not kwargs:
        return {}
    if len(args) == 1 and not kwargs and isinstance(args[0], Mapping):
        return args[0]
    if not args:
        return dict(kwargs)
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return _unbound(args, kwargs)
    named: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            return _unbound(args, kwargs)  # ``*args`` has no names to bind to
        if kind is inspect.Parameter.VAR_KEYWORD:
            named.update(value)
        else:
            named[name] = value
    return named


def _unbound(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if len(args) == 1 and not kwargs:
        return args[0]
    return [*args, kwargs] if kwargs else list(args)


def _no_json_form(value: Any) -> Any:
    raise TypeError(f"a {type(value).__name__} has no JSON form")


def _identity_encoder() -> Callable[[Any], str]:
    """``json.JSONEncoder(sort_keys=True, allow_nan=False).encode``, one C encoder made once.

    ``encode`` builds a new C encoder on every call, which costs more than encoding a message of a
    conversation: a replay encodes each new message, each tool input and, at its end, the last
    request again. Without circular-reference markers, a value that contains itself fails with
    ``RecursionError`` rather than ``ValueError``: either way it has no JSON form.
    """
    plain = json.JSONEncoder(sort_keys=True, allow_nan=False).encode
    make: Any = getattr(json.encoder, "c_make_encoder", None)
    try:  # a private constructor: an interpreter without it, or with other arguments, keeps ``plain``
        chunks = make(
            None, _no_json_form, json.encoder.encode_basestring_ascii, None, ": ", ", ", True, False, False
        )
    except TypeError:
        return plain
    return lambda value: "".join(chunks(value, 0))


_sorted_dumps = _identity_encoder()


def identity_text(value: Any) -> str | None:
    """The text :func:`identical_json` compares (``None``: the value has no JSON form)."""
    try:
        return _sorted_dumps(value)
    except (TypeError, ValueError, RecursionError):
        return None


def identical_json(a: Any, b: Any) -> bool:
    """A fast, sufficient test of canonical equality (the C encoder, no JavaScript number rules).

    Equal ``json.dumps`` texts mean equal values of equal types, so equal canonical JSON too. The
    converse does not hold (``1`` and ``1.0`` are canonically equal), so ``False`` only means "look
    closer". This keeps replaying a long conversation cheap: every request is compared whole.
    """
    text = identity_text(a)
    return text is not None and text == identity_text(b)


def same_json(a: Any, b: Any) -> bool:
    """Canonical equality; values with no JSON form are never equal."""
    if identical_json(a, b):
        return True
    try:
        return canonical_json(a) == canonical_json(b)
    except CanonicalJSONError:
        return False


@dataclass
class Claim:
    """One requested call and whether an invocation has claimed it yet."""

    ref: ToolCallRef
    claimed: bool = False


@dataclass
class OpenCalls:
    """The calls one model turn requested, claimed by invocations in the matching rule's order."""

    claims: list[Claim] = field(default_factory=list)

    @classmethod
    def of(cls, refs: list[ToolCallRef]) -> OpenCalls:
        return cls([Claim(ref) for ref in refs])

    def claim(self, name: str, tool_input: Any) -> ToolCallRef | None:
        """Claim the best open call for this invocation, or ``None`` when none has that name."""
        open_named = [c for c in self.claims if not c.claimed and c.ref["toolName"] == name]
        best = next((c for c in open_named if same_json(c.ref["toolInput"], tool_input)), None)
        chosen = best or (open_named[0] if open_named else None)
        if chosen is None:
            return None
        chosen.claimed = True
        return chosen.ref

    def unclaimed(self) -> list[ToolCallRef]:
        return [c.ref for c in self.claims if not c.claimed]


@dataclass(frozen=True)
class Answered:
    """A wrapped tool answered from the cassette: the tool itself does not run."""

    value: Any


@dataclass(frozen=True)
class ToolPort(Generic[R]):
    """How a wrapped tool reports to its session.

    ``begin`` answers the invocation from the cassette (:class:`Answered`) or registers a run to
    record (``R``); ``end`` records its result or error, ``abandon`` forgets a run that was cancelled
    or interrupted. ``running`` marks the task or thread as running a wrapped tool, while it runs.
    """

    running: Callable[[], AbstractContextManager[None]]
    begin: Callable[[str, Any], Answered | R]
    end: Callable[[R, Any, BaseException | None], Any]
    abandon: Callable[[R], None]

    def run(self, name: str, tool_input: Any, call: Callable[[], Any]) -> Any:
        """Run (record) or answer (replay) one invocation of a sync tool."""
        __tracebackhide__ = True
        begun = self.begin(name, tool_input)
        if isinstance(begun, Answered):
            return begun.value
        with _Reported(self, begun), self.running():
            result = call()
        return self.end(begun, result, None)

    async def run_async(self, name: str, tool_input: Any, call: Callable[[], Awaitable[Any]]) -> Any:
        """The async twin of :meth:`run`."""
        __tracebackhide__ = True
        begun = self.begin(name, tool_input)
        if isinstance(begun, Answered):
            return begun.value
        with _Reported(self, begun), self.running():
            result = await call()
        return self.end(begun, result, None)


@dataclass(frozen=True)
class _Reported(Generic[R]):
    """Around a recorded run's body: an error the tool raises is recorded (and still raised), an
    interruption (cancellation, ``KeyboardInterrupt``) abandons the run."""

    port: ToolPort[R]
    begun: R

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        if isinstance(error, Exception):
            self.port.end(self.begun, None, error)
        elif error is not None:
            self.port.abandon(self.begun)


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine to await: a coroutine function, a bound method or
    ``functools.partial`` of one, or an object whose ``__call__`` is one."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isroutine(fn) or isinstance(fn, type):
        return False
    return inspect.iscoroutinefunction(type(fn).__call__)


def wrap_tool(host: ToolPort[Any], name: str, fn: F) -> F:
    """Wrap ``fn`` so every invocation goes through ``host`` under the tool name ``name``.

    The wrapper is sync or async as ``fn`` is (callable objects, partials and bound methods included).
    """
    if not callable(fn):
        raise TypeError(f"tool {name!r} must be callable")
    if is_async_callable(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            return await host.run_async(name, tool_input_of(fn, args, kwargs), lambda: fn(*args, **kwargs))

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        return host.run(name, tool_input_of(fn, args, kwargs), lambda: fn(*args, **kwargs))

    return wrapper  # type: ignore[return-value]
