"""Games as runner results: collect, rows with labels in the store, resume, eval table."""

from __future__ import annotations

import math
from pathlib import Path

from overseer.bench import ResultStore, run_experiment
from overseer.envs import WhoDunitConfig
from overseer.experiments.monitor import (
    eval_rows,
    game_config,
    monitor_tag,
    split_rows,
    whodunit_setup,
)
from overseer.models import ScriptedModel, TokenLogprob
from overseer.monitor import MonitorSet, train_monitors

CFG = WhoDunitConfig(n_suspects=4, n_attributes=5, max_turns=4, split_sizes=(12, 8, 6))


def award_one(messages: list) -> dict:
    """Beth gives the award to character 1 at once; wins when the Winner is 1."""
    return {"thoughts": "", "action": 3, "character": 1, "property": "hat", "value": "brown"}


def noisy(i: int, tok: str) -> TokenLogprob:
    p = 0.5 + 0.4 * math.sin(i * 1.3 + len(tok))
    top = ((tok, math.log(p)), ("x", math.log(1 - p)))
    return TokenLogprob(tok, top[0][1], top)


async def collect(setup, store: ResultStore, model: ScriptedModel) -> None:
    tasks = setup.games("train") + setup.games("validation")
    await run_experiment(
        configs=[game_config("collect", setup)],
        tasks=tasks,
        seeds=[0],
        model_name="scripted",
        load_model=lambda: model,
        store=store,
        progress=False,
    )


async def test_collect_train_eval_through_the_store(tmp_path: Path) -> None:
    setup = whodunit_setup("whodunit-asym", CFG)
    assert setup.suite.startswith("whodunit-asym-n4a5t4p2-")
    model = ScriptedModel(award_one, logprobs_fn=noisy)
    with ResultStore(tmp_path / "r.sqlite") as rs:
        await collect(setup, rs, model)
        calls = len(model.calls)
        assert calls == 20  # one award per game
        await collect(setup, rs, model)  # resumed: nothing replayed
        assert len(model.calls) == calls
        recs = list(rs.records(suite=setup.suite, configs=["collect"]))
    assert len(recs) == 20
    for r in recs:
        assert r.correct == (r.extra["awarded"] == 1 and r.extra["success"])
        (row,) = r.extra["rows"]
        assert row["game"] == r.key.task_id and row["success"] == r.correct
    train, val = split_rows(recs)
    assert len(train) == 12 and len(val) == 8
    ms = train_monitors(train, val, env=setup.suite, model="scripted")
    path = ms.save(tmp_path / "mon")
    ms = MonitorSet.load(path)
    tag = monitor_tag(path)
    configs = [
        game_config("none", setup),
        game_config(f"monitor-cap1@{tag}", setup, monitors=ms, cap=1),
        game_config(f"random-cap1@{tag}", setup, monitors=ms, cap=1, random=True),
    ]
    with ResultStore(tmp_path / "r.sqlite") as rs:
        await run_experiment(
            configs=configs,
            tasks=setup.games("test"),
            seeds=[0],
            model_name="scripted",
            load_model=lambda: model,
            store=rs,
            progress=False,
        )
        recs = list(rs.records(suite=setup.suite))
    table = eval_rows(setup.env, recs, [c.name for c in configs])
    assert [r[0] for r in table] == [c.name for c in configs]
    none = table[0]
    assert none[1] == "6" and float(none[4]) == 1.0  # every game: one turn, no reset
    assert all(r.error is None for r in recs)


async def test_govsim_games_through_the_store(tmp_path: Path) -> None:
    from overseer.envs.govsim import GovSimConfig
    from overseer.experiments.monitor import govsim_setup

    setup = govsim_setup(GovSimConfig(months=2, reflect=False))
    assert setup.suite.startswith("govsim-") and len(setup.games("test")) == 20

    def reply(messages: list) -> dict:
        return {"fish": 10} if "How many tons" in messages[-1]["content"] else {"message": "10"}

    tasks = setup.games("test")[:2]
    with ResultStore(tmp_path / "r.sqlite") as rs:
        await run_experiment(
            configs=[game_config("none", setup)],
            tasks=tasks,
            seeds=[0],
            model_name="scripted",
            load_model=lambda: ScriptedModel(reply),
            store=rs,
            progress=False,
        )
        recs = list(rs.records(suite=setup.suite))
    assert [r.correct for r in recs] == [True, True]
    assert {row["role"] for row in recs[0].extra["rows"]} == {"harvest", "discuss"}
    (row,) = eval_rows("govsim", recs, ["none"])
    assert row[:4] == ["none", "2", "100.0", "2.0"]
