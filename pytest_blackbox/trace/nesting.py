"""How deep a cassette's JSON may nest: one limit, one message, one walk, for every reader and writer.

See docs/limitations.md.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["MAX_NESTING", "TOO_DEEP", "nested_too_deeply"]

#: How deep a cassette's JSON may nest (objects and arrays), one limit for what recording writes and
#: what verify, loading and replay read: every one of them walks values recursively somewhere (the
#: schema check, ``copy.deepcopy``, the comparison), and a limit below Python's recursion limit
#: means a deep value gets one clear message instead of a ``RecursionError`` in whichever comes first.
MAX_NESTING: Final = 200
#: How every refusal of a too-deep value says it (after the thing's name: ``step 3 is …``).
TOO_DEEP: Final = (
    f"nested deeper than {MAX_NESTING} levels, the limit recording, verify and replay share; keep tool "
    "values flatter (or hand deep data over as a JSON string)"
)


def nested_too_deeply(value: Any, limit: int = MAX_NESTING, walked: dict[int, int] | None = None) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` levels (walked without recursion).

    Walked level by level, keeping only the containers of each level: a cassette's steps are mostly
    strings and numbers, which are looked at once and never queued.

    ``walked`` (kept across calls on values that stay alive and unchanged, and dropped after a call
    that found one too deep) maps each container walked, by identity, to the deepest level it was
    found at; one found again no deeper is not walked again: a recording's steps share messages.
    """
    level = [value] if isinstance(value, _CONTAINERS) else []
    depth = 0
    while level:
        if depth >= limit:
            return True
        below: list[Any] = []
        for item in level:
            if walked is not None:
                if walked.get(id(item), -1) >= depth:
                    continue  # its levels were walked from this deep or deeper, and fitted
                walked[id(item)] = depth
            children = item.values() if isinstance(item, dict) else item
            below += [child for child in children if isinstance(child, _CONTAINERS)]
        level = below
        depth += 1
    return False


_CONTAINERS: Final = (dict, list, tuple)
