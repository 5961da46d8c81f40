"""Structured data as text: the human-readable values of a page's JSON-LD and microdata.

A browser tool that prints a page's metadata (Magentic-One's WebSurfer: "The following
metadata was extracted from the webpage: {...}") often prints the whole article there, as a
JSON-LD `articleBody` or a microdata `text`, while its screen text shows only the top of the
page: on Who&When's development pages the gold answer was only there in 3 of 13 cut
observations (issue 48). `readable_values` gives those values as plain text (JSON and HTML
escapes decoded, tags dropped, glued sentences and runs of spaces made breaks) so that
`extract` can rank them after the page's body (it fills what the body leaves of the budget;
on those three pages that was too little, or the answer shared no term with the question:
docs/evidence/retention.md). The meta tags themselves (`"meta_tags": {...}`: viewport,
robots, `og:`, `twitter:`) are never read here.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Iterator
from html import unescape
from itertools import compress
from typing import Any

# keys whose string value is text for a reader (schema.org), not an address, id or code
READABLE = frozenset(
    ("articleBody", "text", "reviewBody", "abstract", "description", "headline", "name")
)
MIN_CHARS = 40  # a shorter value is a label (a name, a headline): the page's title says it
_MEMBER = re.compile(r'^\s*(?:"(?P<key>[^"\\]{1,60})"\s*:\s*)?(?P<val>".*")\s*,?\s*$')
_TAGS_OPEN = re.compile(r'^\s*"meta_?tags"\s*:\s*\{', re.IGNORECASE)
_HTML_TAG = re.compile(r"<[A-Za-z/!][^<>]*>")
# a sentence glued to the next one ("... in Winners At War.Season 32: ..."): a break there
_GLUED = re.compile(r"(?<=[a-z0-9)][.!?])(?=[A-Z][a-z])")
_GAP = re.compile(r"[ \t\xa0]{3,}|\s*\n\s*")  # a run of spaces: a block boundary in the source


def _values(data: Any, key: str | None = None, depth: int = 0) -> Iterator[str]:
    """The readable string values of decoded JSON (nested JSON-LD strings decoded too)."""
    if depth > 12:
        return
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _values(v, str(k), depth + 1)
    elif isinstance(data, list):
        for v in data:
            yield from _values(v, key, depth + 1)
    elif isinstance(data, str):
        s = data.strip()
        if s[:1] in "{[" and s[-1:] in "}]":
            try:
                yield from _values(json.loads(s), key, depth + 1)
            except ValueError:
                return
        elif key in READABLE:
            yield s


def _render(value: str) -> str:
    """A value as plain text: HTML unescaped, tags dropped, one block per line."""
    text = _HTML_TAG.sub(" ", unescape(value))
    text = _GLUED.sub("\n", text)
    lines = (" ".join(x.split()) for x in _GAP.split(text))
    return "\n".join(x for x in lines if x)


def readable_values(lines: list[str], chrome: list[bool]) -> list[str]:
    """The readable values (rendered, each at least `MIN_CHARS` long, no repeats) of the
    structured data among the chrome `lines`, meta-tag blocks skipped. Only chrome lines are
    visited, and the lines of a meta-tag block (which may run past the chrome)."""
    out: dict[str, None] = {}
    at = list(compress(range(len(lines)), chrome))
    k = 0
    while k < len(at):
        i, k = at[k], k + 1
        line = lines[i]
        if _TAGS_OPEN.match(line):
            k = bisect_left(at, _block_end(lines, i), k)
            continue
        m = _MEMBER.match(line) if '"' in line else None
        if m is None:
            continue
        try:
            value = json.loads(m.group("val"))
        except ValueError:
            continue
        for v in _values(value, m.group("key")):
            text = _render(v)
            if len(text) >= MIN_CHARS:
                out.setdefault(text)
    return list(out)


def _block_end(lines: list[str], i: int) -> int:
    """The line after the meta-tag block that opens on line `i` (its braces closed)."""
    depth = max(0, lines[i].count("{") - lines[i].count("}"))
    i += 1
    while depth > 0 and i < len(lines):
        depth = max(0, depth + lines[i].count("{") - lines[i].count("}"))
        i += 1
    return i
