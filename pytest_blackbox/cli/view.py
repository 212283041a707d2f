"""``blackbox view``: write a run, or two side by side, as one HTML page; imports only the analysis side.

One cassette is read without the hash-chain check, because a run that fails verification is exactly
the one someone needs to look at; two are compared as ``blackbox diff`` compares them. See docs/view.md.
"""

from __future__ import annotations

import argparse
import os
import textwrap
from pathlib import Path
from typing import Any

from ..analysis.verify import VerifyReport, verify_trace
from ..analysis.view import render_diff_html, render_run_html
from ..errors import BlackboxUsageError
from ..trace.errors import CassetteSchemaError
from ..trace.io import load_trace, parse_json, read_text
from ..trace.secrets import mask
from .analysis import add_comparison_options, api_keys, compares_semantically


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``view``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "view",
        help="write a cassette (or two, side by side) as a self-contained HTML page",
        description=textwrap.fill(
            "Write one cassette as an HTML timeline (model turns, tool calls and results, the outcome and "
            "the verify verdict), or two cassettes side by side aligned by step index with the first "
            "divergence marked. The page is one file with no network access; open it in any browser. "
            "The default output is <stem>.html (or <A stem>-vs-<B stem>.html) in the current directory. "
            "Exits 0 once the page is written, also for a cassette that fails verification.",
            78,
        ),
        epilog="examples:\n  blackbox view runs/weather.json\n"
        "  blackbox view runs/weather.json runs/hot.json -o weather-diff.html",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("cassette", help="the cassette to show (the parent, when a second is given)")
    parser.add_argument("other", nargs="?", metavar="child", help="a second cassette: show both side by side")
    parser.add_argument("-o", "--output", metavar="FILE", help="where to write the page (.html)")
    add_comparison_options(parser)
    parser.set_defaults(func=run_view)


def default_output(cassette: str, other: str | None) -> Path:
    """``weather.html`` or ``weather-vs-hot.html``, in the current directory.

    Not next to the cassette: cassettes live in committed test folders, and a generated page
    there would end up in a commit by accident.
    """
    stem = Path(cassette).stem
    name = f"{stem}-vs-{Path(other).stem}.html" if other is not None else f"{stem}.html"
    return Path(name)


def load_for_view(path: str, keys: list[str]) -> tuple[dict[str, Any], VerifyReport]:
    """The run to show and its verify report; a cassette failing a check still loads if it has steps."""
    report = verify_trace(path, api_keys=keys, keep_trace=True)
    if report.trace is not None:
        return dict(report.trace), report
    doc = parse_json(read_text(path), path=path)
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        raise CassetteSchemaError(
            f"`{path}` cannot be shown: it is not a cassette (no steps list); "
            f"`blackbox verify {path}` says what is wrong",
            path=path,
        )
    return doc, report


def _check_output(output: Path, inputs: list[str]) -> None:
    for name in inputs:
        if output.resolve() == Path(name).resolve():
            raise BlackboxUsageError(
                f"-o {output} would overwrite the cassette `{name}`; write the page to an .html file"
            )


def _write(output: Path, page: str) -> None:
    try:
        output.write_text(page, encoding="utf-8")
    except OSError as exc:
        reason = (exc.strerror or exc.__class__.__name__).lower()
        raise BlackboxUsageError(f"cannot write `{output}`: {reason} (choose another -o FILE)") from None


def run_view(args: argparse.Namespace) -> int:
    keys = api_keys()
    inputs = [args.cassette] + ([args.other] if args.other is not None else [])
    output = Path(args.output) if args.output else default_output(args.cassette, args.other)
    _check_output(output, inputs)
    if args.other is None:
        if args.semantic or args.by_hash:
            flag = "--semantic" if args.semantic else "--by-hash"
            raise BlackboxUsageError(f"{flag} compares two cassettes: give a second cassette to compare with")
        trace, report = load_for_view(args.cassette, keys)
        page = render_run_html(trace, verify_report=report, secrets=keys, source=args.cassette)
        verdict = (
            "pass" if report.ok else f"FAIL ({report.first_failure.name if report.first_failure else '?'})"
        )
        summary = f"{len(trace['steps'])} step(s), verify: {verdict}"
    else:
        parent, child = load_trace(args.cassette, shared=True), load_trace(args.other, shared=True)
        page = render_diff_html(
            parent,
            child,
            semantic=compares_semantically(args, parent, child),
            secrets=keys,
            labels=(args.cassette, args.other),
        )
        summary = f"{len(parent['steps'])} vs {len(child['steps'])} step(s)"
    _write(output, page)
    for name in inputs:
        if os.path.islink(name):  # the page shows the target's run: say which file that is
            print(mask(f"{name} is a symbolic link to {os.readlink(name)}", keys))
    print(mask(f"wrote {output} ({summary})", keys))
    print(f"open it: {Path(os.path.abspath(output)).as_uri()}")
    return 0
