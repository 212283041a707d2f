"""Hypothesis strategies for neutral model outputs: what a cassette's ``model_output`` steps can hold.

The round-trip properties (a synthesized response or stream normalizes back to the recorded output)
draw from these for every provider. Only the tool inputs differ by wire protocol: an Anthropic
``tool_use`` input is a JSON object, while an OpenAI arguments text may record any value.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
#: Anthropic tool inputs: JSON objects.
object_inputs = st.dictionaries(st.text(), json_values, max_size=4)


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


#: OpenAI tool inputs, as normalization can produce them: parsed JSON other than a string, raw text
#: that does not parse, or the raw encoded text of a JSON string.
argument_inputs = (
    json_values.filter(lambda value: not isinstance(value, str))
    | st.text().filter(lambda text: not _parses(text))
    | st.text().map(json.dumps)
)


@st.composite
def neutral_outputs(draw: st.DrawFn, tool_inputs: st.SearchStrategy[Any]) -> dict[str, Any]:
    """A final answer (possibly cut short or refused) or one to three tool calls (possibly cut short)."""
    if draw(st.booleans()):
        stop = draw(st.sampled_from([None, "length", "refusal"]))
        output: dict[str, Any] = {"type": "final_answer", "text": draw(st.text())}
    else:
        names = draw(st.lists(st.text(min_size=1), min_size=1, max_size=3))
        calls = [
            {"toolCallId": f"call-{index}", "toolName": name, "toolInput": draw(tool_inputs)}
            for index, name in enumerate(names)
        ]
        output = {"type": "tool_calls", "calls": calls}
        if draw(st.booleans()):
            output["text"] = draw(st.text(min_size=1))
        stop = draw(st.sampled_from([None, "length"]))
    if stop is not None:
        output["stop"] = stop
    return output
