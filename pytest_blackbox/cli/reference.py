"""The ``blackbox`` command reference in Markdown, generated from the argparse definitions.

Generated so it cannot drift from the commands (a test compares it with docs/cli.md); after changing a
command, regenerate it::

    python -m pytest_blackbox.cli.reference > docs/cli.md

The text depends only on the parser definitions, never on the terminal width or the Python version.
argparse has no public way to walk a parser; the ``_actions``, ``_choices_actions`` and action
classes read here have kept their meaning across every supported Python version.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Iterator

from . import build_parser

__all__ = ["REGENERATE_COMMAND", "render_cli_reference", "render_parser_reference", "undocumented_commands"]

#: The one command that rewrites ``docs/cli.md``; error messages quote it.
REGENERATE_COMMAND = "python -m pytest_blackbox.cli.reference > docs/cli.md"

_PROSE_SPECIAL = re.compile(r"[\\`*<>\[\]]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_EXAMPLE_LABEL = re.compile(r"\s*examples?:", re.IGNORECASE)


def render_cli_reference() -> str:
    """The whole reference for the ``blackbox`` command, as ``docs/cli.md`` holds it."""
    return render_parser_reference(build_parser())


def render_parser_reference(parser: argparse.ArgumentParser) -> str:
    """Markdown for a command-line parser and, in definition order, each of its subcommands."""
    commands = list(_subcommands(parser, 2))
    parts = [
        f"# `{parser.prog}` command reference",
        f"<!-- Generated from the argparse definitions: edit those, then run `{REGENERATE_COMMAND}`. -->",
    ]
    parts += _paragraphs(parser.description)
    parts.append(f"Every command also takes `-h` / `--help`. Usage: {_code(_usage(parser))}")
    options = _argument_list(parser, optional=True)
    if options:
        parts += ["**Options before the command**", options]
    if commands:
        parts += ["**Commands**", "\n".join(_index_entry(*command) for command in commands)]
    parts += [_render_command(level, sub, summary) for level, sub, summary in commands]
    return "\n\n".join(parts) + "\n"


def _index_entry(level: int, parser: argparse.ArgumentParser, summary: str) -> str:
    entry = f"{'  ' * (level - 2)}- [{_code(parser.prog)}](#{_anchor(parser.prog)})"
    return f"{entry}: {_prose(summary)}" if summary else entry


def undocumented_commands(parser: argparse.ArgumentParser) -> list[str]:
    """Subcommands whose ``--help`` has no description or no example epilog, as ``prog`` names."""
    return [sub.prog for _, sub, _ in _subcommands(parser, 2) if not (sub.description and sub.epilog)]


def _subcommands(
    parser: argparse.ArgumentParser, level: int
) -> Iterator[tuple[int, argparse.ArgumentParser, str]]:
    """Each subcommand once (aliases share a parser) with its heading level and one-line summary."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        summaries = {choice.dest: choice.help or "" for choice in action._choices_actions}
        seen: set[int] = set()
        for name, sub in action.choices.items():
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            yield level, sub, summaries.get(name, "")
            yield from _subcommands(sub, level + 1)


def _render_command(level: int, parser: argparse.ArgumentParser, summary: str) -> str:
    parts = [f"{'#' * level} {_code(parser.prog)}"]
    parts += _paragraphs(parser.description) or ([_prose(summary)] if summary else [])
    parts.append(f"```text\n{_usage(parser)}\n```")
    for title, optional in (("Arguments", False), ("Options", True)):
        listed = _argument_list(parser, optional=optional)
        if listed:
            parts += [f"**{title}**", listed]
    examples = _examples(parser.epilog)
    if examples:
        parts += ["**Example**" if examples.count("\n") == 0 else "**Examples**", f"```sh\n{examples}\n```"]
    return "\n\n".join(parts)


def _usage(parser: argparse.ArgumentParser) -> str:
    """Like argparse's usage line (options first, then positionals), on one line and without ``-h``."""
    words = [parser.prog]
    for action in _arguments(parser, optional=True):
        spec = _spec(action, first_only=True)
        words.append(spec if action.required else f"[{spec}]")
    words += [_spec(action, first_only=True) for action in _arguments(parser, optional=False)]
    return " ".join(words)


def _arguments(parser: argparse.ArgumentParser, *, optional: bool) -> list[argparse.Action]:
    return [
        action
        for action in parser._actions
        if bool(action.option_strings) == optional
        and not isinstance(action, argparse._HelpAction)
        and action.help != argparse.SUPPRESS
    ]


def _argument_list(parser: argparse.ArgumentParser, *, optional: bool) -> str:
    return "\n".join(f"- {_describe(action)}" for action in _arguments(parser, optional=optional))


def _describe(action: argparse.Action) -> str:
    """``-o, --output FILE``: its help, then what argparse knows but the help may not say."""
    text = _code(_spec(action, first_only=False))
    if action.help:
        text += f": {_prose(action.help)}"
    if action.option_strings and action.required:
        text += " (required)"
    default = _shown_default(action)
    if default is not None:
        text += f" (default: {_code(default)})"
    return text


def _spec(action: argparse.Action, *, first_only: bool) -> str:
    """``--out FILE``, ``cassette [cassette ...]``, or for the list ``-o, --output FILE``."""
    value = _value_form(action)
    if not action.option_strings:
        return value
    names = action.option_strings[:1] if first_only else action.option_strings
    return " ".join([", ".join(names), value]) if value else ", ".join(names)


def _metavar(action: argparse.Action) -> str:
    if isinstance(action.metavar, tuple):
        return " ".join(action.metavar)
    if action.metavar is not None:
        return action.metavar
    if action.choices is not None:
        return "{" + ",".join(str(choice) for choice in action.choices) + "}"
    return action.dest.upper() if action.option_strings else action.dest


def _value_form(action: argparse.Action) -> str:
    """The value part of an argument, spelled the way argparse spells ``nargs``."""
    nargs = action.nargs
    if nargs == 0:
        return ""
    name = _metavar(action)
    if nargs is None:
        return name
    if nargs == argparse.OPTIONAL:
        return f"[{name}]"
    if nargs == argparse.ZERO_OR_MORE:
        return f"[{name} ...]"
    if nargs == argparse.ONE_OR_MORE:
        return f"{name} [{name} ...]"
    if nargs in (argparse.REMAINDER, argparse.PARSER):
        return f"{name} ..."
    names = action.metavar if isinstance(action.metavar, tuple) else (name,) * int(nargs)
    return " ".join(names)


def _shown_default(action: argparse.Action) -> str | None:
    """A default worth printing: one the option takes a value for and its help does not already name."""
    default = action.default
    if action.nargs == 0 or default in (None, argparse.SUPPRESS) or default == []:
        return None
    if action.help and "default" in action.help:
        return None
    return str(default)


def _examples(epilog: str | None) -> str:
    """The epilog's commands, without an ``example:`` / ``examples:`` label and its indentation."""
    if not epilog:
        return ""
    label = _EXAMPLE_LABEL.match(epilog)
    body = epilog[label.end() :] if label else epilog
    return textwrap.dedent(body.lstrip(" ").strip("\n")).strip()


def _paragraphs(text: str | None) -> list[str]:
    """Help text paragraphs with argparse's line wrapping undone, so Markdown can wrap them."""
    if not text:
        return []
    return [_prose(" ".join(block.split())) for block in re.split(r"\n\s*\n", text.strip()) if block.strip()]


def _prose(text: str) -> str:
    """Help text as Markdown that shows exactly those characters (``<stem>`` is no HTML tag)."""
    return _PROSE_SPECIAL.sub(lambda match: "\\" + match.group(), text)


def _code(text: str) -> str:
    """An inline code span that survives backticks in ``text``."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def _anchor(heading: str) -> str:
    """The fragment GitHub gives a heading such as ``blackbox fork``."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def main() -> None:
    """Write the reference to standard output as UTF-8, whatever the console's encoding."""
    sys.stdout.flush()
    sys.stdout.buffer.write(render_cli_reference().encode("utf-8"))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
