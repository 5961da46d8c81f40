"""What the OpenAI Agents SDK and pydantic-ai adapters share on top of the guard: making or
sharing one, a run as a guard run, the masked texts of a model input, the missing-extra error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypedDict, TypeVar

from overseer.integrations._guard import (
    CLOSED_NOTE,
    BudgetExceeded,
    Guard,
    GuardSettings,
    RunStopped,
    ToolRecord,
    args_text,
    model_label,
    run_sync,
)
from overseer.models import Model

__all__ = [
    "CLOSED_NOTE",
    "BudgetExceeded",
    "Guard",
    "GuardOptions",
    "GuardSettings",
    "RunStopped",
    "ToolRecord",
    "args_text",
    "guarded_run",
    "make_guard",
    "masked_texts",
    "missing_extra",
    "model_label",
    "run_sync",
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
        f"overseer.integrations.{module} needs {what}: pip install 'overseer[{extra}]'"
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
    """Run a framework's whole run as one guard run: its trace ends with the answer, or with
    stop reason `budget` / `refusals` / `error` when the run raised (raised on)."""
    guard.start_run(task, model=model)
    try:
        result = await run()
    except BudgetExceeded as exc:
        guard.end_run(stop_reason="budget", error=str(exc))
        raise
    except RunStopped as exc:
        guard.end_run(stop_reason=exc.stop_reason, error=str(exc))
        raise
    except Exception as exc:
        guard.end_run(stop_reason="error", error=f"{type(exc).__name__}: {exc}")
        raise
    guard.end_run(answer(result))
    return result


def masked_texts(guard: Guard, agent: str, records: Sequence[ToolRecord]) -> dict[int, str]:
    """Index in `records` -> the stub the model reads instead, for the records masking hid."""
    shown = guard.model_input(agent, records)
    return {k: s for k, (rec, s) in enumerate(zip(records, shown, strict=True)) if s != rec.text}
