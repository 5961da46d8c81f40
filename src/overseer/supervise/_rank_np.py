"""`_rank.TermMatrix.cosine` in numpy, taken when numpy is installed (the `fast` extra, and
every extra that computes in numpy, bring it): the term counts sorted once per output, then a
few `bincount` passes per ranking instead of Python-level ones (issue 50's 1 ms an 8,000-
character output). Its floats are the pure-Python path's bit for bit: each sum adds a
document's terms one at a time in id order (`bincount`'s loop, as `_rank._Vectors` does), and
every logarithm is `math.log`'s (numpy's vectorised `log` may differ in the last bit), taken
once per distinct count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import chain

import numpy as np


class Counts:
    """Each (document, term) pair of a list of documents with its count, sorted by document
    then term id: what every cosine among them is computed from."""

    def __init__(self, ids: list[list[int]], no_term: frozenset[int]) -> None:
        lengths = [len(x) for x in ids]
        term = np.fromiter(chain.from_iterable(ids), np.int64, sum(lengths))
        doc = np.repeat(np.arange(len(ids), dtype=np.int64), lengths)
        self.n_docs, self.n_terms = len(ids), int(term.max()) + 1 if term.size else 1
        dropped = np.zeros(self.n_terms, dtype=bool)
        dropped[[i for i in no_term if i < self.n_terms]] = True
        keep = ~dropped[term]
        key, self.count = np.unique(doc[keep] * self.n_terms + term[keep], return_counts=True)
        self.doc, self.term = np.divmod(key, self.n_terms)

    def cosine(self, docs: Sequence[int], ref: int) -> list[float]:
        """`TermMatrix.cosine`: the TF-IDF cosine of each document of `docs` with document
        `ref`, the IDF over `docs` and `ref` alone."""
        n = len(docs) + 1
        slot = np.full(self.n_docs, -1, dtype=np.int64)
        slot[list(docs)] = np.arange(len(docs))
        slot[ref] = n - 1
        keep = slot[self.doc] >= 0
        doc, term, count = slot[self.doc[keep]], self.term[keep], self.count[keep]
        last = doc == n - 1
        if not last.any():  # the query has no term: nothing is relevant
            return [0.0] * len(docs)
        df = np.bincount(term, minlength=self.n_terms)
        idf = _logs([(1.0 + n) / (1.0 + k) for k in range(n + 1)], 1.0)[df]
        weight = _logs([float(c) for c in range(int(count.max()) + 1)], 1.0)[count]
        weight *= idf[term]
        weight /= np.sqrt(np.bincount(doc, weights=weight * weight, minlength=n))[doc]
        ref_weight = np.zeros(self.n_terms)
        ref_weight[term[last]] = weight[last]
        scores = np.bincount(doc, weights=weight * ref_weight[term], minlength=n)
        return [float(s) for s in scores[:-1]]


def _logs(values: list[float], plus: float) -> np.ndarray:
    """`math.log(v) + plus` for each value (0 for a value <= 0, never looked up)."""
    return np.array([math.log(v) + plus if v > 0 else 0.0 for v in values], dtype=np.float64)
