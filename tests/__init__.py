"""The test suite.

``VECTORS`` holds the frozen cassette vectors of the original Blackbox (see ``vectors/README.md``);
read them only through these helpers, which keep their bytes exact (no newline translation).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).resolve().parent / "vectors"

#: The installed pytest plugins every inner pytest run (pytester) leaves off: the suite uses neither,
#: and the project's ``-p no:langsmith_plugin`` (pyproject.toml) does not reach an inner run, which
#: reads its own ini. An in-process inner run imports anew every module its outer process had not
#: (pytester forgets them after the run), so LangSmith's plugin alone would cost each one a second.
OTHER_PLUGINS_OFF = ("-p", "no:hypothesispytest", "-p", "no:langsmith_plugin")
#: The same without the cache provider, for the inner runs that do not use ``--lf``.
QUIET = ("-p", "no:cacheprovider", *OTHER_PLUGINS_OFF)

#: The provider keys the in-process tests run with, by variable (the ``provider_keys`` fixture sets
#: them). They have the real keys' formats, so a test can prove no cassette or message shows them.
TEST_KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-suite-test-key-0123456789abcdef",
    "OPENAI_API_KEY": "sk-proj-suite-test-key-0123456789abcdefghij",
}


def vector_path(relative: str) -> Path:
    """A vector file; a missing one is an error in the checkout, never a reason to skip."""
    path = VECTORS / relative
    if not path.is_file():
        raise FileNotFoundError(f"the test vectors are missing: expected {path}")
    return path


def vector_text(relative: str) -> str:
    """A vector as UTF-8 text, byte for byte."""
    return vector_path(relative).read_bytes().decode("utf-8")


def vector_json(relative: str) -> Any:
    """A vector parsed as JSON."""
    return json.loads(vector_text(relative))
