"""A composed configuration on the real embedded model: the SupervisorAgent, the trained monitor
(real logprobs) and the Watcher on one preset team, every token booked to its mechanism, and
`overseer report` pairing it with the plain team."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from overseer.bench import ResultStore, run_experiment
from overseer.cli import main
from overseer.experiments.registry import bench_configs
from overseer.models import LlamaCppModel
from overseer.runtime import read_trace
from overseer.tasks import load_suite

pytestmark = pytest.mark.e2e


async def test_composed_config_runs_and_is_paired(
    embedded_model: LlamaCppModel,
    toy_monitor: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    composed = f"complete+supervise:llm+monitor:{toy_monitor}+watcher"
    configs = bench_configs(agents=2, rounds=1).resolve(["complete", composed])
    tasks = load_suite("mmlu-sample", split="test", limit=1)
    with ResultStore(tmp_path / "r.sqlite") as store:
        s = await run_experiment(
            configs=configs, tasks=tasks, seeds=[0], model_name="smollm2-135m",
            load_model=lambda: embedded_model, store=store, progress=False,
        )  # fmt: skip
        recs = {r.key.config: r for r in store.records()}
    assert s.ran == 2 and all(r.error is None for r in recs.values())
    rec = recs[composed]
    trace = list(read_trace(str(rec.extra["trace"])))
    start = next(e for e in trace if e["event"] == "run_start")
    assert start["supervisors"] == ["supervisor", "rogue-monitor", "watcher"]
    booked: Counter[str] = Counter()
    for e in trace:
        if e["event"] == "model_call":
            key = f"{e['overseer.actor.kind']}:{e['gen_ai.agent.name']}"
            booked[key] += e["gen_ai.usage.input_tokens"] + e["gen_ai.usage.output_tokens"]
    stored = {k: u.total_tokens for k, u in rec.usage_by_actor.items()}
    assert stored == dict(booked) and sum(stored.values()) == rec.usage.total_tokens
    assert {"agent", "decision", "watcher"} <= {k.split(":")[0] for k in stored}
    assert any(e["event"] == "watcher_review" for e in trace)

    assert main(["report", "--json", "--store", str(tmp_path / "r.sqlite")]) == 0
    doc = json.loads(capsys.readouterr().out)
    (p,) = doc["paired"]
    assert doc["baseline"] == "complete" and p["config"] == composed
    assert p["n"] + p["errors_config"] + p["errors_baseline"] >= 1
    ratio = rec.usage.total_tokens / recs["complete"].usage.total_tokens
    assert p["token_ratio"] == pytest.approx(ratio)
