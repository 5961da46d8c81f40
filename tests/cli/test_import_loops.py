"""Issue 38, item 4: the loop `tasks/_loaders.py -> travel -> _split.py` is untied. `travel`
splits its tasks with the leaf `tasks/_splitting.py`; neither imports a loader, at module
level or inside a function (checked on the source, so a lazy import counts too)."""

from __future__ import annotations

import ast
from pathlib import Path

TASKS = Path(__file__).resolve().parents[2] / "src" / "overseer" / "tasks"
REGISTRY = {"overseer.tasks", "overseer.tasks._split", "overseer.tasks._loaders"}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_travel_and_the_split_leaf_import_no_loader() -> None:
    files = [*sorted((TASKS / "travel").glob("*.py")), TASKS / "_splitting.py"]
    for f in files:
        assert not _imports(f) & REGISTRY, f


def test_split_uses_the_leaf() -> None:
    assert "overseer.tasks._splitting" in _imports(TASKS / "_split.py")
