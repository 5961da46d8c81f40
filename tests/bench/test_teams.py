"""Teams as runner solvers: the ledger becomes per-actor usage; votes compare parsed answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from overseer.bench import ConfigRegistry, ResultStore, run_experiment, team_solver
from overseer.bench.solvers import DIRECT, team_configs
from overseer.models import ScriptedModel
from overseer.runtime import make_team
from overseer.tasks import Task

MC = Task(
    "toy", "toy/1", "Which is prime?\n\nA. 4\nB. 6\nC. 7\nD. 9", "C", "mc", ("4", "6", "7", "9")
)


def agent_reply(messages: list) -> object:
    if (
        "final decision-maker" in messages[-1]["content"]
        or "Your name: " not in messages[1]["content"]
    ):
        return "Answer: C"  # the decision node, or the single-call `direct` baseline
    name = messages[1]["content"].split("Your name: ")[1].split(".")[0]
    letter = "A" if name == "a1" else "C"  # a1 is wrong, the two others agree
    return {"thought": "check", "action": "answer", "answer": f"It is {letter}. Answer: {letter}"}


async def test_team_solver_books_every_actor(tmp_path: Path) -> None:
    solve = team_solver(
        ScriptedModel(agent_reply), preset="complete", agents=3, rounds=1, trace_dir=tmp_path
    )
    out = await solve(MC, 0)
    assert out.error is None and "C" in out.answer
    assert set(out.usage_by_actor) == {"agent:a1", "agent:a2", "agent:a3", "decision:decision"}
    assert Path(str(out.extra["trace"])).is_file()


async def test_vote_uses_parsed_letters(tmp_path: Path) -> None:
    spec = make_team("debate", 3, rounds=2, decision="vote")
    solve = team_solver(ScriptedModel(agent_reply), spec=spec, trace_dir=tmp_path)
    out = await solve(MC, 0)
    assert out.answer.endswith("Answer: C")  # two of three parsed letters say C


def test_registry_has_direct_and_every_preset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # team traces go to ./runs/bench
    reg = ConfigRegistry([DIRECT, *team_configs(3, 2)])
    assert reg.names() == [
        "direct",
        "chain",
        "star",
        "tree",
        "complete",
        "layered",
        "random",
        "debate",
    ]
    with ResultStore(tmp_path / "r.sqlite") as store:
        s = asyncio.run(
            run_experiment(
                configs=reg.resolve(["direct", "chain"]),
                tasks=[MC],
                seeds=[0],
                model_name="scripted",
                load_model=lambda: ScriptedModel(agent_reply),
                store=store,
                progress=False,
            )
        )
        assert s.ran == 2 and s.errors == 0
        recs = {r.key.config: r for r in store.records()}
    assert recs["chain"].correct and set(recs["chain"].usage_by_actor) == {
        "agent:a1",
        "agent:a2",
        "agent:a3",
    }


async def test_run_ids_are_stable_and_a_rerun_gets_its_own_trace(tmp_path: Path) -> None:
    solve = team_solver(ScriptedModel(agent_reply), preset="chain", agents=2, rounds=1,
                        trace_dir=tmp_path, name="chain")  # fmt: skip
    first, second = await solve(MC, 0), await solve(MC, 0)
    assert Path(str(first.extra["trace"])).name == "toy_1-s0.jsonl"
    assert Path(str(second.extra["trace"])).name.startswith("toy_1-s0-")
