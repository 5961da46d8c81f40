"""One bus for teams and games: one trace schema, verdicts honoured or refused up front, the
rogue-agent monitor on an ordinary team."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from overseer.envs import CodeGenConfig, GovSimConfig, play_codegen, play_govsim, play_whodunit
from overseer.models import ScriptedModel, TokenLogprob
from overseer.monitor import RoleMonitor, UncertaintyMonitor
from overseer.runtime import (
    BaseSupervisor,
    Executor,
    Interaction,
    Run,
    UnsupportedVerdictError,
    Verdict,
    make_team,
    read_trace,
)
from overseer.runtime._events import EVENT_NAMES, trace_schema, validate_event
from overseer.runtime._trace import Trace

from ..envs.test_codegen import GOOD, TASK, team
from ..envs.test_govsim import fishers
from ..envs.test_loop import CFG, GAME, award, broad, share
from ..monitor.test_intervene import linear_monitor


def _validated(path: Path) -> list[str]:
    events = list(read_trace(path))
    for e in events:
        validate_event(e)  # raises naming the event and field
    return [e["event"] for e in events]


async def test_traces_of_a_team_and_of_the_three_games_share_one_schema(tmp_path: Path) -> None:
    team_run = await Executor(
        ScriptedModel(lambda m: {"thought": "t", "action": "answer", "answer": "4"}),
        trace_dir=tmp_path / "team",
    ).run(make_team("chain", 2), "2+2?")
    who = tmp_path / "who"
    await play_whodunit(
        GAME, ScriptedModel([broad(), share(), award(GAME.culprit)]), CFG, trace_dir=who
    )
    gov = tmp_path / "gov"
    await play_govsim(100, ScriptedModel(fishers(10)), GovSimConfig(months=1), trace_dir=gov)
    code = tmp_path / "code"
    await play_codegen(TASK, ScriptedModel(team(GOOD)), CodeGenConfig(rounds=1), trace_dir=code)
    traces = [team_run.trace_path, *(next(d.glob("*.jsonl")) for d in (who, gov, code))]
    kinds = [_validated(p) for p in traces]
    for names in kinds:
        assert names[0] == "run_start" and names[-1] == "run_end"
        assert "interaction" in names and "model_call" in names
        assert set(names) <= EVENT_NAMES
    assert all("turn" in names for names in kinds[1:])
    assert "oneOf" in str(trace_schema()) or "anyOf" in str(trace_schema())


def test_a_bad_event_is_refused_at_the_writer(tmp_path: Path) -> None:
    t = Trace(tmp_path / "t.jsonl", "r")
    with pytest.raises(ValueError, match=r"trace event 'rollback': .*removed"):
        t.event("rollback", round=1, agent="a", by="x", reason="y", count=1)
    with pytest.raises(ValueError, match="unknown"):
        t.event("made_up")
    t.close()
    assert (tmp_path / "t.jsonl").read_text() == ""


class Replacer(BaseSupervisor):
    name = "replacer"
    actions = frozenset({"replace_agent"})


async def test_a_game_refuses_a_plugin_whose_verdicts_it_cannot_honour() -> None:
    model = ScriptedModel([award(GAME.culprit)])
    with pytest.raises(UnsupportedVerdictError, match=r"replacer: may return \['replace_agent'\]"):
        await play_whodunit(GAME, model, CFG, supervisors=[Replacer()])
    assert model.calls == []  # refused before any turn was played


class GuideFirst(BaseSupervisor):
    name = "guide"
    actions = frozenset({"guide", "replace"})

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        if interaction.round == 1:
            return Verdict.guide("ask about the hair", by=self.name)
        if interaction.round == 2:
            return Verdict.replace("(hidden)", note="redacted", by=self.name)
        return Verdict.approve()


async def test_guide_and_replace_reach_a_games_channel() -> None:
    model = ScriptedModel([broad(), share(), award(GAME.culprit)])
    r = await play_whodunit(GAME, model, CFG, supervisors=[GuideFirst()])
    assert r.success and len(r.transcript) == 3
    assert r.transcript[0].endswith("[guidance from guide] ask about the hair")
    assert r.transcript[1].startswith("(hidden)") and "redacted" in r.transcript[1]
    assert "ask about the hair" in model.calls[1]["messages"][1]["content"]


def _flat_answer(i: int, tok: str) -> TokenLogprob:
    """Every token uncertain (flat over 10 alternatives)."""
    top = tuple((f"a{j}", math.log(0.1)) for j in range(10))
    return TokenLogprob(tok, top[0][1], top)


def _entropy_monitor(role: str, tau: float) -> RoleMonitor:
    return linear_monitor(role, tau)  # estimate = 1 - entropy / ln 10


async def test_the_monitor_rolls_back_an_ordinary_team(tmp_path: Path) -> None:
    model = ScriptedModel(
        lambda m: {"thought": "t", "action": "answer", "answer": "B"}, logprobs_fn=_flat_answer
    )
    mon = UncertaintyMonitor(
        {"accuser": _entropy_monitor("accuser", 0.5)}, cap=1, fallback_role="accuser"
    )
    res = await Executor(model, supervisors=[mon], trace_dir=tmp_path, top_logprobs=10).run(
        make_team("debate", 2, rounds=2), "Pick A or B."
    )
    assert res.stop_reason == "done"
    agent_calls = [c for c in model.calls if c["actor"] != "decision"]
    assert agent_calls and all(c["top_logprobs"] == 10 for c in agent_calls)
    events = list(read_trace(res.trace_path))
    feats = [e for e in events if e["event"] == "monitor_features"]
    rollbacks = [e for e in events if e["event"] == "rollback"]
    # a1's rollback stops a2's turn before it is judged (nothing runs on a rolled-back state);
    # in the replay a2's own role triggers once: one rollback per role, the cap
    assert [(e["agent"], e["by"]) for e in rollbacks] == [
        ("a1", "rogue-monitor"),
        ("a2", "rogue-monitor"),
    ]
    # one feature row per agent turn: 2 agents x 2 rounds, plus the replayed turns
    assert len(feats) == len(mon.rows) >= 4 and all(f["positions"] >= 1 for f in feats)
    assert all(f["estimate"] < 0.5 for f in feats)


async def test_without_logprobs_the_monitor_is_told_nothing(tmp_path: Path) -> None:
    mon = UncertaintyMonitor({"accuser": _entropy_monitor("accuser", 0.5)}, fallback_role="accuser")
    model = ScriptedModel(lambda m: {"thought": "t", "action": "answer", "answer": "B"})
    res = await Executor(model, supervisors=[mon], trace_dir=tmp_path).run(
        make_team("chain", 2), "Pick A or B."
    )
    assert mon.rows == [] and mon.missing == 2 and res.stop_reason == "done"
