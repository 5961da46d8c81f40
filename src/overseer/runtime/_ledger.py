"""The ledger books every model call of a run by actor; budgets are checked before each call."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from overseer.models import Completion, Model, Request, Usage

if TYPE_CHECKING:
    from overseer.runtime._trace import Trace

ActorKind = Literal[
    "agent", "decision", "supervisor", "monitor", "watcher", "trainer", "verifier", "planner"
]
StopReason = Literal["tokens", "steps", "time"]


class LedgerEntry(NamedTuple):
    """One booked model call (a named tuple: immutable, and made in a fraction of a frozen
    dataclass's time, once per model call)."""

    run: str
    actor: str
    kind: ActorKind
    model: str
    usage: Usage
    latency_s: float

    @property
    def estimated(self) -> bool:
        """The backend reported no usage: these tokens are an estimate (`Usage.estimated`)."""
        return self.usage.estimated


class BudgetExceeded(RuntimeError):
    """A run hit one of its budgets; `reason` says which (tokens, steps or time)."""

    def __init__(self, reason: StopReason, detail: str) -> None:
        super().__init__(f"budget exceeded ({reason}): {detail}")
        self.reason: StopReason = reason


@dataclass(frozen=True)
class Budget:
    """Per-run limits, checked before every model call. None means unlimited; a set limit
    must be > 0 (ValueError naming it otherwise)."""

    max_tokens: int | None = None
    max_calls: int | None = None
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_tokens", "max_calls", "max_seconds"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"budget {name}: expected > 0, got {value}")


class Ledger:
    """Every model call of a run, with who made it; net tokens include the overseers' own."""

    def __init__(self, run: str, budget: Budget | None = None) -> None:
        self.run = run
        self.budget = budget or Budget()
        self.entries: list[LedgerEntry] = []
        self.started = time.monotonic()
        self.reserved = 0  # completion tokens promised to calls under way
        # the running total, kept as calls are booked (a check never re-adds the entries):
        # prompt, completion and cached tokens, and whether any count is an estimate
        self._sums = [0, 0, 0]
        self._estimated = False
        #: the same per `kind:actor` key, with the calls: prompt, completion, cached, estimated
        #: (0/1), calls (the result's books without a pass over the entries)
        self._by_key: dict[str, list[int]] = {}

    def check(self) -> None:
        """Raise BudgetExceeded if another call would break a budget."""
        b = self.budget
        if b.max_calls is not None and len(self.entries) >= b.max_calls:
            raise BudgetExceeded("steps", f"{len(self.entries)} model calls of {b.max_calls}")
        if b.max_tokens is not None and self._spent() >= b.max_tokens:
            raise BudgetExceeded("tokens", f"{self._spent()} tokens of {b.max_tokens}")
        if b.max_seconds is not None:
            elapsed = time.monotonic() - self.started
            if elapsed >= b.max_seconds:
                raise BudgetExceeded("time", f"{elapsed:.1f} s of {b.max_seconds}")

    def _spent(self) -> int:
        """Prompt and completion tokens booked so far."""
        return self._sums[0] + self._sums[1]

    def time_left(self) -> float | None:
        """Seconds left of the time budget (None: no time budget); a call in progress is
        cancelled when they run out."""
        if self.budget.max_seconds is None:
            return None
        return self.budget.max_seconds - (time.monotonic() - self.started)

    def reserve(self, wanted: int) -> int:
        """Check the budgets and promise a call at most `wanted` completion tokens, fewer when
        the token budget has less left (calls under way count as spent), so the run never
        overshoots by more than one call's prompt; `release` the promise when it ends."""
        b = self.budget
        if b.max_tokens is None and b.max_calls is None and b.max_seconds is None:
            return wanted  # no budget: nothing to check or promise
        self.check()
        if b.max_tokens is None:
            return wanted
        left = b.max_tokens - self._spent() - self.reserved
        if left < 1:
            raise BudgetExceeded("tokens", f"{b.max_tokens - left} tokens of {b.max_tokens}")
        cap = min(wanted, left)
        self.reserved += cap
        return cap

    def release(self, promised: int) -> None:
        """End a `reserve` promise (its call was booked, or failed)."""
        if self.budget.max_tokens is not None:
            self.reserved -= promised

    def book(self, actor: str, kind: ActorKind, model: str, usage: Usage, latency: float) -> None:
        self.entries.append(LedgerEntry(self.run, actor, kind, model, usage, latency))
        sums = self._sums
        sums[0] += usage.prompt_tokens
        sums[1] += usage.completion_tokens
        sums[2] += usage.cached_prompt_tokens
        self._estimated = self._estimated or usage.estimated
        key = f"{kind}:{actor}"
        row = self._by_key.get(key)
        if row is None:
            row = self._by_key[key] = [0, 0, 0, 0, 0]
        row[0] += usage.prompt_tokens
        row[1] += usage.completion_tokens
        row[2] += usage.cached_prompt_tokens
        row[3] |= usage.estimated
        row[4] += 1

    @property
    def total(self) -> Usage:
        prompt, completion, cached = self._sums
        return Usage(prompt, completion, cached, self._estimated)

    def by_actor(self) -> dict[str, Usage]:
        """Usage per `kind:actor` key (the key the result store keeps)."""
        return {
            k: Usage(p, c, cached, bool(est)) for k, (p, c, cached, est, _) in self._by_key.items()
        }

    def by_kind(self) -> dict[str, Usage]:
        out: dict[str, Usage] = defaultdict(Usage)
        for e in self.entries:
            out[e.kind] += e.usage
        return dict(out)

    def calls_by_actor(self) -> dict[str, int]:
        return {k: row[4] for k, row in self._by_key.items()}


def budgeted(model: Model, budget: Budget | None, scope: str) -> Model:
    """`model` under a ledger of its own: every call through it is checked and capped against
    `budget` (say, one bench task's, whatever solver runs it); None: `model` itself."""
    if budget is None:
        return model
    return MeteredModel(model, Ledger(scope, budget), scope, "agent", None)


class MeteredModel(Model):
    """A model as one actor sees it: every call is budget-checked, capped to the tokens left,
    booked and traced."""

    def __init__(
        self, inner: Model, ledger: Ledger, actor: str, kind: ActorKind, trace: Trace | None
    ) -> None:
        self.inner = inner
        self.ledger = ledger
        self.actor = actor
        self.kind = kind
        self.trace = trace
        self.name = inner.name

    async def acomplete(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> Completion:
        """`Model.acomplete`, with the request naming this actor from the start (unless the
        caller names one), so `_capped` need not copy it."""
        if not options.get("actor"):
            options["actor"] = self.actor
        return await self._acomplete(Request.of_options(messages, options))

    def _booked(self, c: Completion, request: Request) -> Completion:
        self.ledger.book(self.actor, self.kind, self.inner.name, c.usage, c.latency_s)
        if self.trace is not None:
            self.trace.model_call(
                self.actor, self.kind, self.inner.name, request.messages, c, flush=False
            )
        return c

    def _capped(self, request: Request) -> Request:
        """The request capped to the tokens left, and naming this actor (unless it names one)."""
        cap = self.ledger.reserve(request.max_tokens)
        actor = request.actor or self.actor
        if cap == request.max_tokens and actor == request.actor:
            return request
        # `request` was checked when built; a smaller cap (>= 1) and a name keep it valid,
        # so its copy skips `__post_init__` (which would re-check every message)
        out = object.__new__(Request)
        out.__dict__.update(request.__dict__, max_tokens=cap, actor=actor)
        return out

    def _complete(self, request: Request) -> Completion:
        capped = self._capped(request)
        if self.trace is not None:
            self.trace.flush()  # what happened so far is on disk before the model runs
        try:
            c = self.inner._complete(capped)
        finally:
            self.ledger.release(capped.max_tokens)
        return self._booked(c, capped)

    async def _acomplete(self, request: Request) -> Completion:
        capped = self._capped(request)
        left = self.ledger.time_left()
        if self.trace is not None:
            self.trace.flush()  # what happened so far is on disk before the model runs
        if left is None:  # no time budget: no deadline to arm
            try:
                c = await self.inner._acomplete(capped)
            finally:
                self.ledger.release(capped.max_tokens)
            return self._booked(c, capped)
        try:
            async with asyncio.timeout(left) as deadline:  # a time budget bounds the call too
                c = await self.inner._acomplete(capped)
        except TimeoutError:
            if not deadline.expired():
                raise
            b = self.ledger.budget.max_seconds
            raise BudgetExceeded("time", f"a model call was cut at the {b} s budget") from None
        finally:
            self.ledger.release(capped.max_tokens)
        return self._booked(c, capped)
