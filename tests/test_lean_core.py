"""The product installs lean (issue 49, item 5): importing any of its packages loads no numpy,
scipy, scikit-learn or matplotlib, and none of its modules imports them at import time (a
plug-in or the lab may, behind their extras: `monitor`, `bench`, `train`)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "overseer"
#: the product: `pip install overseer-agents` without extras
CORE = ("runtime", "models", "sandbox", "supervise", "integrations", "proxy", "cli")
HEAVY = ("numpy", "scipy", "sklearn", "matplotlib")
#: modules that import an optional framework (their extra brings it; it may bring numpy)
FRAMEWORKS = ("langgraph", "openai_agents", "pydantic_ai", "smolagents", "otel", "_otel_spans")


def test_importing_every_product_module_loads_no_numpy() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        f"for name in {CORE!r}:\n"
        "    pkg = importlib.import_module('overseer.' + name)\n"
        "    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        last = info.name.rsplit('.', 1)[1]\n"
        f"        if last == '__main__' or last in {FRAMEWORKS!r} or 'smol' in last:\n"
        "            continue\n"
        "        if info.name in ('overseer.integrations._sdk_model', 'overseer.proxy._redis'):\n"
        "            continue\n"
        "        importlib.import_module(info.name)\n"
        f"print(' '.join(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == []


def _heavy_at_import(text: str, where: str) -> list[str]:
    """Imports of numpy / scipy / scikit-learn / matplotlib outside a function and outside
    `if TYPE_CHECKING:`."""
    out: list[str] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                inner = True
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom) and child.module and not child.level:
                names = [child.module]
            if not inner and any(n.split(".")[0] in HEAVY for n in names):
                out.append(f"{where}:{child.lineno} imports {', '.join(names)}")
            visit(child, inner)

    visit(ast.parse(text, where), False)
    return out


def test_no_product_module_imports_numpy_at_import_time() -> None:
    found = [
        hit
        for name in CORE
        for f in sorted((SRC / name).rglob("*.py"))
        for hit in _heavy_at_import(f.read_text(encoding="utf-8"), str(f.relative_to(SRC)))
    ]
    assert found == [], "\n".join(found)


def test_the_import_check_tells_them_apart() -> None:
    assert _heavy_at_import("import numpy as np", "x.py")
    assert _heavy_at_import("from numpy.typing import ArrayLike", "x.py")
    assert not _heavy_at_import("def f():\n    import numpy", "x.py")
    assert not _heavy_at_import("if TYPE_CHECKING:\n    import numpy", "x.py")
    assert not _heavy_at_import("import numbers", "x.py")


def test_without_numpy_purification_extracts_the_same_text() -> None:
    """Without numpy importable, purification cuts a page to the same extract as it does here
    (where the lab's numpy is installed): nothing on its path needs numpy."""
    from overseer.supervise.purify import extract, strip_markup
    from overseer.tasks.pageloop import make_tasks

    tasks = make_tasks(6, 29, chars=(11_000, 13_000))
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "import json\n"
        "from overseer.supervise.purify import extract, strip_markup\n"
        "from overseer.tasks.pageloop import make_tasks\n"
        "tasks = make_tasks(6, 29, chars=(11_000, 13_000))\n"
        "out = [extract(strip_markup(t.page), t.question, 1500) for t in tasks]\n"
        "print(json.dumps([out, sorted(m for m in ('numpy',) if sys.modules.get(m))]))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    pure, loaded = json.loads(run.stdout)
    assert loaded == []
    assert pure == [extract(strip_markup(t.page), t.question, 1500) for t in tasks]
