"""The embedded model under cancellation (issue 28): a cancelled call stops generating at the next
token instead of running to max_tokens, and the model's own tokenizer counts text."""

from __future__ import annotations

import asyncio
import time

from overseer.models import LlamaCppModel

LONG = [{"role": "user", "content": "Write a very long story about a cat, in many chapters."}]


def test_a_cancelled_call_stops_generating(embedded_model: LlamaCppModel) -> None:
    async def go() -> None:
        task = asyncio.create_task(embedded_model.acomplete(LONG, max_tokens=3000))
        while not embedded_model._live:  # the call is in llama.cpp
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        task.cancel()
        cancelled = time.monotonic()
        # Its worker thread leaves at the next token; run to the end, 3000 tokens take
        # minutes on this model, so a bound of 60 s tells the two apart.
        while embedded_model._live:
            await asyncio.sleep(0.01)
            assert time.monotonic() - cancelled < 60, "generation did not stop"

    asyncio.run(go())
    after = embedded_model.complete([{"role": "user", "content": "Hi"}], max_tokens=4)
    assert after.usage.completion_tokens >= 1  # the model is fine afterwards


def test_own_tokenizer_counts_text(embedded_model: LlamaCppModel) -> None:
    c = embedded_model.complete([{"role": "user", "content": "Say hello."}], max_tokens=8)
    assert not c.usage.estimated and c.usage.prompt_tokens > 0  # llama.cpp reports usage
    assert embedded_model.count_tokens("Hello world, how are you?") == 7
