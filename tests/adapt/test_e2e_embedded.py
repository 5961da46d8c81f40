"""MASFly end to end on the real embedded model (plumbing only: smollm2 cannot reason)."""

from __future__ import annotations

import json

import pytest

from overseer.adapt import Embedder, MASFly, MASFlyConfig
from overseer.experiments.adapt import open_stores


@pytest.mark.e2e
async def test_masfly_plans_and_runs_under_the_watcher_on_smollm2(embedded_model, tmp_path) -> None:
    repo, pool = open_stores(tmp_path / "adapt.sqlite", Embedder())
    cfg = MASFlyConfig(
        every=1, max_interventions=1, max_tokens=64, max_agents=3, max_tries=1, plan_tokens=200
    )
    fly = MASFly(embedded_model, repo, pool, config=cfg, trace_dir=tmp_path / "runs")
    out = await fly.solve("What is 12 + 30? Finish with 'The answer is N'.", domain="numeric")
    assert out.plan.need is not None  # from the model or the recorded fallback
    assert out.plan.hits and out.plan.hits[0].case.domain == "numeric"
    assert out.plan.inst.source in ("llm", "fallback_sop", "fallback_single")
    assert out.result.stop_reason in ("done", "error")
    events = [json.loads(x) for x in out.result.trace_path.read_text().splitlines()]
    assert any(e["event"] == "watcher_review" for e in events)  # M = 1: every message reviewed
    assert "watcher:watcher" in out.usage_by_actor
    assert "planner:planner" in out.usage_by_actor  # need analysis and OP, in the books
