"""The style sheet and script inlined into every page ``blackbox view`` writes.

They are constants because the page's Content-Security-Policy allows exactly these two blocks by
hash; the script only toggles ``open``/``hidden`` and never builds HTML from data. See
docs/view.md#safety.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Final

__all__ = ["CONTENT_SECURITY_POLICY", "SCRIPT", "STYLE"]

STYLE: Final = """
:root {
  --ink: #1f2328; --muted: #656d76; --line: #d0d7de; --paper: #ffffff; --panel: #f6f8fa;
  --input: #0969da; --output: #8250df; --call: #9a6700; --result: #1a7f37; --meta: #57606a;
  --bad: #cf222e; --bad-bg: #ffebe9; --good: #1a7f37; --good-bg: #dafbe1; --warn: #bc4c00; --warn-bg: #fff1e5;
}
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: var(--paper);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; }
code, pre, .hash, .idx, .time {
  font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, monospace; }
header.page { padding: 16px 24px 8px; border-bottom: 1px solid var(--line); background: var(--panel); }
h1 { font-size: 18px; margin: 0 0 8px; }
h1 code { font-size: 17px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
.badges { display: flex; gap: 8px; flex-wrap: wrap; margin: 8px 0; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 12px; font-weight: 600; font-size: 13px;
  border: 1px solid var(--line); background: var(--paper); }
.badge.pass, .badge.success { color: var(--good); background: var(--good-bg); border-color: var(--good); }
.badge.fail, .badge.error { color: var(--bad); background: var(--bad-bg); border-color: var(--bad); }
.badge.incomplete, .badge.none { color: var(--warn); background: var(--warn-bg); border-color: var(--warn); }
.media { display: block; margin: 4px 0; }
.media img { display: block; max-width: 240px; max-height: 180px; border: 1px solid var(--line); }
.media .badge { font-weight: 400; font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; }
table.invariants { border-collapse: collapse; margin: 4px 0 8px; font-size: 13px; }
table.invariants td { padding: 1px 12px 1px 0; vertical-align: top; }
td.pass { color: var(--good); }
td.fail { color: var(--bad); font-weight: 600; }
td.skip { color: var(--muted); }
.outcome-line { margin: 6px 0; }
.controls { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; margin: 10px 0 4px;
  font-size: 13px; }
.controls button { font: inherit; padding: 2px 10px; border: 1px solid var(--line); border-radius: 6px;
  background: var(--paper); cursor: pointer; }
.controls label { color: var(--muted); }
main { padding: 8px 24px 40px; }
ol.timeline { list-style: none; margin: 0; padding: 0; }
li.step { border-left: 4px solid var(--line); margin: 6px 0; padding: 4px 10px; background: var(--paper);
  content-visibility: auto; contain-intrinsic-size: auto 60px; }
li.step.t-model_input { border-left-color: var(--input); }
li.step.t-model_output { border-left-color: var(--output); }
li.step.t-tool_call { border-left-color: var(--call); }
li.step.t-tool_result { border-left-color: var(--result); }
li.step.t-metadata { border-left-color: var(--meta); }
li.step.turn { margin-top: 14px; }
li.step.error, li.step.failed { background: var(--bad-bg); border-left-color: var(--bad); }
.head { display: flex; gap: 10px; align-items: baseline; flex-wrap: wrap; }
.idx { color: var(--muted); text-decoration: none; min-width: 3.5em; }
.type { font-weight: 600; min-width: 7.5em; }
.t-model_input .type { color: var(--input); } .t-model_output .type { color: var(--output); }
.t-tool_call .type { color: var(--call); } .t-tool_result .type { color: var(--result); }
.t-metadata .type { color: var(--meta); }
.time { color: var(--muted); font-size: 12px; min-width: 6em; }
.hash { color: var(--muted); font-size: 12px; }
.summary { overflow-wrap: anywhere; }
.turn-label { font-size: 12px; color: var(--input); border: 1px solid var(--input); border-radius: 8px;
  padding: 0 6px; }
.body { margin: 4px 0 2px; }
pre { margin: 4px 0; padding: 6px 8px; background: var(--panel); border-radius: 6px; white-space: pre-wrap;
  overflow-wrap: anywhere; font-size: 12.5px; max-height: 480px; overflow: auto; }
pre.text { font-family: inherit; font-size: 13.5px; }
details.fold > summary { cursor: pointer; color: var(--muted); font-size: 12.5px; }
details.fold > summary .preview { color: var(--ink);
  font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
.note { color: var(--muted); font-size: 12.5px; margin: 2px 0; }
.msg { margin: 4px 0 4px 4px; padding-left: 8px; border-left: 2px solid var(--line); }
.role { display: inline-block; font-size: 12px; font-weight: 600; color: var(--muted);
  text-transform: uppercase; }
.call, .result { margin: 4px 0; }
.call .arrow { color: var(--call); font-weight: 700; }
.result .arrow { color: var(--result); font-weight: 700; }
.result.error { background: var(--bad-bg); border-left: 3px solid var(--bad); padding-left: 6px; }
.result.error .arrow, .error-label { color: var(--bad); font-weight: 700; }
.answer { border-left: 3px solid var(--good); padding-left: 6px; }
.label { font-size: 12px; color: var(--muted); margin-right: 6px; }
.terminal.success { color: var(--good); font-weight: 600; }
.terminal.error { color: var(--bad); font-weight: 600; }
.failure { color: var(--bad); font-weight: 600; margin: 4px 0; }
.setting { margin: 2px 0; }
details.shared { margin: 8px 0; border: 1px dashed var(--line); border-radius: 6px; padding: 4px 10px; }
details.shared > summary { cursor: pointer; color: var(--muted); }
.columns { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.colhead { font-weight: 600; padding: 4px 0; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
ol.pairs { list-style: none; margin: 0; padding: 0; }
li.pair { margin: 10px 0; padding: 6px 0; border-top: 1px solid var(--line); content-visibility: auto;
  contain-intrinsic-size: auto 120px; }
li.pair.divergence { border: 2px solid var(--warn); border-radius: 6px; padding: 6px 8px;
  background: var(--warn-bg); }
.marker { color: var(--warn); font-weight: 700; margin-bottom: 4px; }
.changes { margin: 2px 0 6px; font-size: 13px; }
.changes ul { margin: 2px 0; padding-left: 20px; }
.path { background: var(--warn-bg); color: var(--warn); padding: 0 3px; border-radius: 3px; }
.before { color: var(--bad); } .after { color: var(--good); }
.missing { color: var(--muted); font-style: italic; }
.side li.step { margin: 0; }
.side.changed li.step { box-shadow: inset 0 0 0 1px var(--warn); }
footer { color: var(--muted); font-size: 12px; padding: 8px 24px 24px; }
"""

SCRIPT: Final = """
(function () {
  "use strict";
  function each(selector, action) {
    Array.prototype.forEach.call(document.querySelectorAll(selector), action);
  }
  function setOpen(open) {
    each("main details", function (node) { node.open = open; });
  }
  function reveal() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
    if (!target) { return; }
    for (var node = target.parentElement; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") { node.open = true; }
    }
    target.scrollIntoView();
  }
  function applyFilter(box) {
    var type = box.getAttribute("data-filter");
    each("li.step", function (row) {
      if (row.getAttribute("data-type") === type) { row.hidden = !box.checked; }
    });
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-action]") : null;
    if (!button) { return; }
    setOpen(button.getAttribute("data-action") === "expand");
  });
  each("input[data-filter]", function (box) {
    box.addEventListener("change", function () { applyFilter(box); });
  });
  each("li.pair.divergence details.fold", function (node) { node.open = true; });
  window.addEventListener("hashchange", reveal);
  reveal();
})();
"""


def _source_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


#: Nothing loads from anywhere; only the two blocks above may style or script the page, and images
#: only come from ``data:`` URIs (the thumbnails of media parts a cassette holds inline).
CONTENT_SECURITY_POLICY: Final = (
    f"default-src 'none'; style-src {_source_hash(STYLE)}; script-src {_source_hash(SCRIPT)}; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
