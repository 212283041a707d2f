"""Shared pieces of the security tests: the keys they plant, the files a run leaves, a hanging answer.

The tests run the lookup agent (``tests/agents/lookup.py``) with the suite's provider keys set, so
every key below is one the environment does *not* hold unless a test puts it there.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.testing import ScriptedResponse
from tests.agents.lookup import MODELS

#: Realistic credentials: the documented prefixes followed by 40 characters.
ANTHROPIC_KEY = "sk-ant-api03-" + "Qx7Lm2Pv9Rt4Wz8Yb1Nc6Dk3Fh5Jg0Ks2Ta7Ue4V"
OPENAI_KEY = "sk-proj-" + "Hq3Zr8Mx1Lw6Pv0Nt5Kb9Jc2Dg7Fy4Sa1Ue6Wo3R"
#: A key of no known format: it can only be recognised because it is the value of a key variable.
LITERAL_KEY = "corp-gateway-7f3a9c2e1b5d"
#: Every form a test plants: (id, value, the environment variable holding it or None).
KEYS: list[tuple[str, str, str | None]] = [
    ("anthropic-format", ANTHROPIC_KEY, "ANTHROPIC_API_KEY"),
    ("openai-format", OPENAI_KEY, "OPENAI_API_KEY"),
    ("literal-env", LITERAL_KEY, "ANTHROPIC_API_KEY"),
]
SDKS = ["anthropic", "openai"]

assert len(ANTHROPIC_KEY) == len("sk-ant-api03-") + 40 and len(OPENAI_KEY) == len("sk-proj-") + 40


@pytest.fixture(autouse=True)
def _keys(provider_keys: pytest.MonkeyPatch) -> None:
    """Every security test runs in a clean environment with the suite's provider keys."""


def final_body(sdk: str, text: str) -> dict[str, Any]:
    """A provider's complete JSON answer holding a final answer."""
    if sdk == "anthropic":
        return {
            "id": "msg_01Late",
            "type": "message",
            "role": "assistant",
            "model": MODELS["anthropic"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    return {
        "id": "chatcmpl-late",
        "object": "chat.completion",
        "created": 1,
        "model": MODELS["openai"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def hanging_answer(sdk: str, started: Callable[[], object], release: threading.Event) -> ScriptedResponse:
    """An answer whose body stops halfway until ``release`` is set: a model call kept in flight."""
    body = json.dumps(final_body(sdk, "late")).encode()

    def chunks() -> Iterator[bytes]:
        started()
        yield body[:10]
        release.wait(30)
        yield body[10:]

    return ScriptedResponse(200, headers=(("content-type", "application/json"),), chunks=chunks())


def files_in(directory: Path) -> list[str]:
    """Every file under ``directory``, hidden ones included, as sorted relative paths."""
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())
