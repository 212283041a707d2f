"""The pages in a real browser: they load, style and script work, folds open, markup never runs.

Headless Chromium (Debian's ``chromium`` package) is started by the fixture and driven over the
DevTools protocol; these tests skip only where ``/usr/bin/chromium`` is absent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_blackbox.analysis.verify import verify_trace
from pytest_blackbox.analysis.view import render_diff_html, render_run_html
from pytest_blackbox.trace.model import Trace
from tests import vector_path
from tests.machine import scaled

from .conftest import FORK_CHILD, FORK_PARENT, TRIAGE, vector
from .devtools import CHROMIUM, Page, chromium, png_pixels
from .test_media_page import IMAGE, media, media_run
from .test_run_page import PAYLOAD, one_round

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="browser tests need headless Chromium at /usr/bin/chromium (Debian: apt-get install chromium)",
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as page:
        yield page


def open_page(browser: Page, directory: Path, html: str, fragment: str = "") -> None:
    path = directory / "page.html"
    path.write_text(html, encoding="utf-8")
    browser.open(path.as_uri() + fragment)


def problems(browser: Page) -> list[Any]:
    """Console errors (a CSP violation would be one), uncaught exceptions and dialogs seen so far."""
    found = []
    for event in browser.events:
        method, params = event["method"], event.get("params", {})
        if method == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(params["entry"]["text"])
        if method in ("Runtime.exceptionThrown", "Page.javascriptDialogOpening"):
            found.append(method)
        if method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            found.append(params)
    return found


def assert_non_blank_png(data: bytes, width: int, height: int) -> None:
    got_width, got_height, rows = png_pixels(data)
    assert (got_width, got_height) == (width, height)
    stride = len(rows[0]) // width
    pixels = [row[i : i + 3] for row in rows[::4] for i in range(0, len(row), stride * 4)]
    colours = set(pixels)
    white = sum(1 for pixel in pixels if pixel == b"\xff\xff\xff")
    assert len(colours) >= 8, f"only {len(colours)} colours: the screenshot looks blank"
    assert 0.02 < 1 - white / len(pixels) < 0.98


def test_run_page_styles_folds_filters_and_screenshots(browser: Page, tmp_path: Path) -> None:
    html = render_run_html(vector(TRIAGE), verify_report=verify_trace(vector_path(TRIAGE)))
    open_page(browser, tmp_path, html)
    assert browser.evaluate("document.querySelectorAll('li.step').length") == 17
    assert browser.evaluate("document.querySelector('span.verify').textContent") == "verify: pass"
    # the pinned style applied (a wrong CSP hash would leave the page unstyled)
    assert browser.evaluate("getComputedStyle(document.querySelector('li.step')).borderLeftWidth") == "4px"
    fold = "document.querySelector('#step-3 details.fold')"
    assert browser.evaluate(f"{fold}.open") is False
    browser.evaluate(f"{fold}.querySelector('summary').click()")
    assert browser.evaluate(f"{fold}.open") is True
    assert browser.evaluate(f"{fold}.querySelector('pre').getBoundingClientRect().height > 100") is True
    # the pinned script runs: expand all / collapse all and the type filter
    total = browser.evaluate("document.querySelectorAll('main details').length")
    browser.evaluate("document.querySelector('button[data-action=expand]').click()")
    assert browser.evaluate("document.querySelectorAll('main details[open]').length") == total
    browser.evaluate("document.querySelector('button[data-action=collapse]').click()")
    assert browser.evaluate("document.querySelectorAll('main details[open]').length") == 0
    browser.evaluate("document.querySelector('input[data-filter=tool_call]').click()")
    assert browser.evaluate("document.querySelectorAll('li.step:not([hidden])').length") == 13
    assert browser.evaluate("getComputedStyle(document.querySelector('#step-2')).display") == "none"
    assert_non_blank_png(browser.screenshot(1200, 900, scale=0.5), 600, 450)
    assert problems(browser) == []


def test_diff_page_reveals_targets_in_the_collapsed_prefix(browser: Page, tmp_path: Path) -> None:
    html = render_diff_html(vector(FORK_PARENT), vector(FORK_CHILD))
    open_page(browser, tmp_path, html, "#divergence")
    assert browser.evaluate("document.querySelector('details.shared').open") is False
    assert browser.evaluate("document.querySelector('li.divergence').dataset.index") == "3"
    # the folds of the diverging pair are opened for the reader
    assert browser.evaluate("[...document.querySelectorAll('li.divergence details.fold')].every(d => d.open)")
    assert browser.evaluate("document.querySelector('li.divergence').getBoundingClientRect().top") < 100
    browser.evaluate("window.location.hash = '#parent-step-1'")
    deadline = time.monotonic() + scaled(10)
    while (
        not browser.evaluate("document.querySelector('details.shared').open") and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    assert browser.evaluate("document.querySelector('details.shared').open") is True
    assert_non_blank_png(browser.screenshot(1200, 900, scale=0.5), 600, 450)
    assert problems(browser) == []


def test_markup_in_a_cassette_runs_no_script(browser: Page, tmp_path: Path) -> None:
    trace = one_round({"result": PAYLOAD}, answer=PAYLOAD)
    trace["id"] = PAYLOAD
    open_page(browser, tmp_path, render_run_html(trace))
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    assert browser.evaluate("document.scripts.length") == 1
    assert browser.evaluate("document.images.length") == 0
    assert browser.evaluate("document.querySelector('#step-3 pre').textContent") == PAYLOAD
    assert browser.evaluate("document.querySelector('h1').textContent") == f"Run {PAYLOAD}"
    # the fold opens the same way with markup inside, and still nothing runs
    browser.evaluate("document.querySelector('button[data-action=expand]').click()")
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    assert problems(browser) == []


def test_markup_in_a_diff_runs_no_script(browser: Page, tmp_path: Path) -> None:
    parent, child = vector(FORK_PARENT), vector(FORK_CHILD)
    child["steps"][3]["payload"]["result"] = PAYLOAD
    open_page(browser, tmp_path, render_diff_html(parent, child))
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    assert browser.evaluate("document.scripts.length") == 1
    assert browser.evaluate("document.querySelector('li.divergence .changes .after').textContent") == (
        json.dumps(PAYLOAD)
    )
    assert problems(browser) == []


def test_a_ten_thousand_step_page_opens_and_stays_responsive(
    browser: Page, tmp_path: Path, long_trace: Trace, capsys: pytest.CaptureFixture[str]
) -> None:
    html = render_run_html(long_trace)
    started = time.perf_counter()
    open_page(browser, tmp_path, html)
    loaded = time.perf_counter() - started
    assert loaded < scaled(30)
    assert browser.evaluate("document.querySelectorAll('li.step').length") == 10_003
    click_ms = browser.evaluate(
        "(() => { const t = performance.now();"
        " document.querySelector('#step-9003 details.fold summary').click();"
        " document.querySelector('#step-9003').scrollIntoView();"
        " document.body.getBoundingClientRect();"
        " return performance.now() - t; })()"
    )
    with capsys.disabled():
        print(
            f"\nChromium: 10,003-step page loaded in {loaded:.2f} s, a deep fold opened in {click_ms:.0f} ms"
        )
    assert click_ms < scaled(2000)
    assert browser.evaluate("document.querySelector('#step-9003 details.fold').open") is True
    assert problems(browser) == []


def test_an_inline_image_shows_as_a_thumbnail_the_policy_allows(browser: Page, tmp_path: Path) -> None:
    open_page(browser, tmp_path, render_run_html(media_run(media(IMAGE, inline=True))))
    assert browser.evaluate("document.images.length") == 2
    assert browser.evaluate("Array.from(document.images).map(i => i.naturalWidth)") == [4, 4]
    assert problems(browser) == []
