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
from functools import cache
from itertools import chain, filterfalse

import numpy as np

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


_SEP = "\x01"  # between documents: kept by `_words_only`, in no document's text
_TABLE_SIZE = 0x10000


@cache
def _word_table() -> np.ndarray:
    """For each code point of the Basic Multilingual Plane, whether `\\w` matches it (built once,
    about 10 ms; `warm()` builds it at start)."""
    return np.fromiter(
        (chr(c).isalnum() or c == 0x5F for c in range(_TABLE_SIZE)), dtype=bool, count=_TABLE_SIZE
    )


def warm() -> None:
    """Build the lookup table now, so that the first purification of a process does not."""
    _word_table()


def _words_only(text: str) -> str:
    """`text` with every character that is not a word character (nor `_SEP`) made a space, in
    one vectorised pass (a regex scan costs about ten times more). Characters beyond the
    Basic Multilingual Plane are kept and left to `_fix`."""
    cp = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    keep = _word_table()[np.minimum(cp, _TABLE_SIZE - 1)]
    keep |= (cp >= _TABLE_SIZE) | (cp == ord(_SEP))
    return np.where(keep, cp, np.uint32(32)).astype(np.uint32).tobytes().decode("utf-32-le")


def _fix(words: list[str]) -> list[str]:
    """The tokens of runs that are not plain words, read with the pattern itself: a run
    holding `_` is no token (the pattern needs a word boundary at both ends), and one holding
    a character beyond the Basic Multilingual Plane may hold several."""
    out: list[str] = []
    for w in words:
        if w.isalnum():
            out.append(w)
        else:
            out.extend(TOKEN.findall(w))
    return out


def terms(text: str) -> list[str]:
    """The indexed terms of `text`: lower-cased words, stop words dropped."""
    return _doc_terms([text])[0]


def _doc_terms(docs: list[str]) -> list[list[str]]:
    """The indexed terms of each document (one vectorised pass over all of them)."""
    parts = _words_only(_SEP.join(docs).lower()).split(_SEP)
    if len(parts) != len(docs):  # a document holds the separator itself
        return [_doc_terms([d.replace(_SEP, " ")])[0] for d in docs]
    out = []
    for part in parts:
        words = part.split()
        if not "".join(words).isalnum():
            words = _fix(words)
        out.append(list(filterfalse(STOP_WORDS.__contains__, words)))
    return out


def _term_ids(docs: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Every term occurrence as (document index, term id), and the number of distinct terms;
    ids in order of first occurrence, so that the result never depends on hashing."""
    per_doc = _doc_terms(docs)
    flat = list(chain.from_iterable(per_doc))
    vocab = {w: i for i, w in enumerate(dict.fromkeys(flat))}
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    doc = np.repeat(np.arange(len(docs), dtype=np.int64), [len(d) for d in per_doc])
    return doc, ids, len(vocab)


def tfidf_scores(texts: list[str], query: str) -> np.ndarray:
    """The TF-IDF cosine of each of `texts` with `query` (zeros when no text or the query has
    no term), one float64 per text."""
    n = len(texts) + 1
    doc, term, n_terms = _term_ids([*texts, query])
    if n_terms == 0:
        return np.zeros(len(texts))
    pair = np.unique(doc * n_terms + term, return_counts=True)  # (document, term) counts
    pair_doc, pair_term = np.divmod(pair[0], n_terms)
    df = np.bincount(pair_term, minlength=n_terms)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    weight = (1.0 + np.log(pair[1])) * idf[pair_term]
    norm = np.sqrt(np.bincount(pair_doc, weights=weight * weight, minlength=n))
    weight /= norm[pair_doc]
    query_weight = np.zeros(n_terms)
    in_query = pair_doc == n - 1
    query_weight[pair_term[in_query]] = weight[in_query]
    scores = np.bincount(pair_doc, weights=weight * query_weight[pair_term], minlength=n)
    return np.asarray(scores[:-1])
