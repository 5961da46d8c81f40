"""Composed configurations: a team source then bus plug-ins in order (`SOURCE+PLUGIN...`), and
every token of a composed run booked to the mechanism that spent it, in the store and the trace."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from overseer.adapt.instantiate import OP_PROMPT
from overseer.adapt.retrieve import NEED_PROMPT
from overseer.adapt.watcher import WATCH_PROMPT
from overseer.bench import ResultRecord, ResultStore, SolverConfig, TeamConfig, run_experiment
from overseer.bench._compose import split_config
from overseer.experiments.registry import bench_configs
from overseer.experiments.supervise import supervise_plugin
from overseer.models import ScriptedModel, TokenLogprob
from overseer.runtime import TeamSpec, make_team, read_trace
from overseer.supervise import reply_template
from overseer.tasks import Task

MC = Task("toy", "toy/1", "Which is prime?\n\nA. 4\nB. 6\nC. 7\nD. 9", "C", "mc", ("4", "6", "7"))
REPORT = "It is C. <summary_of_work> checked 4, 6, 7 and 9. Answer: C"


def logprobs(i: int, token: str) -> TokenLogprob:
    return TokenLogprob(token, -0.5, (("A", -1.0), ("C", -0.5), ("B", -2.0)))


def reply(messages: list) -> object:
    system = messages[0]["content"]
    if system.startswith("You supervise one agent"):
        return reply_template("correct_observation", "keep the answer", "Answer: C")
    if "final decision-maker" in messages[-1]["content"]:
        return "Answer: C"
    if system == NEED_PROMPT:
        return {"objective": "pick", "capabilities": [], "tools": [], "roles": []}
    if system == OP_PROMPT:
        agents = [{"name": n, "responsibility": "r", "instructions": "i", "tools": []}
                  for n in ("Solver", "Checker")]  # fmt: skip
        return {"team": ["Solver", "Checker"], "agents": agents,
                "edges": [["Solver", "Checker"]], "description": "d"}  # fmt: skip
    if system == WATCH_PROMPT:
        return {"decision": "guide", "agent": "Checker", "issue": "x", "guidance": "be sure"}
    return {"thought": "check", "action": "answer", "answer": REPORT}


async def run_one(cfg: SolverConfig, tmp_path: Path) -> ResultRecord:
    with ResultStore(tmp_path / "r.sqlite") as store:
        s = await run_experiment(
            configs=[cfg], tasks=[MC], seeds=[0], model_name="scripted",
            load_model=lambda: ScriptedModel(reply, logprobs_fn=logprobs), store=store,
            progress=False,
        )  # fmt: skip
        (rec,) = store.records()
    assert s.ran == 1 and rec.error is None, rec.error
    return rec


def booked_in_trace(rec: ResultRecord) -> Counter[str]:
    """Tokens per `kind:actor` as the run's trace records its model calls."""
    out: Counter[str] = Counter()
    for e in read_trace(str(rec.extra["trace"])):
        if e["event"] == "model_call":
            key = f"{e['overseer.actor.kind']}:{e['gen_ai.agent.name']}"
            out[key] += e["gen_ai.usage.input_tokens"] + e["gen_ai.usage.output_tokens"]
    return out


def assert_books_balance(rec: ResultRecord) -> set[str]:
    """The store's per-actor usage is what the trace booked, and sums to the result's total."""
    stored = {k: u.total_tokens for k, u in rec.usage_by_actor.items()}
    assert stored == dict(booked_in_trace(rec))
    assert sum(stored.values()) == rec.usage.total_tokens > 0
    return {k.split(":")[0] for k, v in stored.items() if v}


def test_split_keeps_plus_inside_arguments() -> None:
    known = {"complete", "supervise", "monitor", "watcher", "pruned"}

    def starts(piece: str) -> bool:
        return piece.partition(":")[0] in known

    name = "complete+supervise:rules+llm+monitor:a+b.json+watcher"
    assert split_config(name, starts) == [
        "complete", "supervise:rules+llm", "monitor:a+b.json", "watcher"
    ]  # fmt: skip
    assert split_config("pruned:x+y.json", starts) == ["pruned:x+y.json"]


def test_composed_name_resolves_to_the_ordered_chain(toy_monitor: Path) -> None:
    name = f"complete+supervise:llm+monitor:{toy_monitor}+watcher"
    (cfg,) = bench_configs().resolve([name])
    assert isinstance(cfg, TeamConfig) and cfg.name == name
    assert cfg.kinds == ("supervise", "monitor", "watcher") and cfg.top_logprobs == 10
    assert len(cfg.plugins) == 3


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("complete+supervise:nope", "mode 'nope' is unknown; expected one of: llm, rules, "),
        ("complete+supervise", "expected a mode"),
        ("supervised+supervise:llm", "already has a supervise plug-in"),
        ("masfly+watcher", "already has a watcher plug-in"),
        ("complete+watcher+watcher", "already has a watcher plug-in"),
        ("complete+watcher:x", "takes no argument"),
        ("complete+chain", "'chain' is a team source, expected a plug-in"),
        ("complete+bogus:1", "unknown configuration 'complete+bogus:1'"),
        ("direct+watcher", "'direct' is not a team configuration"),
        ("pruned:/no/such.json", "/no/such.json"),
    ],
)
def test_bad_composition_is_one_clear_value_error(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        bench_configs().resolve([name])


def test_supervise_plugin_llm_brings_the_tool_verifier() -> None:
    plug = supervise_plugin("llm")
    assert [s.name for s in plug(ScriptedModel([]))] == ["supervisor"]
    assert getattr(plug, "verifier", None) is not None
    with pytest.raises(ValueError, match="expected one of: llm"):
        supervise_plugin("rules-typo")


async def test_supervisor_and_monitor_compose_on_a_preset_team(
    toy_monitor: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    name = f"complete+supervise:llm+monitor:{toy_monitor}"
    (cfg,) = bench_configs(agents=2, rounds=1).resolve([name])
    rec = await run_one(cfg, tmp_path)
    trace = list(read_trace(str(rec.extra["trace"])))
    start = next(e for e in trace if e["event"] == "run_start")
    assert start["supervisors"] == ["supervisor", "rogue-monitor"]
    assert any(e["event"] == "supervision" for e in trace)
    assert {"agent", "decision", "supervisor"} <= assert_books_balance(rec)


async def test_monitor_composes_with_masfly(
    toy_monitor: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    reg = bench_configs(adapt_store=tmp_path / "adapt.sqlite")
    (cfg,) = reg.resolve([f"masfly+monitor:{toy_monitor}"])
    assert isinstance(cfg, TeamConfig) and cfg.kinds == ("watcher", "monitor")
    rec = await run_one(cfg, tmp_path)
    start = next(e for e in read_trace(str(rec.extra["trace"])) if e["event"] == "run_start")
    assert start["supervisors"] == ["watcher", "rogue-monitor"]
    assert {"planner", "agent", "watcher"} <= assert_books_balance(rec)


async def test_a_pruned_spec_is_a_source_plugins_compose_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    team = make_team("complete", 2, rounds=1, pool="reasoning")
    spec = tmp_path / "pruned.json"
    TeamSpec(**{**team.model_dump(), "spatial_edges": []}).save(spec)
    (cfg,) = bench_configs().resolve([f"pruned:{spec}+watcher"])
    assert cfg.kinds == ("watcher",)  # type: ignore[attr-defined]
    rec = await run_one(cfg, tmp_path)
    trace = list(read_trace(str(rec.extra["trace"])))
    team_ev = next(e for e in trace if e["event"] == "run_start")
    assert team_ev["supervisors"] == ["watcher"]
    assert {"agent", "watcher"} <= assert_books_balance(rec)
