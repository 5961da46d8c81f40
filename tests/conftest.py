"""Shared fixtures: the real embedded model, loaded once per test session; a local Ray; a
directory other users cannot write; the benchmark scripts as modules."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from overseer.models import LlamaCppModel, load_model


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, each worker keeps to its own share of the cores (worker i of n: the
    cores i, i + n, ...), so the models it loads and the servers and Ray it starts (which size
    their threads to the cores they may use) never contend with the other worker's: llama.cpp
    threads beyond the free cores cost many times their work."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    n = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if worker.startswith("gw") and 1 < n <= len(cores):
        os.sched_setaffinity(0, cores[int(worker[2:]) % n :: n])


#: test files whose tests must share one xdist worker, in file order: every test that starts
#: a Ray cluster (two at once on this machine would contend for its cores, and `ray start`
#: records one cluster per machine), and the tiny evidence runs (compose's stores are reused
#: by the monitor and prune tests after it)
SERIAL = {
    "ray": ("bench/test_ray_backend.py", "bench/test_ray_faults.py", "bench/test_ray_faults4.py",
            "bench/test_scale_out.py", "bench/test_scale_out_recorded.py",
            "cli/test_backend_cli.py", "e2e/test_ray_cluster.py", "monitor/test_ray_games.py",
            "prune/test_ray_eval.py"),
    "evidence-tiny": ("bench/test_evidence.py",),
}  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks the tests of `SERIAL`'s files with their xdist group (`--dist loadgroup`), and
    every other test of the session's SmolLM2 (`embedded_model`) with one group of its own:
    at temperature 0 its replies still depend on what its prompt cache holds, so its tests
    meet it in one process, in file order, as in a run without workers."""
    here = Path(__file__).parent
    group = {f: name for name, files in SERIAL.items() for f in files}
    if missing := [f for f in group if not (here / f).is_file()]:
        raise pytest.UsageError(f"tests/conftest.py SERIAL names no such test file: {missing}")
    for item in items:
        name = group.get(item.path.relative_to(here).as_posix())
        if name is None and "embedded_model" in getattr(item, "fixturenames", ()):
            name = "smollm2"
        if name:
            item.add_marker(pytest.mark.xdist_group(name))


# every trace event a test writes (in process or in a CLI subprocess) is validated against
# the schema at the writer; production runs validate on read (`read_trace(validate=True)`)
os.environ.setdefault("OVERSEER_TRACE_VALIDATE", "1")


@pytest.fixture(scope="session")
def benchmark_script() -> Callable[[str], ModuleType]:
    """Loads benchmarks/NAME.py as a module (the scripts are not a package)."""
    root = Path(__file__).resolve().parents[1] / "benchmarks"

    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", root / f"{name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # its dataclasses look their module up there
        spec.loader.exec_module(mod)
        return mod

    return load


@pytest.fixture(scope="session")
def embedded_model() -> Iterator[LlamaCppModel]:
    """SmolLM2-135M in process (also listening on loopback: `.base_url`)."""
    # two threads even on a worker's one core: its replies depend on the thread count too,
    # and the tests' expectations were set at two
    model = load_model("smollm2-135m", n_ctx=4096, n_threads=2)
    assert isinstance(model, LlamaCppModel)
    yield model
    model.close()


@pytest.fixture(scope="module")
def local_ray(request: pytest.FixtureRequest) -> Iterator[None]:
    """One local Ray for a test module; the module's helpers are shipped to workers by value."""
    import os

    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False)
    ray.cloudpickle.register_pickle_by_value(request.module)
    yield
    ray.cloudpickle.unregister_pickle_by_value(request.module)
    ray.shutdown()


@pytest.fixture
def readonly_dir() -> Iterator[Path]:
    """A world-readable directory that another user cannot write (the read-only output and
    store tests run their command as another user, with setpriv)."""
    d = Path(tempfile.mkdtemp(prefix="overseer-ro-"))
    try:
        yield d
    finally:
        d.chmod(0o755)
        shutil.rmtree(d)
