"""Fixtures of the e2e tests on the benchmark model."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from overseer.models import LlamaCppModel, load_model


@pytest.fixture(scope="module")
def qwen() -> Iterator[LlamaCppModel]:
    """qwen2.5-coder-0.5b in process, its OpenAI-compatible server on 127.0.0.1 (a free
    port); loading it raises, naming the install command, when it is absent."""
    model = load_model("qwen2.5-coder-0.5b", n_ctx=8192)
    assert isinstance(model, LlamaCppModel)
    yield model
    model.close()
