"""TF-IDF relevance of passages to a query, in numpy: what purification ranks passages by.

It computes exactly what scikit-learn's `TfidfVectorizer(sublinear_tf=True, stop_words=
"english", token_pattern=r"(?u)\\b[^\\W_]+\\b")` followed by a cosine with the query gave
(the scorer `extract` used until issue 50), without scikit-learn: its import stalled the first
purification of a process for about 2.4 s and its sparse-matrix machinery cost tens of
milliseconds per 8,000-character output, on the event loop of the proxy. Here one regex pass
per passage, one dictionary of term ids and a few `np.bincount` calls do it (well under a
millisecond for an 8,000-character output; `benchmarks/purify_speed.py` measures it).

The definition, for `n` documents (the passages, then the query):
tf(t, d) = 1 + ln(count of t in d); idf(t) = ln((1 + n) / (1 + df(t))) + 1; each document's
vector is L2-normalised; a passage's score is the dot product of its vector with the query's.
"""

from __future__ import annotations

import re
from itertools import count

import numpy as np

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
# are dropped are known without a look at each word (the other words' ids keep their order)
_SEEDED = {w: i for i, w in enumerate((SEP, *sorted(STOP_WORDS)))}


def _term_ids(docs: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Every term occurrence as (document index, term id), and a bound on the term ids: ids
    after `_SEEDED`'s in order of first occurrence, handed out in one C-level pass (a new word
    gets its position's number: `dict.setdefault` with a counter, not consecutive). Only the
    order of the ids matters downstream (`TermMatrix` sorts by it), so that the result never
    depends on hashing; a word holding `_` (no token: the pattern needs a word boundary at
    both ends) gets an id too, and never occurs."""
    text = lower_words(_joined(docs))
    words = text.split()
    vocab = dict(_SEEDED)
    ids = np.fromiter(map(vocab.setdefault, words, count(len(_SEEDED))), np.int64, len(words))
    doc = np.cumsum(ids == 0) - 1
    keep = ids >= len(_SEEDED)
    if "_" in text:  # the words that hold it
        names = np.zeros(len(_SEEDED) + len(words), dtype=bool)
        names[[vocab[w] for w in _underscored(text)]] = True
        keep &= ~names[ids]
    return doc[keep], ids[keep], len(_SEEDED) + len(words)


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
    """The term counts of a list of documents, computed once: which documents say anything
    beyond another one, and TF-IDF cosines among any subset of them."""

    def __init__(self, docs: list[str]) -> None:
        self.n_docs = len(docs)
        doc, term, self.n_terms = _term_ids(docs)
        key, self.count = np.unique(doc * max(self.n_terms, 1) + term, return_counts=True)
        self.doc, self.term = np.divmod(key, max(self.n_terms, 1))

    def novel(self, ref: int) -> np.ndarray:
        """Per document, how many of its distinct terms document `ref` lacks."""
        in_ref = np.zeros(self.n_terms, dtype=bool)
        in_ref[self.term[self.doc == ref]] = True
        return np.bincount(self.doc, weights=~in_ref[self.term], minlength=self.n_docs)

    def cosine(self, docs: np.ndarray, ref: int) -> np.ndarray:
        """The TF-IDF cosine of each document of `docs` (indices, `ref` not among them) with
        document `ref`, the IDF counted over `docs` and `ref` alone (as if only they had been
        given): one float64 per document of `docs`."""
        n = len(docs) + 1
        slot = np.full(self.n_docs, -1, dtype=np.int64)
        slot[docs] = np.arange(len(docs))
        slot[ref] = n - 1
        keep = slot[self.doc] >= 0
        doc, term, count = slot[self.doc[keep]], self.term[keep], self.count[keep]
        if len(term) == 0:
            return np.zeros(len(docs))
        df = np.bincount(term, minlength=self.n_terms)
        idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
        weight = (1.0 + np.log(count)) * idf[term]
        weight /= np.sqrt(np.bincount(doc, weights=weight * weight, minlength=n))[doc]
        ref_weight = np.zeros(self.n_terms)
        last = doc == n - 1
        ref_weight[term[last]] = weight[last]
        scores = np.bincount(doc, weights=weight * ref_weight[term], minlength=n)
        return np.asarray(scores[:-1])


def tfidf_scores(texts: list[str], query: str) -> np.ndarray:
    """The TF-IDF cosine of each of `texts` with `query` (zeros when no text or the query has
    no term), one float64 per text."""
    return TermMatrix([*texts, query]).cosine(np.arange(len(texts)), len(texts))
