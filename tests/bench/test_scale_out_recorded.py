"""Issue 51, Ray: `benchmarks/scale_out.py` with a cluster recorded by `ray start` (stale or
live) ended in a ValueError traceback: it called `ray.init(num_cpus=...)`, which joins the
recorded cluster and refuses CPUs for one. It starts Ray on this machine whatever is recorded;
a Ray that cannot start is one line, exit 2. Ray is stood in for by a fake that keeps Ray's
rule (checked on Ray 2.60 by hand: both records gave that traceback), so no Ray starts."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


class _RecordedRay:
    """`ray.init` as Ray 2.60 has it on a machine where `ray start` recorded a cluster:
    without address "local" it joins that cluster, and CPUs given for it are a ValueError."""

    def __init__(self, fail: str | None = None) -> None:
        self.inits: list[dict[str, Any]] = []
        self.fail = fail
        self.shut = False

    def init(self, **kw: Any) -> None:
        recorded = Path(os.environ["RAY_TMPDIR"], "ray", "ray_current_cluster")
        if kw.get("address") != "local" and recorded.is_file() and "num_cpus" in kw:
            raise ValueError(
                "When connecting to an existing cluster, num_cpus and num_gpus must not be "
                "provided."
            )
        if self.fail:
            raise RuntimeError(self.fail)
        self.inits.append(kw)

    def shutdown(self) -> None:
        self.shut = True


@pytest.fixture
def scale_out(
    benchmark_script: Callable[[str], ModuleType],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> ModuleType:
    """The script with a (stale) cluster recorded, and its tables stubbed out."""
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text("127.0.0.1:1\n")
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    mod = benchmark_script("scale_out")
    monkeypatch.setattr(mod, "scaling_table", lambda *a: "the table")
    monkeypatch.setattr(mod, "overhead_lines", lambda n: ["the overhead"])
    return mod


def test_a_recorded_cluster_does_not_stop_the_benchmark(
    scale_out: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = _RecordedRay()
    monkeypatch.setattr(scale_out, "ray", fake)
    scale_out.main(["--workers", "1,3"])
    assert [i["address"] for i in fake.inits] == ["local"]  # Ray here, not the recorded one
    assert fake.inits[0]["num_cpus"] == 3 and fake.shut
    assert "the table" in capsys.readouterr().out


def test_a_ray_that_cannot_start_is_one_line(
    scale_out: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(scale_out, "ray", _RecordedRay(fail="no space left on device\nat x"))
    with pytest.raises(SystemExit) as done:
        scale_out.main(["--workers", "1"])
    assert done.value.code == 2
    assert capsys.readouterr().err == (
        "scale_out: error: local Ray could not start: no space left on device at x\n"
    )
