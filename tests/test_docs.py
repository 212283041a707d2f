"""The documentation agrees with itself: where a page lists the providers, it lists all three.

A sentence that names two of Anthropic, OpenAI and Gemini is taken as a list of the providers (what
is recorded, what the plugin intercepts, what the fake provider answers) and must name the third;
a page written when only two were supported fails here until it is brought up to date. The few
sentences that compare two providers rather than list them are named in :data:`NOT_LISTS`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import QUIET

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted([REPO / "README.md", REPO / "CONTRIBUTING.md", *(REPO / "docs").glob("*.md")])
PROVIDERS = ("Anthropic", "OpenAI", "Gemini")
#: (page, words of the sentence) for sentences that set two providers side by side on purpose.
NOT_LISTS = {
    # how each SDK splits text into blocks or parts: Gemini's parts are not named, they are joined
    ("docs/providers.md", "how text is split into blocks or parts"),
    # the fake provider's envelope fields, each named with the one API that sends it
    ("docs/fake-provider.md", "candidate_index=False"),
}


def _sentences(text: str) -> list[str]:
    """The page's prose sentences and list items, without code blocks, each on one line."""
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    found = []
    for paragraph in re.split(r"\n\s*\n", prose):
        for piece in re.split(r"(?<=[.;:])\s+(?=[A-Z`(])|\n(?=[-|*] )", paragraph):
            found.append(" ".join(piece.split()))
    return found


def two_of_three(text: str) -> list[str]:
    """The sentences of ``text`` that name exactly two of the three providers."""
    return [
        sentence
        for sentence in _sentences(text)
        if sum(bool(re.search(rf"\b{name}\b", sentence)) for name in PROVIDERS) == 2
    ]


@pytest.mark.parametrize("page", PAGES, ids=[page.relative_to(REPO).as_posix() for page in PAGES])
def test_a_page_that_lists_providers_names_all_three(page: Path) -> None:
    name = page.relative_to(REPO).as_posix()
    partial = [
        sentence
        for sentence in two_of_three(page.read_text(encoding="utf-8"))
        if not any(page_name == name and words in sentence for page_name, words in NOT_LISTS)
    ]
    assert partial == [], f"{name} lists two of the three providers (Anthropic, OpenAI, Gemini)"


def test_the_check_finds_a_list_of_two() -> None:
    """The sentence docs/migrating.md had, and one that lists all three."""
    two = "**Only the Anthropic and OpenAI SDK protocols.** Model calls are recognized by their path."
    three = "Every model call made through the Anthropic, OpenAI or Google Gemini SDK is recorded."
    assert two_of_three(f"{two}\n\n{three}") == [two]


def test_every_exception_is_still_in_its_page() -> None:
    """An exception whose sentence is gone would let a new list of two through unseen."""
    for name, words in NOT_LISTS:
        assert any(words in sentence for sentence in two_of_three((REPO / name).read_text(encoding="utf-8")))


#: What the recipe sets in the environment; each is restored after the test (the recipe sets them
#: in this process, where the inner runs import its conftest).
RECIPE_ENV = (
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
)
#: Added to the recipe's conftest by the test: how many requests reached the fake in the run.
COUNT_REQUESTS = """

def pytest_sessionfinish(session):
    with open("requests.txt", "w") as out:
        out.write(str(len(FAKE.requests)))
"""


def _recipe_files(page: str, section: str) -> dict[str, str]:
    """The section's Python blocks that start with a ``# <file name>`` line, by file name."""
    text = page[page.index(f"## {section}\n") :]
    text = text[: text.index("\n## ", 1)]
    return dict(re.findall(r"```python\n# (\w+\.py)\n(.*?)```", text, flags=re.DOTALL))


def test_the_recipe_for_clients_built_at_import_records_then_replays_offline(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch
) -> None:
    """docs/fake-provider.md's three files, verbatim: recorded against its fake, then replayed in CI
    with no key and nothing sent."""
    pytest.importorskip("google.genai", reason="google-genai is not installed (pip install google-genai)")
    files = _recipe_files(
        (REPO / "docs" / "fake-provider.md").read_text(encoding="utf-8"), "Clients built at import"
    )
    assert sorted(files) == ["agent.py", "conftest.py", "test_agent.py"]
    for name in RECIPE_ENV:
        clean_env.setenv(name, "")
        clean_env.delenv(name)
    clean_env.delitem(__import__("sys").modules, "agent", raising=False)
    files["conftest.py"] += COUNT_REQUESTS
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    for name, source in files.items():
        (pytester.path / name).write_text(source, encoding="utf-8")

    recorded = pytester.runpytest(*QUIET, "--record-mode=once")
    recorded.assert_outcomes(passed=1)
    assert (pytester.path / "requests.txt").read_text() == "3"
    assert (pytester.path / "cassettes" / "test_agent" / "test_greetings.json").is_file()

    for name in RECIPE_ENV:
        clean_env.delenv(name, raising=False)
    clean_env.delitem(__import__("sys").modules, "agent", raising=False)
    clean_env.setenv("CI", "true")
    replayed = pytester.runpytest(*QUIET)
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["blackbox: 1 replayed, 0 recorded, *"])
    assert (pytester.path / "requests.txt").read_text() == "0"


#: The pages that name, for each claim, the test that proves it.
PROVING_PAGES = ("docs/security.md", "docs/limitations.md")
_TEST_REFERENCE = re.compile(r"`((?:[\w.]+/)*test_\w+\.py)?::(test_\w+)`")


def _test_file(name: str) -> Path:
    """A test file as a page names it: a path from the repository root, or a file name of
    tests/security (where the security page says its tests are), else of one file under tests/."""
    if "/" in name:
        return REPO / name
    if (REPO / "tests" / "security" / name).is_file():
        return REPO / "tests" / "security" / name
    found = sorted((REPO / "tests").rglob(name))
    assert len(found) == 1, f"{name} names {len(found)} files under tests/"
    return found[0]


@pytest.mark.parametrize("page", PROVING_PAGES)
def test_every_test_a_proving_page_names_exists(page: str) -> None:
    """``file.py::test_name`` (and ``::test_name``, in the file named last) is a test of that file:
    a renamed or deleted test cannot leave a guarantee without its proof."""
    missing = []
    current: Path | None = None
    named = 0
    for found in _TEST_REFERENCE.finditer((REPO / page).read_text(encoding="utf-8")):
        current = _test_file(found.group(1)) if found.group(1) else current
        assert current is not None, f"{page}: {found.group(0)} follows no test file"
        named += 1
        if not re.search(rf"^(?:async )?def {found.group(2)}\(", current.read_text(encoding="utf-8"), re.M):
            missing.append(f"{current.relative_to(REPO).as_posix()}::{found.group(2)}")
    assert missing == []
    assert named > 0 or page != "docs/security.md"
