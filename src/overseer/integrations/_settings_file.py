"""`GuardSettings` from a TOML or JSON file: the one settings object every adapter, the proxy
and the CLI take, written once (`overseer proxy --settings FILE`, `overseer run --settings
FILE`, `GuardSettings.from_file`). Plug-ins are objects, not settings: they are passed in code.

    [rules]              # RuleSettings; [rules] off = false: no rule tier
    loop_limit = 2
    [supervisor]         # SupervisorSettings of the LLM tier (used with a supervisor model)
    max_guidance = 1
    budget_tokens = 50000
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from overseer.supervise import SupervisorSettings
from overseer.supervise.rules import RuleSettings


def _known(where: str, data: dict[str, Any], cls: type) -> None:
    """One line naming the first key `cls` does not have."""
    names = {f.name for f in fields(cls)}
    for key in data:
        if key not in names:
            raise ValueError(f"{where}: unknown key {key!r}; expected some of {sorted(names)}")


def _typed(where: str, cls: type, data: object) -> Any:
    """`data` as a `cls` (a settings dataclass), or one line naming the field at fault."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a table of settings, got {type(data).__name__}")
    _known(where, data, cls)
    try:
        return TypeAdapter(cls).validate_python(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        at = ".".join(str(x) for x in e["loc"])
        raise ValueError(f"{where}{'.' + at if at else ''}: {e['msg']}") from None


def read_settings(path: Path) -> dict[str, Any]:
    """The keyword arguments of `GuardSettings` that `path` (.toml or .json) sets."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"settings file {path}: cannot be read ({exc.__class__.__name__})"
        ) from None
    try:
        raw = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        kind = "JSON" if path.suffix == ".json" else "TOML"
        raise ValueError(f"settings file {path}: not valid {kind}: {exc}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"settings file {path}: expected a table of settings")
    out = dict(raw)
    rules = out.get("rules")
    if isinstance(rules, dict) and rules.get("off") is True:  # no rule tier at all
        out["rules"] = None
    elif "rules" in out:
        out["rules"] = _typed(f"settings file {path}: rules", RuleSettings, rules)
    if "supervisor" in out:
        what = f"settings file {path}: supervisor"
        out["supervisor"] = _typed(what, SupervisorSettings, out["supervisor"])
    return out
