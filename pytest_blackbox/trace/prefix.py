"""How much of a list a later one repeats object for object: what lets the work on a growing
conversation stay proportional to what is new.

A long agent run sends its whole history with every request, and the session hands the same objects
again for the part a request repeats byte for byte (``engine.bodies``, ``CallIds.normalized``). A step
that remembers its last list can then reuse its work for that part and do only the rest; comparing by
identity, not equality, is what makes that sound (``1``, ``1.0`` and ``True`` are equal in Python and
different in JSON). See docs/engine.md#long-conversations.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

__all__ = ["same_start"]


def same_start(items: Sequence[Any], before: Sequence[Any]) -> int:
    """How many leading items of ``items`` are the very objects ``before`` holds at the same places.

    Compared by identity at C speed (a few nanoseconds an item), so a 400-message history costs
    microseconds, not the walk of every message.
    """
    same = list(map(operator.is_, items, before))
    return same.index(False) if False in same else len(same)  # no exception raised when all are kept
