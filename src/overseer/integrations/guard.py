"""The framework-neutral guard, for hosts of overseer's own (the proxy) and for callers who
drive a framework by hand: one `Guard` per attachment, one `GuardRun` per invocation."""

from overseer.integrations._guard import (
    MAX_OUTPUT_CHARS,
    AmbiguousRunError,
    Guard,
    GuardRun,
    GuardSettings,
)
from overseer.integrations._parts import RunStopped
from overseer.runtime.books import BudgetExceeded
from overseer.supervise.rules import ToolRecord

__all__ = [
    "MAX_OUTPUT_CHARS",
    "AmbiguousRunError",
    "BudgetExceeded",
    "Guard",
    "GuardRun",
    "GuardSettings",
    "RunStopped",
    "ToolRecord",
]
