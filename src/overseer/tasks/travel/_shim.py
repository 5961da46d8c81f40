"""Import the AgentDojo travel suite from inspect-evals without inspect-ai.

The travel tools only need `inspect_ai.tool.tool/Tool/ToolCall` and `inspect_ai.util.store`;
this shim provides those (a per-context store holding the environment's parts) and loads the
`inspect_evals.agentdojo` subpackages without running its `__init__` (which imports the whole
inspect-ai evaluation stack). Installed only when inspect-ai itself is absent.
"""

from __future__ import annotations

import contextvars
import importlib.util
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from overseer.errors import install_hint

PACKAGE = "inspect-evals"
VERSION = "0.26.0"


class TravelDataError(RuntimeError):
    """The travel suite cannot be loaded; the message says what to install."""


@dataclass
class ToolCall:
    """What inspect-ai's ToolCall holds, as far as the travel tasks use it."""

    id: str
    function: str
    arguments: dict[str, Any] = field(default_factory=dict)
    type: str = "function"


class Store:
    """A dict with get/set/keys, like inspect-ai's per-sample store."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self._data = dict(data or {})

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self._data[key] = value

    def keys(self) -> list[str]:
        return list(self._data)


CURRENT: contextvars.ContextVar[Store] = contextvars.ContextVar("overseer_travel_store")


def store() -> Store:
    try:
        return CURRENT.get()
    except LookupError:
        raise RuntimeError("travel tool called outside an environment session") from None


def _install_inspect_ai() -> None:
    if "inspect_ai" in sys.modules or importlib.util.find_spec("inspect_ai") is not None:
        return
    root = types.ModuleType("inspect_ai")
    root.__path__ = []
    tool_mod = types.ModuleType("inspect_ai.tool")
    tool_mod.Tool = Any  # type: ignore[attr-defined]
    tool_mod.ToolCall = ToolCall  # type: ignore[attr-defined]
    tool_mod.tool = lambda fn: fn  # type: ignore[attr-defined]
    util_mod = types.ModuleType("inspect_ai.util")
    util_mod.store = store  # type: ignore[attr-defined]
    sys.modules.update(
        {"inspect_ai": root, "inspect_ai.tool": tool_mod, "inspect_ai.util": util_mod}
    )


def _package_dir() -> Path:
    try:
        from importlib.metadata import PackageNotFoundError, version

        got = version(PACKAGE)
    except PackageNotFoundError:
        raise TravelDataError(
            f"the travel suite needs {PACKAGE}=={VERSION}: pip install --no-deps "
            f"{PACKAGE}=={VERSION} (plus {install_hint('bench')} for deepdiff and email-validator)"
        ) from None
    if got != VERSION:
        raise TravelDataError(f"travel suite: expected {PACKAGE}=={VERSION}, found {got}")
    spec = importlib.util.find_spec("inspect_evals")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "agentdojo"


def load_travel_suite() -> Any:
    """The AgentDojo travel TaskSuite object (20 user tasks, 28 tools)."""
    _install_inspect_ai()
    if "inspect_evals.agentdojo" not in sys.modules:
        base = _package_dir()
        pkg = types.ModuleType("inspect_evals.agentdojo")
        pkg.__path__ = [str(base)]
        sys.modules["inspect_evals.agentdojo"] = pkg
    for dep in ("deepdiff", "email_validator"):
        if importlib.util.find_spec(dep) is None:
            raise TravelDataError(f"the travel suite needs {dep}: {install_hint('bench')}")
    from inspect_evals.agentdojo.task_suites.travel.task_suite import TRAVEL_TASK_SUITE

    return TRAVEL_TASK_SUITE
