"""The explicit registry: configurations without the CLI, `NAME+monitor:FILE`, suite reports,
and benchmarks that use only the public API."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from overseer.bench import ResultStore, TeamConfig, run_experiment
from overseer.experiments.registry import bench_configs, suite_report
from overseer.models import ScriptedModel
from overseer.monitor import MonitorSet
from overseer.runtime import read_trace
from overseer.tasks import Task

ROOT = Path(__file__).resolve().parents[2]
MC = Task("toy", "toy/1", "Which is prime?\n\nA. 4\nB. 6\nC. 7\nD. 9", "C", "mc", ("4", "6", "7"))


@pytest.fixture
def monitor_file(toy_monitor: Path) -> Path:
    """The toy monitor of tests/registry/conftest.py."""
    return toy_monitor


def scripted() -> ScriptedModel:
    """Agents say C; the decision node (actor "decision") answers C."""
    return ScriptedModel(
        lambda m: {"thought": "check", "action": "answer", "answer": "It is C. Answer: C"},
        by_actor={"decision": lambda m: "Answer: C"},
    )


def test_the_registry_lists_configurations_without_importing_the_cli() -> None:
    code = (
        "import sys; from overseer.experiments.registry import bench_configs; "
        "names = bench_configs(suite='travel').names(); "
        "assert not [m for m in sys.modules if m.startswith('overseer.cli')], 'cli imported'; "
        "print(','.join(names))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.strip()
    names = out.split(",")
    for n in ("direct", "complete", "debate", "baseline", "supervised", "masfly"):
        assert n in names
    assert suite_report("travel") is not None and suite_report("gsm8k-sample") is None


def test_travel_teams_replace_the_tool_less_presets() -> None:
    plain, travel = bench_configs().get("chain"), bench_configs(suite="travel").get("chain")
    assert "tools" in travel.description and "tools" not in plain.description


async def test_name_plus_monitor_file_puts_the_monitor_on_a_team(
    monitor_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # team traces go to ./runs/bench
    name = f"complete+monitor:{monitor_file}"
    (cfg,) = bench_configs(agents=2, rounds=1).resolve([name])
    assert isinstance(cfg, TeamConfig) and cfg.name == name and cfg.top_logprobs == 10
    assert MonitorSet.load(monitor_file).env == "toy"
    with ResultStore(tmp_path / "r.sqlite") as store:
        s = await run_experiment(
            configs=[cfg], tasks=[MC], seeds=[0], model_name="scripted",
            load_model=lambda: scripted(), store=store, progress=False,
        )  # fmt: skip
        (rec,) = store.records()
    assert s.ran == 1 and rec.error is None and rec.correct
    start = next(e for e in read_trace(str(rec.extra["trace"])) if e["event"] == "run_start")
    assert start["supervisors"] == ["rogue-monitor"]


def test_a_monitor_composes_with_a_supervised_configuration(monitor_file: Path) -> None:
    cfg = bench_configs().get(f"supervised+monitor:{monitor_file}")
    assert isinstance(cfg, TeamConfig) and len(cfg.plugins) == 2


def test_a_missing_monitor_file_is_a_value_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "none.json"
    with pytest.raises(ValueError, match=re.escape(str(bad))):
        bench_configs().resolve([f"chain+monitor:{bad}"])
    with pytest.raises(ValueError, match="not a team configuration"):
        bench_configs().resolve([f"direct+monitor:{bad}"])


def test_benchmarks_import_no_private_module() -> None:
    private = re.compile(r"^\s*(from|import)\s+overseer(\.\w+)*\._\w+", re.MULTILINE)
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        found = private.findall(path.read_text())
        assert not found, f"{path.name} imports a private module"
