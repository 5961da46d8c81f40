"""One plug-in instance, many runs at once: its per-run state is kept on each run (`run.state`),
so two concurrent team runs and a game never see each other's counters or caps."""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from pathlib import Path

from overseer.envs import play_whodunit
from overseer.models import ScriptedModel, TokenLogprob
from overseer.monitor import UncertaintyMonitor
from overseer.runtime import (
    BaseSupervisor,
    Executor,
    Interaction,
    Run,
    RunResult,
    Verdict,
    make_team,
    read_trace,
)

from ..monitor.test_intervene import CFG, GAME, confused_digits, linear_monitor, scripted


def _flat(i: int, tok: str) -> TokenLogprob:
    """Every token uncertain (flat over 10 alternatives): the monitor's estimate is 0."""
    top = tuple((f"a{j}", math.log(0.1)) for j in range(10))
    return TokenLogprob(tok, top[0][1], top)


class StepCounter(BaseSupervisor):
    """Counts the steps it is shown in each run, in that run's state; reports at the run's end."""

    name = "counter"
    actions = frozenset({"approve"})

    def __init__(self) -> None:
        self.reported: dict[str, int] = {}

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        run.state(self, Counter)["steps"] += 1
        await asyncio.sleep(0)  # let the other runs interleave
        return Verdict.approve()

    async def on_run_end(self, run: Run, result: RunResult) -> None:
        self.reported[run.id] = run.state(self, Counter)["steps"]


async def test_one_plugin_serves_two_concurrent_team_runs_and_a_game(tmp_path: Path) -> None:
    mon = UncertaintyMonitor(
        {"accuser": linear_monitor("accuser", 0.5)}, cap=1, fallback_role="accuser"
    )
    counter = StepCounter()
    team_model = ScriptedModel(
        lambda m: {"thought": "t", "action": "answer", "answer": "B"},
        logprobs_fn=_flat,
        latency_s=0.001,  # each call yields, so the three runs interleave
    )
    ex = Executor(team_model, supervisors=[counter, mon], trace_dir=tmp_path, top_logprobs=10)
    game_model = scripted(logprobs_fn=confused_digits, latency_s=0.001)
    team = make_team("debate", 2, rounds=2)
    r1, r2, game = await asyncio.gather(
        ex.run(team, "Pick A or B.", run_id="one"),
        ex.run(team, "Pick A or B.", run_id="two"),
        play_whodunit(GAME, game_model, CFG, supervisors=[counter, mon]),
    )
    for res in (r1, r2):
        events = list(read_trace(res.trace_path))
        rollbacks = [(e["agent"], e["by"]) for e in events if e["event"] == "rollback"]
        # each run has its own cap of one rollback per role: a shared counter would spend
        # the caps in the first run and leave the second (and the game) without any
        assert rollbacks == [("a1", "rogue-monitor"), ("a2", "rogue-monitor")], res.run_id
        steps = sum(e["event"] == "interaction" for e in events)
        assert counter.reported[res.run_id] == steps
    assert game.resets == 1 and game.success  # the game's own cap, untouched by the teams
    assert [i["by"] for i in game.interventions] == [mon.name]
    assert len(counter.reported) == 3 and r1.run_id != r2.run_id
