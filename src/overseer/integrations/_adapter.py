"""What the OpenAI Agents SDK and pydantic-ai adapters share on top of the guard: making or
sharing one, a run as a guard run, the masked texts of a model input, the missing-extra error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypedDict, TypeVar

from overseer.integrations._guard import (
    AmbiguousRunError,
    BudgetExceeded,
    Guard,
    GuardRun,
    GuardSettings,
    RunStopped,
    ToolRecord,
    args_text,
    model_label,
    run_sync,
)
from overseer.integrations._parts import closed_turn
from overseer.models import Model

__all__ = [
    "AmbiguousRunError",
    "BudgetExceeded",
    "Guard",
    "GuardOptions",
    "GuardRun",
    "GuardSettings",
    "RunStopped",
    "ToolRecord",
    "args_text",
    "closed_turn",
    "guarded_run",
    "make_guard",
    "masked_texts",
    "missing_extra",
    "model_label",
    "run_sync",
    "stop_reason_of",
]

T = TypeVar("T")


class GuardOptions(TypedDict, total=False):
    """How an adapter gets its guard: `guard` to share one with other adapters (one ledger, one
    budget), or `supervisor_model` (the LLM tier) and `trace_dir` (a JSONL trace) for its own."""

    guard: Guard | None
    supervisor_model: Model | None
    trace_dir: str | Path | None


def missing_extra(module: str, what: str, extra: str) -> ImportError:
    """The error an adapter raises when its framework is not installed."""
    return ImportError(
        f"overseer.integrations.{module} needs {what}: pip install 'overseer-agents[{extra}]'"
    )


def make_guard(
    owner: str, settings: GuardSettings | None, options: GuardOptions, run_name: str = ""
) -> Guard:
    """The shared `guard` of the options, or a new one from the settings and options."""
    guard = options.get("guard")
    model, trace_dir = options.get("supervisor_model"), options.get("trace_dir")
    if guard is not None and (settings or model or trace_dir):
        raise ValueError(f"{owner}: give either guard or its settings, not both")
    if guard is not None:
        return guard
    return Guard(settings, supervisor_model=model, trace_dir=trace_dir, run_name=run_name)


async def guarded_run(
    guard: Guard,
    task: str,
    run: Callable[[], Awaitable[T]],
    answer: Callable[[T], str],
    model: str = "",
) -> T:
    """Run a framework's whole run as one guard run, current in the caller's task (its hooks
    find it there): its trace ends with the answer, or with stop reason `budget` /
    `refusals` / the exception's own (`stop_reason_of`) when the run raised (raised on)."""
    r = guard.start_run(task, model=model)
    try:
        result = await run()
    except BaseException as exc:
        why = getattr(exc, "stop_reason", None) or stop_reason_of(exc)
        guard.end_run(stop_reason=why, error=f"{type(exc).__name__}: {exc}", run=r)
        raise
    guard.end_run(answer(result), run=r)
    return result


#: exception class names of the frameworks -> the stop reason of the run they ended
_STOPS = {
    "BudgetExceeded": "budget",
    "GraphRecursionError": "recursion_limit",
    "MaxTurnsExceeded": "max_turns",
    "UsageLimitExceeded": "usage_limit",
    "CancelledError": "cancelled",
    "KeyboardInterrupt": "interrupted",
}


def stop_reason_of(exc: BaseException) -> str:
    """The stop reason a framework's exception gives the run it ended (`error` by default)."""
    return next((v for k, v in _STOPS.items() if type(exc).__name__ == k), "error")


def masked_texts(run: GuardRun, agent: str, records: Sequence[ToolRecord]) -> dict[int, str]:
    """Index in `records` -> the stub the model reads instead, for the records masking hid."""
    shown = run.model_input(agent, records)
    return {k: s for k, (rec, s) in enumerate(zip(records, shown, strict=True)) if s != rec.text}
