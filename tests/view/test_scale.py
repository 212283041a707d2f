"""A run of over 10,000 steps renders in seconds, and its page stays light enough to open."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pytest_blackbox.analysis.view import render_diff_html
from pytest_blackbox.cli import main
from pytest_blackbox.trace.io import save_trace
from pytest_blackbox.trace.model import Trace
from tests.machine import scaled

from .conftest import parse_page
from .longrun import long_run

#: Generous: measured times on the 2-core machine are a few seconds (see docs/view.md).
BOUND_SECONDS = 10.0


def test_ten_thousand_steps_render_through_the_cli_in_seconds(
    tmp_path: Path, clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], long_trace: Trace
) -> None:
    cassette, out = tmp_path / "long.json", tmp_path / "long.html"
    save_trace(long_trace, cassette)
    started = time.perf_counter()
    assert main(["view", str(cassette), "-o", str(out)]) == 0
    elapsed = time.perf_counter() - started
    assert capsys.readouterr().out.startswith("wrote ")
    with capsys.disabled():
        print(f"\nblackbox view, 10,003 steps: {elapsed:.2f} s, page {out.stat().st_size / 1e6:.1f} MB")
    assert elapsed < scaled(BOUND_SECONDS)
    page = parse_page(out.read_text(encoding="utf-8"))
    assert len(page.find_all("li", "step")) == 10_003
    # every later turn shows only its two new messages, not the whole window again
    turn = page.one("li", "step", id="step-400")
    assert turn.one("p", "note").text() == "4 earlier message(s) as in step 396; new:"
    assert len(turn.find_all("div", "msg")) == 2


def test_a_ten_thousand_step_diff_renders_in_seconds(
    capsys: pytest.CaptureFixture[str], long_trace: Trace
) -> None:
    child = long_run(changed_round=1, trace_id="long-run-fork")
    started = time.perf_counter()
    text = render_diff_html(long_trace, child)
    elapsed = time.perf_counter() - started
    with capsys.disabled():
        print(f"\ndiff page, 10,003 steps each: {elapsed:.2f} s, page {len(text) / 1e6:.1f} MB")
    assert elapsed < scaled(BOUND_SECONDS)
    # the structure of diff pages is checked on the vectors; here only the counts, by their markup
    assert text.count('<li class="pair') == 10_003 - 7
    assert text.count('<li class="pair divergence" id="pair-7" data-index="7">') == 1
