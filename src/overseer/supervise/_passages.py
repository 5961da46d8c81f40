"""Purification's passages: a long observation cut into the verbatim pieces it is ranked by.

Rows (`label: value` lines), headings and chrome lines (`_markup.chrome_lines`) stand alone;
runs of other lines are paragraphs, cut into sentences (a fact sentence inside a paragraph of
filler is scored alone, issue 39) and a sentence over the limit into slices. After the page's
own text comes the readable text of its structured data (`_structured`), less what the page
already says. `cut` gives them as parallel lists (what `_extract` ranks and selects from,
without a tuple per passage: issue 50), `passages` as `Passage` tuples.
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import compress, repeat
from typing import Literal, NamedTuple

from overseer.supervise._markup import line_kinds
from overseer.supervise._structured import readable_values
from overseer.supervise._tokens import alnum_words

# a sentence ends at `.`, `!` or `?` and a space, but not after a list number (`2.`) or an
# initial (`Arthur D. Levinson`); the pattern starts with the punctuation, so that the regex
# engine skips to it (a pattern starting with a look-behind is tried at every character)
_SENTENCE_END = re.compile(r"[.!?](?<!\b\d\.)(?<!\b\d\d\.)(?<!\b[A-Z]\.)\s+")
# the same, one pattern per end character (`_marked`)
_ENDS = (
    (".", re.compile(r"\.(?<!\b\d\.)(?<!\b\d\d\.)(?<!\b[A-Z]\.)\s+")),
    ("!", re.compile(r"!\s+")),
    ("?", re.compile(r"\?\s+")),
)
PASSAGE_MAX = 600  # characters; a longer sentence is cut into slices of at most this
_DATA_MIN = 4  # characters of a block of structured data's text: "1" or "n" is a fragment
_BREAK = "\x00"  # between paragraphs when their sentences are found in one pass
_MARK = "\x02"  # put after each sentence's end by that pass

Kind = Literal["row", "head", "chrome", "body", "data"]


class Passage(NamedTuple):
    """A verbatim piece of the text: a sentence (or slice) of paragraph `para` (`body`), or a
    line on its own: a `label: value` row, a heading / title / URL line (`head`), or page
    chrome (metadata, banners, navigation: `chrome`, see `_markup.chrome_lines`)."""

    text: str
    kind: Kind
    para: int


class Parts(NamedTuple):
    """The passages of a text as parallel lists (each one's text, kind and paragraph), with
    the indices of its rows and of its headings in order."""

    texts: list[str]
    kinds: list[Kind]
    paras: list[int]
    rows: list[int]
    heads: list[int]


def _slices(rest: str, limit: int, out: list[str]) -> None:
    """`rest` (stripped, maybe empty) onto `out`, cut at spaces into slices of at most
    `limit` characters (mid-word where a slice holds no space)."""
    while len(rest) > limit:
        cut = rest.rfind(" ", 0, limit)
        cut = cut if cut > 0 else limit
        out.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        out.append(rest)


def _split_long(par: str, limit: int) -> list[str]:
    """Cut a paragraph into its sentences (verbatim); a sentence over `limit` chars is cut
    into slices of at most `limit`."""
    out: list[str] = []
    start = 0
    bounds = [(m.start() + 1, m.end()) for m in _SENTENCE_END.finditer(par)]
    for end, after in [*bounds, (len(par), len(par))]:
        _slices(par[start:end].strip(), limit, out)
        start = after
    return out


def _marked(paras: list[str]) -> list[str] | None:
    """The paragraphs with `_MARK` after each sentence end (`_SENTENCE_END`, its spaces
    dropped), or None when a paragraph holds `_BREAK` or `_MARK` itself. They are joined by
    `_BREAK` (which no pattern character matches, so no sentence end spans two paragraphs,
    and the look-behinds see a non-word character where a paragraph starts, as at a string's
    start) and marked by one substitution per end character: a pattern that starts with a
    character literal is found at C speed, one that starts with a set of characters is tried
    at every character (three times slower on an 8,000-character page, issue 50). Only a
    period has look-behinds, and no mark or space dropped is a character they test."""
    joined = _BREAK.join(paras)
    if not paras:
        return []
    if joined.count(_BREAK) != len(paras) - 1 or _MARK in joined:
        return None
    for end, pattern in _ENDS:
        if end in joined:
            joined = pattern.sub(end + _MARK, joined)
    return joined.split(_BREAK)


def cut(text: str, limit: int = PASSAGE_MAX, *, data: bool = False) -> Parts:
    """The text as passages in order (see the module): paragraphs numbered from 0 in order (a
    line on its own is a paragraph of its own); with `data`, then the readable text of its
    structured data (`data`)."""
    lines = text.splitlines()
    kinds = line_kinds(lines, "cookie" in text or "Cookie" in text or "COOKIE" in text)
    items: list[tuple[Kind, str | int]] = []  # (kind, stripped line or paragraph index)
    paras: list[list[str]] = []  # each paragraph's lines, right-stripped
    prev: Kind | None = None
    for kind, line in zip(kinds, lines, strict=True):
        if kind == "body":
            if prev == "body":
                paras[-1].append(line.rstrip())
            else:
                items.append(("body", len(paras)))
                paras.append([line.rstrip()])
        elif kind is not None:
            items.append((kind, line.strip()))
        prev = kind
    joined = ["\n".join(p) for p in paras]
    marked = _marked(joined)
    out = _assemble(items, joined if marked is None else marked, limit, marked is not None)
    if data and "chrome" in kinds:
        chrome = [k == "chrome" for k in kinds]
        _add_data(out, lines, chrome, len(items), limit)
    return out


def _sentences(par: str, limit: int, marked: bool) -> list[str]:
    """A paragraph's sentences (`_split_long`), from its text marked by `_marked` or not."""
    if not marked:
        return _split_long(par, limit)
    sentences = list(filter(None, map(str.strip, par.split(_MARK))))
    if len(par) <= limit or not sentences or max(map(len, sentences)) <= limit:
        return sentences  # none to slice (most paragraphs): no call per sentence
    out: list[str] = []
    for sentence in sentences:
        _slices(sentence, limit, out)
    return out


def _assemble(
    items: list[tuple[Kind, str | int]], paras: list[str], limit: int, marked: bool
) -> Parts:
    """The passages of `items` (lines on their own, and paragraphs by index into `paras`, by
    `_marked` when `marked`) as `Parts`, item k being paragraph k. A marked paragraph with no
    mark within the limit is one sentence: most are (a line of a screen, a list item)."""
    out = Parts([], [], [], [], [])
    texts, kinds, numbers = out.texts, out.kinds, out.paras
    for para, (kind, what) in enumerate(items):
        if kind == "body":
            text = paras[what]  # type: ignore[index]
            if marked and len(text) <= limit and _MARK not in text:
                texts.append(text.strip())
                kinds.append("body")
                numbers.append(para)
                continue
            got = _sentences(text, limit, marked)
            texts.extend(got)
            kinds.extend(repeat("body", len(got)))
            numbers.extend(repeat(para, len(got)))
            continue
        if kind == "row":
            out.rows.append(len(texts))
        elif kind == "head":
            out.heads.append(len(texts))
        texts.append(what)  # type: ignore[arg-type]
        kinds.append(kind)
        numbers.append(para)
    return out


def passages(text: str, limit: int = PASSAGE_MAX, *, data: bool = False) -> list[Passage]:
    """The text as passages in order (`cut`), each a `Passage`."""
    parts = cut(text, limit, data=data)
    return [Passage(*p) for p in zip(parts.texts, parts.kinds, parts.paras, strict=True)]


def _add_data(out: Parts, lines: list[str], chrome: list[bool], n: int, limit: int) -> None:
    """The readable text of the page's structured data (`_structured.readable_values`), one
    paragraph per block, numbered from `n` on (so printed after the page's own text); a block
    the page's own text already says (a headline that is its title) is left out."""
    values = readable_values(lines, chrome)
    if not values:
        return
    blocks = [b for v in values for b in v.splitlines() if len(b) >= _DATA_MIN]
    own = "\n".join([x for x, c in zip(lines, chrome, strict=True) if not c])
    for block, said in zip(blocks, _said(own, blocks), strict=True):
        if not said:
            got = _split_long(block, limit)
            out.texts.extend(got)
            out.kinds.extend(repeat("data", len(got)))
            out.paras.extend(repeat(n, len(got)))
            n += 1


def _said(text: str, blocks: list[str]) -> list[bool]:
    """For each block, whether its lower-cased words occur in `text`'s in order and adjacent
    (`alnum_words`: the same test as `f" {' '.join(block words)} " in f" {' '.join(text
    words)} "`). A block is looked for only where its rarest word stands in `text`: a scan of
    the text per block made a page with many blocks of structured data quadratic (issue 50)."""
    words = alnum_words(text.lower())
    needs = [alnum_words(b.lower()) for b in blocks]
    count = Counter(words)
    anchor = [min(range(len(w)), key=lambda j: count[w[j]]) if w else -1 for w in needs]
    wanted = {w[j] for w, j in zip(needs, anchor, strict=True) if j >= 0}
    at: dict[str, list[int]] = {w: [] for w in wanted}
    for i in compress(range(len(words)), map(wanted.__contains__, words)):
        at[words[i]].append(i)
    return [
        any(words[i - j : i + len(w) - j] == w for i in at[w[j]] if i >= j) if j >= 0
        else not words  # a block of no words: found only in a text of none
        for w, j in zip(needs, anchor, strict=True)
    ]  # fmt: skip
