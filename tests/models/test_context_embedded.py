"""llama.cpp in process says when a prompt does not fit its window: a ContextWindowError."""

from __future__ import annotations

import pytest

from overseer.models import LlamaCppModel
from overseer.models._types import ContextWindowError

pytestmark = pytest.mark.e2e


def test_prompt_over_the_window_is_a_context_window_error(embedded_model: LlamaCppModel) -> None:
    with pytest.raises(ContextWindowError, match=r"context window \(n_ctx 4096\)"):
        embedded_model.complete([{"role": "user", "content": "word " * 6000}], max_tokens=4)
