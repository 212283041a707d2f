"""The append-only recorder: the one place that assigns a step's ``id``, ``index``, ``prevHash`` and
``hash``. See docs/cassette-format.md#step-fields.
"""

from __future__ import annotations

from typing import Any

from .canonical import SharedCanonical, sha256_hex
from .errors import HashChainError
from .model import CURRENT_TRACE_VERSION, StepType, Trace, TraceStep, step_id


class TraceRecorder:
    """Builds a trace step by step; steps are never edited once appended."""

    def __init__(
        self,
        trace_id: str,
        created_at: int | float,
        *,
        parent_id: str | None = None,
        forked_from_step_id: str | None = None,
    ) -> None:
        self.trace_id = trace_id
        self.created_at = created_at
        self.parent_id = parent_id
        self.forked_from_step_id = forked_from_step_id
        self._steps: list[TraceStep] = []
        #: Each model_input repeats the conversation so far: its messages' canonical text is kept.
        self._canonical = SharedCanonical()

    @classmethod
    def resuming(cls, trace: Trace) -> TraceRecorder:
        """A recorder for the same run (id, creation time, parent link), to continue a copied prefix."""
        return cls(
            trace["id"],
            trace["createdAt"],
            parent_id=trace.get("parentId"),
            forked_from_step_id=trace.get("forkedFromStepId"),
        )

    @property
    def steps(self) -> list[TraceStep]:
        """The steps so far (a copy of the list; the steps themselves are shared)."""
        return list(self._steps)

    def __len__(self) -> int:
        return len(self._steps)

    @property
    def last_hash(self) -> str | None:
        return self._steps[-1]["hash"] if self._steps else None

    def append(self, type_: StepType, payload: Any, timestamp: int | float) -> TraceStep:
        """Append a new step; its hash chains to the previous one."""
        index = len(self._steps)
        prev = self.last_hash
        step: TraceStep = {
            "id": step_id(self.trace_id, index),
            "index": index,
            "type": type_,
            "timestamp": timestamp,
            "payload": payload,
            "prevHash": prev,
            "hash": sha256_hex(self._canonical.hashed_text(index, type_, timestamp, payload, prev)),
        }
        self._steps.append(step)
        return step

    def copy_step(self, step: TraceStep) -> TraceStep:
        """Append a parent's step verbatim (id and hash included), as a fork's prefix must be."""
        index = len(self._steps)
        if step["index"] != index or step["prevHash"] != self.last_hash:
            raise HashChainError(
                f"cannot copy step {step['index']} at position {index}: it does not continue the chain"
            )
        copied: TraceStep = {
            "id": step["id"],
            "index": step["index"],
            "type": step["type"],
            "timestamp": step["timestamp"],
            "payload": step["payload"],
            "prevHash": step["prevHash"],
            "hash": step["hash"],
        }
        self._steps.append(copied)
        return copied

    def trace(self) -> Trace:
        """The trace as the original writes it: ``version, id, createdAt, steps[, parentId, …]``."""
        trace: Trace = {
            "version": CURRENT_TRACE_VERSION,
            "id": self.trace_id,
            "createdAt": self.created_at,
            "steps": list(self._steps),
        }
        if self.parent_id is not None:
            trace["parentId"] = self.parent_id
        if self.forked_from_step_id is not None:
            trace["forkedFromStepId"] = self.forked_from_step_id
        return trace
