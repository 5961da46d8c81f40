"""Token counts with a real tokenizer: a local GGUF model's own, through llama.cpp.

The in-process llama.cpp server of `LlamaCppModel` answers llama.cpp's `/tokenize` route on its
loopback port; that is the tokenizer the model itself uses (no vocabulary file is fetched).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Protocol

from overseer.models import LlamaCppModel, Model, ModelError, load_model


class TokenCounter(Protocol):
    """Anything that counts the tokens of a text."""

    name: str

    def count(self, text: str) -> int: ...


class ModelTokenizer:
    """Counts tokens with a local model's tokenizer (cached per text).

    `model` is a loaded `LlamaCppModel`; `ModelTokenizer.load(name)` loads one with a small
    window just for counting.
    """

    def __init__(self, model: LlamaCppModel) -> None:
        self.model = model
        self.name = model.name
        self._url = model.base_url.removesuffix("/v1") + "/tokenize"
        self._cache: dict[str, int] = {}

    @classmethod
    def load(cls, name: str, *, n_threads: int = 1) -> ModelTokenizer:
        """A tokenizer from a local model card name (e.g. qwen2.5-coder-0.5b)."""
        model = load_model(name, n_ctx=256, n_threads=n_threads)
        if not isinstance(model, LlamaCppModel):
            raise ModelError(f"tokenizer {name}: expected a local GGUF model name")
        return cls(model)

    @classmethod
    def of(cls, model: Model) -> ModelTokenizer | None:
        """The tokenizer of `model` when it is a local llama.cpp model, else None."""
        return cls(model) if isinstance(model, LlamaCppModel) else None

    def count(self, text: str) -> int:
        """Tokens of `text` (no special tokens added)."""
        if not text:
            return 0
        hit = self._cache.get(text)
        if hit is not None:
            return hit
        body = json.dumps({"content": text, "add_special": False}).encode()
        req = urllib.request.Request(
            self._url, data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                n = len(json.load(resp)["tokens"])
        except (urllib.error.URLError, KeyError, ValueError) as exc:
            raise ModelError(f"tokenizer {self.name}: /tokenize failed ({exc})") from None
        self._cache[text] = n
        return n

    def close(self) -> None:
        """Release the model loaded for counting."""
        self.model.close()
