"""--backend, --address, --workers of `bench`, `monitor collect|eval` and `prune`: bad values
are one line (exit 2, nothing run), and `--backend ray` hands the runner a RayBackend whose
parts pickle and rebuild the command's configurations (no Ray started here)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import overseer.bench
from overseer.bench import RunSummary
from overseer.bench.backends import RayBackend
from overseer.cli import main

COMMANDS = {
    "bench": ["bench", "--model", "smollm2-135m", "--suite", "gsm8k-sample"],
    "collect": ["monitor", "collect"],
    "eval": ["monitor", "eval"],
    "prune": ["prune", "--suite", "mmlu-sample"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--backend", "spark"], "--backend: expected asyncio or ray, got 'spark'"),
        (["--address", "head:6379"], "--address: a Ray cluster address, only with backend ray"),
        (["--backend", "ray", "--workers", "0"], "--workers: expected >= 1, got 0"),
    ],
)
def test_bad_backend_options_are_one_line_and_exit_2(
    command: str, argv: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "r.sqlite"
    code = main([*COMMANDS[command], *argv, "--store", str(store)])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1
    assert not store.exists()


def capture(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> dict:
    seen: dict = {}

    async def fake(*args: object, **kwargs: object) -> RunSummary:
        seen.update(kwargs)
        return RunSummary(1, 0, 1, 0, True)

    monkeypatch.setattr(module, name, fake)
    return seen


def shipped(backend: object) -> list[str]:
    """The configuration names a worker builds from the backend's spec, after pickling."""
    assert isinstance(backend, RayBackend)
    spec = pickle.loads(pickle.dumps(backend.spec))
    source = spec.configs()
    return list(source.names()) if hasattr(source, "names") else [c.name for c in source]


def test_monitor_collect_runs_games_on_ray_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = capture(monkeypatch, overseer.bench, "run_experiment")
    argv = ["monitor", "collect", "--suspects", "4", "--games", "2", "--val-games", "1", "--store",
            str(tmp_path / "r.sqlite"), "--backend", "ray", "--workers", "3"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    backend = seen["backend"]
    assert isinstance(backend, RayBackend) and backend.workers == 3
    assert backend.address is None and shipped(backend) == ["collect"]


def test_bench_runs_episodes_on_ray_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = capture(monkeypatch, overseer.bench, "run_experiment")
    argv = ["bench", "--model", "smollm2-135m", "--suite", "gsm8k-sample", "--configs", "direct",
            "--limit", "1", "--store", str(tmp_path / "r.sqlite"), "--backend", "ray"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    assert seen["backend"].workers == 2 and "direct" in shipped(seen["backend"])
