"""Masking: known secrets and realistic credentials never reach a report."""

from __future__ import annotations

import pytest

from pytest_blackbox.trace.secrets import contains_secret, known_secrets, mask, truncate_masked

ANT_KEY = "sk-ant-api03-" + "Ab3_" * 8  # 45 characters, realistic shape
PROJ_KEY = "sk-proj-" + "x9Y-" * 6
LEGACY_KEY = "sk-" + "a1B2" * 9


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"key={ANT_KEY} end", "key=[redacted] end"),
        (f"{PROJ_KEY}", "[redacted]"),
        (f"legacy {LEGACY_KEY}", "legacy [redacted]"),
        ("Authorization: Bearer abcdefghijklmnop.qrs", "Authorization: [redacted]"),
        ("sk-ant-short", "sk-ant-short"),  # too short to be a real key
        ("sk-" + "a" * 31, "sk-" + "a" * 31),  # generic sk- needs 32 or more
        ("Bearer short", "Bearer short"),
        ("call-0 and toolu_01 stay", "call-0 and toolu_01 stay"),
    ],
)
def test_mask_realistic_credentials(text: str, expected: str) -> None:
    assert mask(text) == expected


def test_mask_known_secret_and_its_stripped_form() -> None:
    assert mask("token=hunter2-value; again hunter2-value", ["hunter2-value\n"]) == (
        "token=[redacted]; again [redacted]"
    )


def test_mask_ignores_short_known_values() -> None:
    assert mask("abc is fine", ["abc"]) == "abc is fine"
    assert known_secrets(["abc", " abcd ", 7]) == [" abcd ", "abcd"]  # type: ignore[list-item]


def test_mask_longest_secret_first() -> None:
    assert mask("xx-secret-value-long", ["secret", "xx-secret-value-long"]) == "[redacted]"


def test_truncate_masks_before_cutting() -> None:
    # The key straddles the 200-character cut: cutting first would leave a prefix no rule knows.
    shown = truncate_masked("a" * 190 + ANT_KEY + " tail", 200)
    assert shown == "a" * 190 + "[redacted…"
    assert len(shown) == 200


def test_truncate_masks_known_secret_straddling_the_cut() -> None:
    secret = "my-very-own-secret-value"
    assert truncate_masked("b" * 190 + secret, 200, [secret]) == "b" * 190 + "[redacted]"
    assert truncate_masked("b" * 195 + secret + "c" * 50, 200, [secret]) == "b" * 195 + "[red…"


def test_truncate_short_text_unchanged() -> None:
    assert truncate_masked("short", 200) == "short"
    assert truncate_masked("x" * 201, 200) == "x" * 199 + "…"


def test_contains_secret_walks_strings_and_keys() -> None:
    secret = "s3cr3t-value"
    assert contains_secret({"a": [1, {"b": f"prefix {secret}"}]}, [secret])
    assert contains_secret({f"{secret}": 1}, [secret])
    assert contains_secret(["x", (f"{secret}\n",)], [secret + "  "])
    assert not contains_secret({"a": [1, 2.5, None, True, "other"]}, [secret])
    assert not contains_secret({"a": secret}, [])
