"""Import AgentDojo's suites from inspect-evals without inspect-ai.

The suites' tools only need `inspect_ai.tool.tool/Tool/ToolCall` and `inspect_ai.util.store`;
this shim provides those (a per-context store holding the environment's parts) and loads the
`inspect_evals.agentdojo` subpackages without running its `__init__` (which imports the whole
inspect-ai evaluation stack). Installed only when inspect-ai itself is absent. The travel
benchmark (`overseer.tasks.travel`) and the four-suite package (`overseer.tasks.agentdojo`)
share this one shim, so there is one store and one context variable for both.
"""

from __future__ import annotations

import contextvars
import importlib
import importlib.util
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from overseer.errors import install_hint
from overseer.tasks import _coro

PACKAGE = "inspect-evals"
VERSION = "0.26.0"
#: suite name -> (module under `inspect_evals.agentdojo.task_suites`, suite object's name)
SUITE_OBJECTS = {
    "workspace": ("workspace.task_suite", "WORKSPACE_TASK_SUITE"),
    "travel": ("travel.task_suite", "TRAVEL_TASK_SUITE"),
    "banking": ("banking.task_suite", "BANKING_TASK_SUITE"),
    "slack": ("slack.task_suite", "SLACK_TASK_SUITE"),
}


class DojoDataError(RuntimeError):
    """An AgentDojo suite cannot be loaded; the message says what to install or what differs."""


@dataclass
class ToolCall:
    """What inspect-ai's ToolCall holds, as far as the AgentDojo tasks use it."""

    id: str
    function: str
    arguments: dict[str, Any] = field(default_factory=dict)
    type: str = "function"


class Store:
    """A dict with get/set/keys, like inspect-ai's per-sample store."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self._data = dict(data or {})

    def get(self, key: str, default: Any = None) -> Any:
        """The value under `key`, or `default`."""
        return self._data.get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Put `value` under `key`."""
        self._data[key] = value

    def keys(self) -> list[str]:
        """The keys held."""
        return list(self._data)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._data))


CURRENT: contextvars.ContextVar[Store] = contextvars.ContextVar("overseer_agentdojo_store")


def store() -> Store:
    """The store of the environment whose tool is running (what `inspect_ai.util.store` is)."""
    try:
        return CURRENT.get()
    except LookupError:
        raise RuntimeError("AgentDojo tool called outside an environment session") from None


def drive(coro: Any) -> Any:
    """Run a coroutine that never suspends (the suites' tools and checks) without a loop."""
    return _coro.drive(coro, "an AgentDojo tool or check")


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


def _package_dir(suite: str) -> Path:
    try:
        from importlib.metadata import PackageNotFoundError, version

        got = version(PACKAGE)
    except PackageNotFoundError:
        raise DojoDataError(
            f"the AgentDojo {suite} suite needs {PACKAGE}=={VERSION}: pip install --no-deps "
            f"{PACKAGE}=={VERSION} (plus {install_hint('bench')} for deepdiff and email-validator)"
        ) from None
    if got != VERSION:
        raise DojoDataError(f"AgentDojo {suite} suite: expected {PACKAGE}=={VERSION}, found {got}")
    spec = importlib.util.find_spec("inspect_evals")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "agentdojo"


def load_suite(name: str) -> Any:
    """The AgentDojo TaskSuite object `name` (workspace, travel, banking or slack)."""
    if name not in SUITE_OBJECTS:
        raise DojoDataError(
            f"AgentDojo suite: expected one of {', '.join(SUITE_OBJECTS)}, got {name!r}"
        )
    _install_inspect_ai()
    if "inspect_evals.agentdojo" not in sys.modules:
        base = _package_dir(name)
        pkg = types.ModuleType("inspect_evals.agentdojo")
        pkg.__path__ = [str(base)]
        sys.modules["inspect_evals.agentdojo"] = pkg
    for dep in ("deepdiff", "email_validator"):
        if importlib.util.find_spec(dep) is None:
            raise DojoDataError(f"the AgentDojo {name} suite needs {dep}: {install_hint('bench')}")
    module, attr = SUITE_OBJECTS[name]
    mod = importlib.import_module(f"inspect_evals.agentdojo.task_suites.{module}")
    return getattr(mod, attr)
