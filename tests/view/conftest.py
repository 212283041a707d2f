"""Fixtures for the ``blackbox view`` tests: the shared cassette vectors and an HTML tree to query.

The pages are checked as parsed HTML (the stdlib parser, with strict nesting), not by searching
strings: a test asks "how many timeline rows" or "what text is in the divergence marker" the way
a reader of the page would see it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import pytest

from pytest_blackbox.trace.io import load_trace
from pytest_blackbox.trace.model import Trace
from tests import vector_json, vector_path

SUCCESS = "fixtures/traces/success-tool-use.v2.json"
ERROR = "fixtures/traces/error-unknown-tool.v2.json"
FORK_PARENT = "fixtures/traces/fork-parent.v2.json"
FORK_CHILD = "fixtures/traces/fork-child.v2.json"
TRIAGE = "examples/fleet-triage/cassettes/triage-incident.json"
TRIAGE_HYPOTHESIS = "examples/fleet-triage/cassettes/triage-hypothesis.json"
TRIAGE_FIXED = "examples/fleet-triage/cassettes/triage-fixed.json"

_VOID = frozenset({"meta", "input", "br", "img", "hr", "link", "wbr", "source", "col", "area", "base"})


@dataclass
class Node:
    """One element of a parsed page."""

    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    @property
    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def iter(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        """Descendants (self included) by tag, one class, and exact attribute values (``_`` for ``-``)."""
        wanted = {key.replace("_", "-"): value for key, value in attrs.items()}
        return [
            node
            for node in self.iter()
            if (tag is None or node.tag == tag)
            and (cls is None or cls in node.classes)
            and all(node.attrs.get(key) == value for key, value in wanted.items())
        ]

    def one(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Node:
        found = self.find_all(tag, cls, **attrs)
        assert len(found) == 1, f"expected one <{tag} class={cls} {attrs}>, found {len(found)}"
        return found[0]

    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text() for child in self.children)


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {key: value or "" for key, value in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {key: value or "" for key, value in attrs}))

    def handle_endtag(self, tag: str) -> None:
        open_tag = self.stack[-1].tag
        assert open_tag == tag, f"</{tag}> closes <{open_tag}>: the page is not well nested"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def meta(page: Node) -> dict[str, str]:
    """The header's label → value list (``<dl class="meta">``)."""
    dl = page.one("dl", "meta")
    labels, values = dl.find_all("dt"), dl.find_all("dd")
    return {label.text(): value.text() for label, value in zip(labels, values, strict=True)}


def parse_page(text: str) -> Node:
    """The page as a tree; fails on any tag closed out of order or left open."""
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    assert len(builder.stack) == 1, f"<{builder.stack[-1].tag}> is never closed"
    return builder.root


def vector(name: str) -> Trace:
    return load_trace(vector_path(name))


def raw_vector(name: str) -> dict[str, Any]:
    """A vector as plain JSON, free to edit (the chain is not checked)."""
    loaded: dict[str, Any] = vector_json(name)
    return loaded


@pytest.fixture(scope="session")
def long_trace() -> Trace:
    """The 10,003-step run, built once for the scale and browser tests."""
    from .longrun import long_run

    return long_run()
