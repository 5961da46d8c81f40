"""The product installs lean (issue 49, item 5): importing any of its packages loads no numpy,
scipy, scikit-learn or matplotlib (a plug-in or the lab may, behind their extras: `monitor`,
`bench`, `train`), and purification gives the same text without numpy. That no core module
imports them at import time is checked with the lab's imports in tests/test_layers.py."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.test_layers import LEAN_CORE as CORE

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
