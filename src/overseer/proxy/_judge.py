"""Tool outputs judged off the event loop, once per output per run, at a bounded cost (issue 50).

The rule tier's judgement of a new tool output (purification: markup stripped, an extract
ranked; the loop breaker's bookkeeping) is CPU work that grows with the output: about 1.4 ms
for 8,000 characters, 14 ms for 100,000, 0.15 s for 1 MB on one core here. The proxy never
does it on its event loop: it runs in a thread (`Judges`), so other clients' requests go on
meanwhile (a request's new outputs in one hand-off), and a request whose new outputs come to
over `LARGE` characters goes to a pool of its own, so small outputs never queue behind a
large one. An output over the cap (`ProxySettings.max_output_chars`, 1,000,000 characters by
default) is cut to the cap before it is judged: what one request may cost is bounded. An
output is judged once per run, keyed by its agent, call id and content (`result_key`): the
requests that carry it again only read the verdict.

`warm` runs one purification at start (in the lifespan, before the first request is
served), so the first long output of a process pays no first-use cost.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from overseer.integrations.guard import Guard, GuardSettings
from overseer.supervise.rules import RuleSettings

T = TypeVar("T")

#: outputs longer than this (characters) are judged in the pool for large outputs
LARGE = 64_000
#: texts longer than this are hashed in a thread (hashlib releases the GIL while it hashes)
_HASH_INLINE = 64_000


def cut(output: str, cap: int) -> str:
    """`output` as it is judged: its first `cap` characters."""
    return output if len(output) <= cap else output[:cap]


def _digest(text: str) -> str:
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=12).hexdigest()


class Judges:
    """The threads that judge tool outputs (see the module docstring); `busy`: how many
    judgements (a request's new outputs each) run now (the health check reports it)."""

    def __init__(self, small: int = 4, large: int = 2) -> None:
        self.small = ThreadPoolExecutor(small, thread_name_prefix="overseer-judge")
        self.large = ThreadPoolExecutor(large, thread_name_prefix="overseer-judge-large")
        self.busy = 0
        self.warm = False

    async def call(self, size: int, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in the pool for outputs of `size` characters in all, awaited."""
        pool = self.large if size > LARGE else self.small
        self.busy += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, partial(fn, *args))
        finally:
            self.busy -= 1

    async def key(self, agent: str, call_id: str, output: str) -> str:
        """The key an output is judged once under: its agent, its call id and its content."""
        if len(output) > _HASH_INLINE:
            digest = await self.call(len(output), _digest, output)
        else:
            digest = _digest(output)
        return f"{agent}\x00{call_id}\x00{digest}"

    async def start(self, rules: RuleSettings | None) -> None:
        """Purify one long output in each pool now (see the module docstring)."""
        if rules is not None:
            for size in (8_000, LARGE + 1):
                await self.call(size, _warm, rules)
        self.warm = True

    def close(self) -> None:
        for pool in (self.small, self.large):
            pool.shutdown(wait=True, cancel_futures=True)


def _warm(rules: RuleSettings) -> None:
    """One purification of a long page-like output on a throwaway run with no trace."""
    guard = Guard(GuardSettings(rules=rules), trace_dir=None)
    run = guard.open("Which year was the bridge opened?")
    words = "The bridge over the river was opened in the spring after a long winter of work."
    page = "\n\n".join(f"<p>{words} Section {i}.</p>" for i in range(120))
    try:
        run.after_tool("warm", "fetch", {"url": "x"}, page)
    finally:
        guard.end_run(run=run)
