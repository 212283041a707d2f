"""Assertions on what the agent did, in the test: the in-test twin of ``blackbox assert``.

The rules are ``analysis.assertions``' (the same check, the same words); a failure raises
``AssertionError`` with the check's verdict and the tool calls so far, so pytest shows it as it
shows a failed ``assert``. They read :attr:`Session.run`, which is the same in a recording and in
its replay. See docs/pytest.md#assertions-on-what-the-agent-did. The rules are imported by the
first assertion: every replayed test's session has these methods, few tests call them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from ..engine import AgentRun, same_json

if TYPE_CHECKING:
    from ..analysis.assertions import CheckResult

#: ``input=`` left out: any input will do.
ANY_INPUT: Final[Any] = object()


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


class RunAssertions:
    """``assert_tools``, ``assert_tool_called``, ``assert_not_called`` and ``assert_outcome``."""

    @property
    def run(self) -> AgentRun:  # pragma: no cover - the session's property
        raise NotImplementedError

    def _assertion_failed(self, verdict: str) -> None:
        __tracebackhide__ = True
        calls = self.run.tool_calls
        lines = [f"blackbox: {verdict}", "tool calls so far:" if calls else "tool calls so far: none"]
        lines += [f"  {number}. {call.shown()}" for number, call in enumerate(calls, 1)]
        raise AssertionError("\n".join(lines))

    def _expect(self, result: CheckResult, what: str) -> None:
        __tracebackhide__ = True
        if result.status != "pass":
            self._assertion_failed(f"{what}: {result.detail}")

    def assert_tools(self, *names: str) -> None:
        """The tools called so far are exactly ``names``, in order (none given: no tool call)."""
        __tracebackhide__ = True
        from ..analysis.assertions import check_tools

        self._expect(check_tools(names, self.run.tools), "tools called")

    def assert_tool_called(self, name: str, *, times: int | None = None, input: Any = ANY_INPUT) -> None:
        """``name`` was called (``times``: exactly so often), with ``input`` when given.

        ``input`` is compared as JSON with the tool's input as the cassette holds it: the
        arguments by parameter name (``{"city": "Paris"}``).
        """
        __tracebackhide__ = True
        calls = [call for call in self.run.tool_calls if call.name == name]
        if input is not ANY_INPUT:
            calls = [call for call in calls if same_json(call.input, input)]
        if (len(calls) > 0) if times is None else len(calls) == times:
            return
        expected = "at least once" if times is None else _times(times)
        with_input = "" if input is ANY_INPUT else f" with input {json.dumps(input, ensure_ascii=False)}"
        self._assertion_failed(f"{name} was called {_times(len(calls))}{with_input}, expected {expected}")

    def assert_not_called(self, name: str) -> None:
        """``name`` was never called."""
        __tracebackhide__ = True
        self.assert_tool_called(name, times=0)

    def assert_outcome(self, status: str | None = None, *, final_answer: str | None = None) -> None:
        """The run ended with ``status`` and/or ``final_answer``, exactly.

        The status is known once the session finished (call ``blackbox.finish(...)`` in the test
        first); the final answer is the last model answer's text.
        """
        __tracebackhide__ = True
        from ..analysis.assertions import check_final_answer, check_status

        run = self.run
        if status is not None:
            if run.status is None:
                self._assertion_failed(
                    "status: the run has not finished yet; call blackbox.finish(...) first"
                )
            self._expect(check_status(status, str(run.status)), "status")
        if final_answer is not None:
            self._expect(check_final_answer(final_answer, run.final_answer), "final answer")
