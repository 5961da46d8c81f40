"""The shortcuts of purification's fast passages (issue 50) against the plain computations they
replace: the same lines, sentences and words on any text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from overseer.supervise._markup import (
    _HEAD_LINE,
    _ROW_LINE,
    _START_2,
    _START_2_RAW,
    LOWER_TO_ASCII,
    _cookie_lines,
)
from overseer.supervise._passages import _BREAK, _marked, _sentences, _split_long
from overseer.supervise._rank import _underscored

# the patterns as they were before their quantifiers were made possessive
PLAIN_HEAD = re.compile(
    r"^\s*(?:#{1,3}\s|(?:title|url|source|address|link|date|published|author|page)\s*:|"
    r"https?://\S+\s*$)",
    re.IGNORECASE,
)
PLAIN_ROW = re.compile(r"^\s*(?![-*•+>]\s|\d{1,3}[.)]\s)[^\s:\[][^:\n]{0,59}:\s+\S.{0,79}$")

LINE_PIECES = st.sampled_from(
    [
        *(" ", "  ", "\t", "\xa0", "\u2003", "\x1f", ":", ": ", "a", "B", "1", "12", "123"),
        *(".", ")", "-", "*", "•", "+", ">", "[", "#", "##", "####", "Title", "url", "http://"),
        *("https://x.y", "x" * 30, "y" * 61, "z" * 80, "é", "ſ", "\u212a", "\u0130", "author"),
    ]
)
LINE = st.lists(LINE_PIECES, max_size=14).map("".join)
TEXT_PIECES = st.sampled_from(
    [
        *("word", "Word", "A.", "1.", "12.", "x", " ", "  ", "\n", ". ", ".\n", "! ", "? ", "!"),
        *("\t", "\xa0", "Dr. Who. ", "5! ", "A? ", "é", "\u212a", "\u0130", "cookie", "COOK"),
        *("Cookies", "_", "foo_bar", "\x02", "\x00", "?", "\u2028", "\r\n"),
    ]
)
TEXT = st.lists(TEXT_PIECES, max_size=40).map("".join)


def test_only_two_characters_beyond_ascii_lower_case_to_an_ascii_letter() -> None:
    found = {
        chr(c): chr(c).lower()[0]
        for c in range(128, 0x110000)
        if not 0xD800 <= c < 0xE000 and chr(c).lower()[0].isascii()
    }
    assert found == LOWER_TO_ASCII


def test_raw_line_starts_are_the_lower_cased_ones() -> None:
    alphabet = [*map(chr, range(0x250)), "\u0130", "\u212a", "\u0131", "\u017f"]
    for a in alphabet:
        for b in ["", *alphabet]:
            assert ((a + b).lower()[:2] in _START_2) == (a + b in _START_2_RAW), repr(a + b)


@settings(max_examples=1000, deadline=None)
@given(line=LINE)
def test_possessive_line_patterns_match_the_same_lines(line: str) -> None:
    for fast, plain in ((_HEAD_LINE, PLAIN_HEAD), (_ROW_LINE, PLAIN_ROW)):
        got, want = fast.match(line), plain.match(line)
        assert (got and got.group()) == (want and want.group())


@settings(max_examples=1000, deadline=None)
@given(
    paras=st.lists(TEXT.filter(lambda t: t.strip() != ""), max_size=6),
    limit=st.sampled_from([3, 8, 600]),
)
def test_marked_sentences_are_each_paragraph_s_sentences(paras: list[str], limit: int) -> None:
    marked = _marked(paras)
    if marked is None:
        assert any(_BREAK in p or "\x02" in p for p in paras)
        return
    assert len(marked) == len(paras)
    for par, mark in zip(paras, marked, strict=True):
        assert _sentences(mark, limit, True) == _split_long(par, limit)


@settings(max_examples=1000, deadline=None)
@given(text=TEXT)
def test_cookie_lines_and_underscored_words(text: str) -> None:
    lines = text.splitlines()
    assert _cookie_lines(lines) == [i for i, ln in enumerate(lines) if "cookie" in ln.lower()]
    spaced = re.sub(r"\s", " ", text)
    assert _underscored(spaced) == {w for w in spaced.split(" ") if "_" in w}
