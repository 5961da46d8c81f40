"""TF-IDF relevance of passages to a query: what purification ranks passages by.

It computes exactly what scikit-learn's `TfidfVectorizer(sublinear_tf=True, stop_words=
"english", token_pattern=r"(?u)\\b[^\\W_]+\\b")` followed by a cosine with the query gave
(the scorer `extract` used until issue 50), without scikit-learn (its import stalled the first
purification of a process for about 2.4 s, and its sparse matrices cost tens of milliseconds
per 8,000-character output on the proxy's event loop), in pure Python (issue 49: numpy is no
core dependency; a numpy cosine was measured beside it, about equal at 8,000 characters and
1.7x faster at 100,000, not worth a second implementation). Its floats are the numpy version's
(until issue 49) bit for bit: each sum is taken one addition at a time in the order numpy's
`bincount` took it (a document's terms by id, that is by first occurrence; not
`sum()`, which compensates from Python 3.12 on), and only the documents that share a term
with the query get a vector at all (the others score 0.0, as a sum of zeros does).
`benchmarks/purify_speed.py` times it.

The definition, for `n` documents (the passages, then the query):
tf(t, d) = 1 + ln(count of t in d); idf(t) = ln((1 + n) / (1 + df(t))) + 1; each document's
vector is L2-normalised; a passage's score is the dot product of its vector with the query's.
"""

from __future__ import annotations

import collections
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial, reduce
from itertools import chain, compress, count, islice, repeat
from operator import add, mul, not_, truediv
from typing import NamedTuple

from overseer.supervise._tokens import SEP, lower_words
from overseer.supervise._tokens import warm as tokens_warm

# words, not `_`-joined names (`foo_bar` is no token, as in scikit-learn's pattern)
TOKEN = re.compile(r"(?u)\b[^\W_]+\b")

# scikit-learn's English stop words (BSD-3-Clause, from the Glasgow Information Retrieval
# Group's list): words that match everything, so they would make every passage relevant.
_STOP_TEXT = """
    a about above across after afterwards again against all almost alone along already also
    although always am among amongst amoungst amount an and another any anyhow anyone anything
    anyway anywhere are around as at back be became because become becomes becoming been before
    beforehand behind being below beside besides between beyond bill both bottom but by call can
    cannot cant co con could couldnt cry de describe detail do done down due during each eg eight
    either eleven else elsewhere empty enough etc even ever every everyone everything everywhere
    except few fifteen fifty fill find fire first five for former formerly forty found four from
    front full further get give go had has hasnt have he hence her here hereafter hereby herein
    hereupon hers herself him himself his how however hundred i ie if in inc indeed interest into
    is it its itself keep last latter latterly least less ltd made many may me meanwhile might
    mill mine more moreover most mostly move much must my myself name namely neither never
    nevertheless next nine no nobody none noone nor not nothing now nowhere of off often on once
    one only onto or other others otherwise our ours ourselves out over own part per perhaps
    please put rather re same see seem seemed seeming seems serious several she should show side
    since sincere six sixty so some somehow someone something sometime sometimes somewhere still
    such system take ten than that the their them themselves then thence there thereafter
    thereby therefore therein thereupon these they thick thin third this those though three
    through throughout thru thus to together too top toward towards twelve twenty two un under
    until up upon us very via was we well were what whatever when whence whenever where
    whereafter whereas whereby wherein whereupon wherever whether which while whither who whoever
    whole whom whose why will with within without would yet you your yours yourself
    yourselves"""
STOP_WORDS = frozenset(_STOP_TEXT.split())


def warm() -> None:
    """Build the tokeniser's tables for the common characters now (`_tokens.warm`)."""
    tokens_warm()


def terms(text: str) -> list[str]:
    """The indexed terms of `text`: lower-cased words, stop words dropped."""
    return [w for w in _words([text])[1:] if w not in STOP_WORDS and "_" not in w]


def _joined(docs: list[str]) -> str:
    """The documents with `SEP` before each (as a word of its own): the first word is `SEP`."""
    joined = f"{SEP} " + f" {SEP} ".join(docs)
    if joined.count(SEP) != len(docs):  # a document holds the separator itself
        joined = f"{SEP} " + f" {SEP} ".join(d.replace(SEP, " ") for d in docs)
    return joined


def _words(docs: list[str]) -> list[str]:
    """Every word of the documents in order (`SEP` first and between two documents),
    lower-cased; stop words and words holding `_` kept."""
    return lower_words(_joined(docs)).split()


# `SEP` and the stop words first: their ids come before any other word's, so the ids that
# are no term are known without a look at each word (the other words' ids keep their order)
_SEEDED = {w: i for i, w in enumerate((SEP, *sorted(STOP_WORDS)))}
_SEEDED_IDS = frozenset(_SEEDED.values())


class _Terms(NamedTuple):
    """Documents tokenised (`_term_ids`): each one's words, the ids of the words, each one's
    distinct ids, and the ids that are no term."""

    words: list[list[str]]
    vocab: dict[str, int]
    sets: list[set[int]]
    no_term: frozenset[int]


def _term_ids(docs: list[str]) -> _Terms:
    """Each document's words, and its distinct words as ids, with the ids that are no term
    (the stop words, words holding `_`). Ids come after `_SEEDED`'s in order of first
    occurrence, handed out by C-level passes (a new word gets its position's number:
    `dict.setdefault` with one counter over all documents, not consecutive); only their order
    matters downstream (a document's terms are summed by id), so that the result never
    depends on hashing. A word holding `_` (no token: the pattern needs a word boundary at
    both ends) gets an id too, never counted. No list of ids per document is kept: only the
    few documents that share a term with a query and repeat a word need one (`_Weights`).
    The numbers are taken from `_numbers` (made once), not from `itertools.count`, which
    made an int per word (3% of this function's time on an 8,000-character page)."""
    if not docs:
        return _Terms([], {}, [], _SEEDED_IDS)
    text = lower_words(_joined(docs))
    vocab = dict(_SEEDED)
    add_id = partial(map, vocab.setdefault)
    words = list(map(str.split, text.split(SEP)[1:]))
    ids = _numbers(len(_SEEDED), len(text) // 2 + 1)  # a word, then a space: at most this
    sets = list(map(set, map(add_id, words, repeat(ids))))
    if "_" not in text:
        return _Terms(words, vocab, sets, _SEEDED_IDS)
    no_term = _SEEDED_IDS.union([vocab[w] for w in _underscored(text)])
    return _Terms(words, vocab, sets, no_term)


#: 0, 1, 2, ...: ints made once at import (about 260 KB), handed out again by `_numbers`
_NUMBERS = tuple(range(1 << 15))


def _numbers(start: int, size: int) -> Iterator[int]:
    """The integers from `start` on, `size` of them at least, as `itertools.count(start)`
    gives them, but ints that exist already (`_NUMBERS`) when they fit there."""
    if start + size > len(_NUMBERS):
        return count(start)
    return islice(_NUMBERS, start, None)


def _underscored(text: str) -> set[str]:
    """The space-separated words of `text` that hold a `_`, found from each `_` (a scan of the
    vocabulary for them cost a sixth of the ranking on pages with a few `_`)."""
    out: set[str] = set()
    at = text.find("_")
    while at >= 0:
        end = text.find(" ", at)
        end = len(text) if end < 0 else end
        out.add(text[text.rfind(" ", 0, at) + 1 : end])
        at = text.find("_", end)
    return out


class TermMatrix:
    """The words of a list of documents, tokenised once: which documents say anything beyond
    another one, and TF-IDF cosines among any subset of them."""

    def __init__(self, docs: list[str]) -> None:
        self.n_docs = len(docs)
        self.words, self.vocab, self.sets, self.no_term = _term_ids(docs)

    def novel(self, ref: int) -> list[bool]:
        """Per document, whether it holds a term document `ref` lacks."""
        known = self.no_term.union(self.sets[ref])
        return list(map(not_, map(known.issuperset, self.sets)))

    def cosine(self, docs: Sequence[int], ref: int) -> list[float]:
        """The TF-IDF cosine of each document of `docs` (indices, `ref` not among them) with
        document `ref`, the IDF counted over `docs` and `ref` alone (as if only they had been
        given): one float per document of `docs`, 0.0 for one sharing no term with `ref`.

        Only the documents sharing a term with `ref` get a vector (a Python step each: on a
        page about a third of its passages, fewer steps than flat passes over all of them)."""
        scores = [0.0] * len(docs)
        asked = self.sets[ref].difference(self.no_term)
        subset = list(map(self.sets.__getitem__, docs))
        sharing = list(compress(range(len(docs)), map(not_, map(asked.isdisjoint, subset))))
        if not sharing:
            return scores
        df: dict[int, int] = {}
        _count(df, chain.from_iterable(subset))
        _count(df, self.sets[ref])
        vector = _Weights(self, df, _Cached(partial(_idf, 2.0 + len(docs)))).of
        terms, query, norm = vector(ref)
        unit = dict(zip(terms, map(truediv, query, repeat(norm)), strict=True))
        for j in sharing:
            terms, weights, norm = vector(docs[j])
            pairs = zip(terms, weights, strict=True)
            scores[j] = reduce(add, [w / norm * unit[t] for t, w in pairs if t in asked], 0.0)
        return scores


class _Weights:
    """A document's TF-IDF vector in a `TermMatrix`: its terms (distinct ids less `no_term`,
    in id order, as numpy's `unique` had them), their weights tf * idf (tf = 1 + ln(count),
    counted only in a document that repeats a word) and the vector's L2 norm, its squares
    added one at a time in term order (numpy's `bincount`, not `sum()`, which compensates from
    Python 3.12 on). The lookups are bound once per ranking, not once per document."""

    def __init__(self, matrix: TermMatrix, df: dict[int, int], idf: _Cached) -> None:
        self.words, self.sets, self.no_term = matrix.words, matrix.sets, matrix.no_term
        self.id_of, self.df, self.idf = matrix.vocab.__getitem__, df.__getitem__, idf.__getitem__

    def of(self, doc: int) -> tuple[list[int], list[float], float]:
        """Document `doc`'s terms, weights and norm."""
        distinct = self.sets[doc]
        terms = sorted(distinct.difference(self.no_term))
        words = self.words[doc]
        if len(words) == len(distinct):
            weights = list(map(self.idf, map(self.df, terms)))
        else:  # a word said twice (maybe a stop word: tf 1.0 then)
            counts: dict[int, int] = {}
            _count(counts, map(self.id_of, words))
            tf = map(_TF.__getitem__, map(counts.__getitem__, terms))
            weights = list(map(mul, tf, map(self.idf, map(self.df, terms))))
        return terms, weights, math.sqrt(reduce(add, map(mul, weights, weights), 0.0))


# `Counter`'s C counting loop, without its Python-level constructor (2 µs a call, paid per
# document that repeats a term)
_count: Callable[[dict[int, int], Iterable[int]], None] = collections._count_elements  # type: ignore[attr-defined]


def _idf(top: float, df: int) -> float:
    """ln((1 + n) / (1 + df)) + 1, with `top` = 1 + n."""
    return math.log(top / (1.0 + df)) + 1.0


class _Cached(dict[int, float]):
    """A function of an integer, each value computed once when first asked for."""

    def __init__(self, fn: Callable[[int], float]) -> None:
        super().__init__()
        self.fn = fn

    def __missing__(self, key: int) -> float:
        self[key] = got = self.fn(key)
        return got


_TF = _Cached(lambda c: 1.0 + math.log(c))  # 1 + ln(count)


def tfidf_scores(texts: list[str], query: str) -> list[float]:
    """The TF-IDF cosine of each of `texts` with `query` (zeros when no text or the query has
    no term), one float per text."""
    return TermMatrix([*texts, query]).cosine(range(len(texts)), len(texts))
