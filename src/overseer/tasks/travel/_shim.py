"""Import the AgentDojo travel suite from inspect-evals without inspect-ai.

The shim itself (inspect-ai stand-ins, the per-context store, the package check) is
`overseer.tasks.agentdojo._shim`, shared with the four-suite package so that both use one
store; this module keeps the travel names.
"""

from __future__ import annotations

from typing import Any

from overseer.tasks.agentdojo._shim import (
    CURRENT,
    PACKAGE,
    VERSION,
    Store,
    ToolCall,
    load_suite,
    store,
)
from overseer.tasks.agentdojo._shim import DojoDataError as TravelDataError


def load_travel_suite() -> Any:
    """The AgentDojo travel TaskSuite object (20 user tasks, 28 tools)."""
    return load_suite("travel")


__all__ = [
    "CURRENT",
    "PACKAGE",
    "VERSION",
    "Store",
    "ToolCall",
    "TravelDataError",
    "load_travel_suite",
    "store",
]
