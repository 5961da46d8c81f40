"""Shared fixtures: the real embedded model, loaded once per test session; a local Ray; a
directory other users cannot write."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from overseer.models import LlamaCppModel, load_model

# every trace event a test writes (in process or in a CLI subprocess) is validated against
# the schema at the writer; production runs validate on read (`read_trace(validate=True)`)
os.environ.setdefault("OVERSEER_TRACE_VALIDATE", "1")


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
