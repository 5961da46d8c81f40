"""Purification's parts, public for the scripts that time or judge them
(`benchmarks/purify_speed.py`, `benchmarks/retention.py`): an HTML page read as its text
(`strip_markup`), the extract of an over-long observation, the passages it is cut into, the
TF-IDF scores that rank them, and the type of an embedder that ranks them instead (`Embed`,
what the hosts' `embed=` takes)."""

from overseer.supervise._extract import Embed, extract, passages
from overseer.supervise._markup import strip_markup
from overseer.supervise._rank import tfidf_scores

__all__ = ["Embed", "extract", "passages", "strip_markup", "tfidf_scores"]
