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
