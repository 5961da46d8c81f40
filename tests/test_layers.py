"""The package layers hold: the algorithms sit below the experiment runner, and no package
reaches into another package's private module (see docs/architecture.md, "Layers")."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "overseer"
PLUGINS = ("supervise", "monitor", "prune", "adapt")
#: what a plug-in package may pull in: the core it is built on (the runtime's Python tool
#: runs on the sandbox), the errors every package shares and the lazy-export helper
ALLOWED = {"runtime", "models", "sandbox", "errors", "_lazy"}


@pytest.mark.parametrize("name", PLUGINS)
def test_a_plugin_imports_only_the_core(name: str) -> None:
    code = (
        f"import sys, overseer.{name}\n"
        "print(' '.join(sorted({m.split('.')[1] for m in sys.modules "
        "if m.startswith('overseer.')})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert name in loaded
    assert loaded - ALLOWED - {name} == set(), f"import overseer.{name} pulls in {loaded}"


def _package(path: Path) -> str:
    rel = path.relative_to(SRC).parts
    return rel[0] if len(rel) > 1 else rel[0].removesuffix(".py")


def _private_imports(text: str, mine: str, where: str) -> list[str]:
    """`overseer.X._y` modules (X not `mine`, the importing package) imported by `text`."""
    out = []
    for node in ast.walk(ast.parse(text, where)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for mod in names:
            parts = mod.split(".")
            if parts[0] != "overseer" or len(parts) < 3 or parts[1] == mine:
                continue
            if any(p.startswith("_") and not p.startswith("__") for p in parts[2:]):
                out.append(f"{where}:{node.lineno} imports {mod}")
                break
    return out


def test_no_package_imports_another_packages_private_module() -> None:
    found = [
        hit
        for f in sorted(SRC.rglob("*.py"))
        for hit in _private_imports(f.read_text(), _package(f), str(f.relative_to(SRC)))
    ]
    assert found == [], "use the package's public names:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("text", "mine", "hits"),
    [
        ("from overseer.runtime._bus import Verifier", "supervise", 1),
        ("import overseer.bench._ray", "cli", 1),
        ("from overseer.bench import _report", "cli", 1),
        ("from overseer.runtime._bus import Verifier", "runtime", 0),
        ("from overseer.runtime.steps import Verifier", "supervise", 0),
        ("from overseer.runtime import __version__", "cli", 0),
    ],
)
def test_the_private_import_check_tells_them_apart(text: str, mine: str, hits: int) -> None:
    assert len(_private_imports(text, mine, "x.py")) == hits


#: the longest a function in src/ may be, in lines (signature and docstring included)
MAX_FUNCTION_LINES = 50


def _long_functions(text: str, where: str) -> list[str]:
    return [
        f"{where}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(text, where))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def test_no_function_is_longer_than_fifty_lines() -> None:
    found = [
        hit
        for f in sorted(SRC.rglob("*.py"))
        for hit in _long_functions(f.read_text(), str(f.relative_to(SRC)))
    ]
    assert found == [], "split these:\n" + "\n".join(found)


def test_the_length_check_counts_signature_and_body() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    assert _long_functions(f"def f():\n{body}", "x.py") == []
    assert _long_functions(f"async def f():\n{body}    return 1\n", "x.py") == [
        f"x.py:1 f ({MAX_FUNCTION_LINES + 1} lines)"
    ]


#: what a host may not touch of a plug-in (issue 49): the SupervisorAgent's per-run state and
#: the rule tier's books; a host reads `bus.stats()` and the bus's verdicts instead
PLUGIN_INTERNALS = {
    "core",
    "trace_rules",
    "charge",
    "firings",
    "before_action",
    "rules",
    "extracts",
    "pinned",
    "_state",
    "_rule",
}
HOSTS = ("integrations", "proxy")


def _internal_reads(text: str, where: str) -> list[str]:
    """Attribute reads of plug-in internals, and imports of the rule tier's state classes."""
    out = []
    for node in ast.walk(ast.parse(text, where)):
        if isinstance(node, ast.Attribute) and node.attr in PLUGIN_INTERNALS:
            base = ast.unparse(node.value)
            if node.attr == "rules" and (base == "self" or base.endswith("settings")):
                continue  # the rule settings a host was given, not the tier's state
            out.append(f"{where}:{node.lineno} reads {base}.{node.attr}")
        if isinstance(node, ast.ImportFrom) and node.module:
            bad = {a.name for a in node.names} & {"RuleTier", "SupervisorCore", "Book"}
            out += [f"{where}:{node.lineno} imports {b}" for b in sorted(bad)]
    return out


def test_no_host_reads_a_plugins_internals() -> None:
    found = [
        hit
        for host in HOSTS
        for path in sorted((SRC / host).glob("*.py"))
        for hit in _internal_reads(path.read_text(encoding="utf-8"), str(path.relative_to(SRC)))
    ]
    assert found == [], "\n".join(found)


#: the lab (issue 49, item 5): what measures the product, behind the `bench` extra
LAB = ("bench", "experiments", "evidence", "traces", "tasks", "envs")
#: what only the `bench` / `train` extras bring: the product may use them inside a function
#: (a training path, which names its extra), never at import time
LAB_ONLY_DEPENDENCIES = ("scipy", "sklearn", "matplotlib")
#: the CLI modules that may import the lab: only inside a function (or for type checking), and
#: only for a lab command, which first checks the extra (`overseer.cli._lab.need_lab`)
CLI_LAB_DISPATCH = {
    "cli/_adapt.py": "overseer adapt",
    "cli/_attribute.py": "overseer attribute",
    "cli/_attribute_out.py": "overseer attribute's output",
    "cli/_backend_options.py": "--backend ray of bench, prune and monitor",
    "cli/_bench.py": "overseer bench",
    "cli/_bench_report.py": "overseer report",
    "cli/_bench_run.py": "overseer bench",
    "cli/_game_options.py": "overseer monitor's games",
    "cli/_monitor.py": "overseer monitor",
    "cli/_monitor_out.py": "overseer monitor's output",
    "cli/_prune.py": "overseer prune",
    "cli/_prune_options.py": "overseer prune",
    "cli/_prune_out.py": "overseer prune's output",
    "cli/_replay.py": "overseer replay",
    "cli/_report.py": "overseer report",
    "cli/_report_export.py": "overseer report --from-export",
    "cli/_report_text.py": "overseer report",
    "cli/_run.py": "overseer run --task (a packaged task); the rest of run is the product's",
    "cli/_run_result.py": "overseer run --task: the task's score",
    "cli/_supervisor_model.py": "--supervisor-model of bench",
    "cli/_trace.py": "overseer trace html (the report's page); trace show is the product's",
}


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        return [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return []


def _lab_imports(text: str, where: str, *, lazy_ok: bool, numpy: bool = False) -> list[str]:
    """Imports of the lab, anywhere in `text` (or, with `lazy_ok`, at import time only: not
    inside a function, not under `if TYPE_CHECKING`), and of the lab-only dependencies (with
    `numpy`, numpy too) at import time."""
    out: list[str] = []
    deps = (*LAB_ONLY_DEPENDENCIES, "numpy") if numpy else LAB_ONLY_DEPENDENCIES

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                inner = True
            for mod in _imported(child):
                parts = mod.split(".")
                lab = parts[0] == "overseer" and len(parts) > 1 and parts[1] in LAB
                if (lab and not (lazy_ok and inner)) or (parts[0] in deps and not inner):
                    out.append(f"{where}:{child.lineno} imports {mod}")
                    break
            visit(child, inner)

    visit(ast.parse(text, where), False)
    return out


def test_the_product_never_imports_the_lab() -> None:
    """Every package that is not the lab is the product (`pip install overseer-agents`): it
    imports no lab package and no scipy / scikit-learn / matplotlib at import time; the CLI's
    lab commands load the lab inside their functions only (CLI_LAB_DISPATCH)."""
    found = []
    for f in sorted(SRC.rglob("*.py")):
        where = str(f.relative_to(SRC))
        if _package(f) in LAB:
            continue
        found += _lab_imports(
            f.read_text(encoding="utf-8"), where, lazy_ok=where in CLI_LAB_DISPATCH
        )
    assert found == [], "the product imports the lab:\n" + "\n".join(found)
    stale = [m for m in CLI_LAB_DISPATCH if not (SRC / m).is_file()]
    assert stale == [], f"allow-listed modules that are gone: {stale}"


#: the core install (no extras): no numpy at import time either (issue 49, item 5; the plug-ins
#: that compute in numpy, `monitor`, `prune`, `adapt`, take the `monitor` extra)
LEAN_CORE = ("runtime", "models", "sandbox", "supervise", "integrations", "proxy", "cli")


def test_no_core_module_imports_numpy_at_import_time() -> None:
    found = [
        hit
        for name in LEAN_CORE
        for f in sorted((SRC / name).rglob("*.py"))
        for hit in _lab_imports(
            f.read_text(encoding="utf-8"),
            str(f.relative_to(SRC)),
            lazy_ok=str(f.relative_to(SRC)) in CLI_LAB_DISPATCH,
            numpy=True,
        )
    ]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(
    ("text", "lazy_ok", "hits"),
    [
        ("import overseer.bench", False, 1),
        ("from overseer.tasks import load_suite", False, 1),
        ("from overseer import evidence", False, 1),
        ("def f():\n    from overseer.traces import replay", False, 1),
        ("def f():\n    from overseer.traces import replay", True, 0),
        ("if TYPE_CHECKING:\n    from overseer.bench import X", True, 0),
        ("from overseer.bench import X", True, 1),
        ("from scipy.stats import norm", False, 1),
        ("def fit():\n    from sklearn.linear_model import Ridge", False, 0),
        ("from overseer.runtime import Executor\nimport numpy", False, 0),
        ("from overseer.benchmarks import x", False, 0),
    ],
)
def test_the_lab_import_check_tells_them_apart(text: str, lazy_ok: bool, hits: int) -> None:
    assert len(_lab_imports(text, "x.py", lazy_ok=lazy_ok)) == hits


@pytest.mark.parametrize(
    ("text", "hits"),
    [
        ("import numpy as np", 1),
        ("from numpy.typing import ArrayLike", 1),
        ("def f():\n    import numpy", 0),
        ("if TYPE_CHECKING:\n    import numpy", 0),
        ("import numbers", 0),
    ],
)
def test_the_core_check_also_tells_numpy_apart(text: str, hits: int) -> None:
    assert len(_lab_imports(text, "x.py", lazy_ok=False, numpy=True)) == hits


def test_importing_the_product_loads_no_lab() -> None:
    code = (
        "import sys\n"
        "import overseer, overseer.runtime, overseer.models, overseer.sandbox, overseer.supervise\n"
        "import overseer.proxy, overseer.integrations.guard, overseer.models.serve, overseer.cli\n"
        "import overseer.monitor, overseer.prune, overseer.adapt, overseer.stats, overseer.errors\n"
        f"lab = {LAB!r}\n"
        f"deps = {LAB_ONLY_DEPENDENCIES!r}\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in deps\n"
        "    or (m.startswith('overseer.') and m.split('.')[1] in lab))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == []
