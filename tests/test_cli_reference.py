"""``docs/cli.md`` is generated from the argparse definitions and must match them exactly.

Whoever adds or changes a ``blackbox`` command regenerates it with the command these failures
print; the renderer's own rules are pinned on a small parser of its own.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_blackbox.cli import build_parser
from pytest_blackbox.cli.reference import (
    REGENERATE_COMMAND,
    render_cli_reference,
    render_parser_reference,
    undocumented_commands,
)
from tests.machine import scaled

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "cli.md"


def _first_differing_line(old: str, new: str) -> int:
    old_lines, new_lines = old.splitlines(), new.splitlines()
    pairs = zip(old_lines, new_lines, strict=False)
    return next((n for n, (a, b) in enumerate(pairs, 1) if a != b), min(len(old_lines), len(new_lines)) + 1)


def test_docs_cli_md_matches_the_commands() -> None:
    fix = f"regenerate it from the repository root with: {REGENERATE_COMMAND}"
    if not DOCS.is_file():
        pytest.fail(f"docs/cli.md is missing; {fix}", pytrace=False)
    written, generated = DOCS.read_text(encoding="utf-8"), render_cli_reference()
    if written != generated:
        line = _first_differing_line(written, generated)
        pytest.fail(
            f"docs/cli.md is out of date with the blackbox commands (from line {line}); {fix}", pytrace=False
        )


def test_the_module_prints_the_reference_as_utf8() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_blackbox.cli.reference"],
        cwd=REPO,
        capture_output=True,
        timeout=scaled(60),
    )
    assert done.stderr == b""
    assert done.returncode == 0
    assert done.stdout == render_cli_reference().encode("utf-8")


def test_every_command_has_a_description_and_an_example() -> None:
    assert undocumented_commands(build_parser()) == [], (
        "give these commands a description= and an epilog= with an example in add_parser(), "
        f"then run {REGENERATE_COMMAND}"
    )


def _sample_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tool", description="Do  things\nwith <files>.\n\nSecond *paragraph*."
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="say less")
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    run = sub.add_parser(
        "run",
        aliases=["r"],
        help="run it",
        description="Run the\nthing.",
        epilog="examples:\n  tool run a.json\n  tool run a.json b.json -n 2",
    )
    run.add_argument("files", nargs="+", metavar="file", help="input files")
    run.add_argument("-n", "--count", type=int, default=1, help="how many times")
    run.add_argument("--mode", choices=("fast", "slow"), default="fast")
    run.add_argument("--limit", default=5, help="stop early (default: five)")
    run.add_argument("--out", required=True, help="where the `result` goes")
    run.add_argument("--pair", nargs=2, metavar=("A", "B"), help="two values")
    run.add_argument("--tag", action="append", default=[], help="repeatable")
    run.add_argument("--hidden", help=argparse.SUPPRESS)
    show = sub.add_parser("show", help="show_it")
    show.add_argument("name", nargs="?")
    show.add_argument("rest", nargs=argparse.REMAINDER, help="passed on")
    config = sub.add_parser(
        "config", help="settings", description="Settings.", epilog="example: tool config get"
    )
    nested = config.add_subparsers(dest="what", metavar="<what>")
    nested.add_parser(
        "get", help="read one", description="Read one setting.", epilog="example: tool config get"
    )
    return parser


SAMPLE_REFERENCE = (
    "# `tool` command reference\n\n"
    f"<!-- Generated from the argparse definitions: edit those, then run `{REGENERATE_COMMAND}`. -->\n\n"
    + r"""Do things with \<files\>.

Second \*paragraph\*.

Every command also takes `-h` / `--help`. Usage: `tool [-q] <command> ...`

**Options before the command**

- `-q, --quiet`: say less

**Commands**

- [`tool run`](#tool-run): run it
- [`tool show`](#tool-show): show_it
- [`tool config`](#tool-config): settings
  - [`tool config get`](#tool-config-get): read one

## `tool run`

Run the thing.

```text
tool run [-n COUNT] [--mode {fast,slow}] [--limit LIMIT] --out OUT [--pair A B] [--tag TAG] file [file ...]
```

**Arguments**

- `file [file ...]`: input files

**Options**

- `-n, --count COUNT`: how many times (default: `1`)
- `--mode {fast,slow}` (default: `fast`)
- `--limit LIMIT`: stop early (default: five)
- `--out OUT`: where the \`result\` goes (required)
- `--pair A B`: two values
- `--tag TAG`: repeatable

**Examples**

```sh
tool run a.json
tool run a.json b.json -n 2
```

## `tool show`

show_it

```text
tool show [name] rest ...
```

**Arguments**

- `[name]`
- `rest ...`: passed on

## `tool config`

Settings.

```text
tool config <what> ...
```

**Arguments**

- `<what> ...`

**Example**

```sh
tool config get
```

### `tool config get`

Read one setting.

```text
tool config get
```

**Example**

```sh
tool config get
```
"""
)


def test_rendering_rules_on_a_sample_parser() -> None:
    assert render_parser_reference(_sample_parser()) == SAMPLE_REFERENCE


def test_undocumented_commands_are_named_by_their_full_command() -> None:
    assert undocumented_commands(_sample_parser()) == ["tool show"]


def test_the_reference_does_not_depend_on_the_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    wide = render_parser_reference(_sample_parser())
    monkeypatch.setenv("COLUMNS", "40")
    assert render_parser_reference(_sample_parser()) == wide
