"""Purification's parts, public for the scripts that time or judge them
(`benchmarks/purify_speed.py`, `benchmarks/retention.py`): an HTML page read as its text
(`strip_markup`), the extract of an over-long observation, the passages it is cut into, and
the TF-IDF scores that rank them."""

from overseer.supervise._extract import extract, passages
from overseer.supervise._markup import strip_markup
from overseer.supervise._rank import tfidf_scores

__all__ = ["extract", "passages", "strip_markup", "tfidf_scores"]
