"""A 3-agent team on the real embedded model, end to end: real tokens booked, a trace on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from overseer.models import LlamaCppModel
from overseer.runtime import Executor, make_team, read_trace

pytestmark = pytest.mark.e2e


async def test_complete_team_runs_on_the_embedded_model(
    embedded_model: LlamaCppModel, tmp_path: Path
) -> None:
    team = make_team("complete", 3, rounds=2)
    ex = Executor(embedded_model, trace_dir=tmp_path, max_tokens=160, max_steps=2)
    res = await ex.run(team, "What is 17*23? Give the number.")
    assert res.stop_reason == "done", res.error
    # Every agent either spoke or has a recorded failure: nothing silently empty.
    for r in range(2):
        spoke = {m.sender for m in res.messages if m.round == r and m.kind == "message"}
        failed = {f.agent for f in res.failures if f.round == r}
        assert spoke | failed == {"a1", "a2", "a3"}
    assert res.calls_by_actor.get("decision:decision") == 1
    agents = [k for k in res.usage_by_actor if k.startswith("agent:")]
    assert agents and all(res.usage_by_actor[k].prompt_tokens > 50 for k in agents)
    assert res.total.completion_tokens > 0
    events = [e["event"] for e in read_trace(res.trace_path)]
    assert events[0] == "run_start" and events[-1] == "run_end"
    assert events.count("round_start") == 2 and "model_call" in events
    # Shared prefix first: later agents' prompts are partly served from the prefix cache.
    cached = sum(u.cached_prompt_tokens for k, u in res.usage_by_actor.items() if k in agents)
    assert cached > 0
