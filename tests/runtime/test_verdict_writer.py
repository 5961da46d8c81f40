"""Issue 38: one bus writer. Only `runtime/_bus.py` writes `verdict` events; every host (team,
game, framework guard) drives a `Bus` rather than applying verdicts itself."""

from __future__ import annotations

import ast
from pathlib import Path

import overseer

SRC = Path(overseer.__file__).parent
WRITERS = {"event", "record"}


def _verdict_writers() -> list[str]:
    """`<x>.event("verdict", ...)` / `<x>.record("verdict", ...)` calls, as file:line."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            first = node.args[0] if node.args else None
            if (
                node.func.attr in WRITERS
                and isinstance(first, ast.Constant)
                and first.value == "verdict"
            ):
                found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    return found


def test_only_the_bus_writes_verdict_events() -> None:
    writers = _verdict_writers()
    assert writers and all(w.startswith("runtime/_bus.py:") for w in writers), writers


def test_every_host_builds_a_bus() -> None:
    hosts = ["runtime/_executor.py", "runtime/_game.py", "integrations/_guard_run.py"]
    for rel in hosts:
        text = (SRC / rel).read_text(encoding="utf-8")
        assert "Bus(" in text or ".bus" in text, rel
