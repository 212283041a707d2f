"""What the agent did, as the agent saw it: its model calls and its wrapped tool calls, so far.

A test asserts on this (``blackbox.run``, docs/pytest.md#assertions-on-what-the-agent-did). Tool
calls are observed around the session's own wrapper, so a call reads the same whether the tool ran
(recording) or was answered from the cassette (replay): its name, its input as the cassette holds
it, and the value it returned or the message of the error it raised. Model calls are the neutral
``model_input`` and ``model_output`` payloads the session recorded or replayed.
"""

from __future__ import annotations

import functools
import itertools
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import BlackboxError
from ..trace.model import TraceStep
from ..trace.payloads import model_output_text, tool_calls_of
from .jsonvalue import to_json_value
from .tools import is_async_callable, tool_input_of

__all__ = ["AgentRun", "ModelCall", "ToolCall", "ToolLog", "error_text", "model_calls_of"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ToolCall:
    """One wrapped-tool call that returned (``result``) or raised (``error``, its message)."""

    name: str
    input: Any
    result: Any = None
    error: str | None = None

    def shown(self) -> str:
        """``get_weather({"city": "Paris"}) -> {"tempC": 21}``, for failure messages."""
        outcome = (
            f"raised {self.error}" if self.error is not None else json.dumps(self.result, ensure_ascii=False)
        )
        return f"{self.name}({json.dumps(self.input, ensure_ascii=False)}) -> {outcome}"


@dataclass(frozen=True)
class ModelCall:
    """One answered model call: the neutral request and answer payloads."""

    input: Any
    output: Any

    @property
    def text(self) -> str | None:
        """The answer's text, when it has one."""
        return model_output_text(self.output)

    @property
    def tool_requests(self) -> list[str]:
        """The names of the tools the answer asked for, in order."""
        return [ref["toolName"] for ref in tool_calls_of(self.output)]


@dataclass(frozen=True)
class AgentRun:
    """The run so far: model calls, tool calls in the order they started, and how it ended.

    ``status`` is ``None`` until the session finished (the plugin finishes it after the test body;
    a test that calls ``blackbox.finish(...)`` sees it), then ``success``, ``error`` or
    ``incomplete``.
    """

    model_calls: tuple[ModelCall, ...]
    tool_calls: tuple[ToolCall, ...]
    status: str | None = None

    @property
    def tools(self) -> list[str]:
        """The names of the tools called, in order."""
        return [call.name for call in self.tool_calls]

    @property
    def final_answer(self) -> str | None:
        """The text of the last model answer, when it ended the model's turn."""
        last = self.model_calls[-1].output if self.model_calls else None
        if isinstance(last, dict) and last.get("type") == "final_answer":
            return model_output_text(last)
        return None


def model_calls_of(steps: Sequence[TraceStep]) -> list[ModelCall]:
    """Each ``model_input`` step with the ``model_output`` step that answers it."""
    calls: list[ModelCall] = []
    for before, after in itertools.pairwise(steps):
        if before["type"] == "model_input" and after["type"] == "model_output":
            calls.append(ModelCall(before["payload"], after["payload"]))
    return calls


#: A noted call: the name, input, result and error of its ``ToolCall``.
_Noted = tuple[str, Any, Any, "str | None"]


class ToolLog:
    """The tool calls of one session, in the order they started (a parallel round records and
    replays in one order that way); a call that is still running or was refused is not shown."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Each call's ``ToolCall`` fields, made into one when asked for (most runs never ask).
        self._slots: list[_Noted | None] = []

    def calls(self) -> tuple[ToolCall, ...]:
        with self._lock:
            return tuple(ToolCall(*noted) for noted in self._slots if noted is not None)

    def start(self) -> int:
        """Keep the place of a call that started and has not ended yet (shown once it ends)."""
        with self._lock:
            self._slots.append(None)
            return len(self._slots) - 1

    def end(
        self, slot: int, name: str, tool_input: Any, result: Any = None, error: str | None = None
    ) -> None:
        """The call in ``slot`` returned ``result`` or raised ``error`` (its message)."""
        with self._lock:
            self._slots[slot] = (name, tool_input, result, error)

    def add(self, name: str, tool_input: Any, result: Any = None, error: str | None = None) -> None:
        """A call that started and ended at once (answered from the cassette)."""
        with self._lock:
            self._slots.append((name, tool_input, result, error))

    def observe(self, name: str, fn: F) -> F:
        """``fn`` itself, noting each call that returns or raises: the tools of a session that is off
        (a wrapped tool's calls are noted by its session, which has their input converted already)."""
        if is_async_callable(fn):

            @functools.wraps(fn)
            async def async_observed(*args: Any, **kwargs: Any) -> Any:
                __tracebackhide__ = True
                slot = self.start()
                try:
                    result = await fn(*args, **kwargs)
                except Exception as exc:
                    self._failed(slot, name, fn, args, kwargs, exc)
                    raise
                self.end(slot, name, _input(name, fn, args, kwargs), result)
                return result

            return async_observed  # type: ignore[return-value]

        @functools.wraps(fn)
        def observed(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            slot = self.start()
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                self._failed(slot, name, fn, args, kwargs, exc)
                raise
            self.end(slot, name, _input(name, fn, args, kwargs), result)
            return result

        return observed  # type: ignore[return-value]

    def _failed(
        self,
        slot: int,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        exc: Exception,
    ) -> None:
        """The tool's own error is a call; the session refusing it (a divergence) is not."""
        if not isinstance(exc, BlackboxError):
            self.end(slot, name, _input(name, fn, args, kwargs), error=error_text(exc))


def error_text(error: BaseException) -> str:
    """How a call that raised shows its error: the message, else the exception's type."""
    return str(error) or type(error).__name__


def _input(name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The input as the session records it (the one rule, ``tool_input_of``)."""
    return to_json_value(tool_input_of(fn, args, kwargs), f"the arguments of tool {name}")
