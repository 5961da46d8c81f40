"""Shared fixtures: the real embedded model, loaded once per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from overseer.models import LlamaCppModel, load_model


@pytest.fixture(scope="session")
def embedded_model() -> Iterator[LlamaCppModel]:
    """SmolLM2-135M in process (also listening on loopback: `.base_url`)."""
    model = load_model("smollm2-135m", n_ctx=4096, n_threads=2)
    assert isinstance(model, LlamaCppModel)
    yield model
    model.close()
