"""Monitor games on the Ray backend: collect and eval store what asyncio stores; workers rebuild
the configurations from `configs_factory`'s picklable partial.

Ray starts once for the module (local, 2 CPUs, no dashboard) and is shut down after it.
"""

from __future__ import annotations

import asyncio
import math
import pickle
from pathlib import Path

import pytest

from overseer.bench import ResultStore, RunSummary, run_experiment
from overseer.bench.backends import RayBackend, WorkerSpec
from overseer.experiments.monitor import (
    EnvSetup,
    configs_factory,
    env_setup,
    split_rows,
    whodunit_setup,
)
from overseer.models import ScriptedModel, TokenLogprob
from overseer.monitor import train_monitors

SIZES = {"suspects": 4, "attributes": 5, "turns": 3}


pytestmark = pytest.mark.usefixtures("local_ray")  # tests/conftest.py


def award(messages: list) -> dict:
    """Beth gives the award to character 1 at once; wins when the Winner is 1."""
    return {"thoughts": "", "action": 3, "character": 1, "property": "hat", "value": "brown"}


def noisy(i: int, tok: str) -> TokenLogprob:
    p = 0.5 + 0.4 * math.sin(i * 1.3 + len(tok))
    top = ((tok, math.log(p)), ("x", math.log(1 - p)))
    return TokenLogprob(tok, top[0][1], top)


def scripted() -> ScriptedModel:
    return ScriptedModel(award, logprobs_fn=noisy)


def play(setup: EnvSetup, factory, tasks, store: Path, backend="asyncio") -> RunSummary:
    with ResultStore(store) as rs:
        return asyncio.run(
            run_experiment(configs=factory(), tasks=tasks, seeds=[0], model_name="scripted",
                           load_model=scripted, store=rs, progress=False, backend=backend)
        )  # fmt: skip


def stored(path: Path) -> dict:
    with ResultStore(path) as rs:
        return {
            r.key: (r.answer, r.correct, r.score, r.error, r.usage, r.extra) for r in rs.records()
        }


def test_collect_and_eval_on_ray_store_what_asyncio_stores(tmp_path: Path) -> None:
    setup = env_setup("whodunit-asym", **SIZES)
    tasks = setup.games("train")[:8] + setup.games("validation")[:6]
    collect = configs_factory(setup)
    backend = RayBackend(WorkerSpec(collect, scripted), workers=2)
    a, r = tmp_path / "a.sqlite", tmp_path / "r.sqlite"
    assert play(setup, collect, tasks, a) == RunSummary(14, 0, 14, 0, True)
    assert play(setup, collect, tasks, r, backend) == RunSummary(14, 0, 14, 0, True)
    assert play(setup, collect, tasks, r, backend) == RunSummary(14, 14, 0, 0, False)
    assert stored(r) == stored(a)
    assert {row["game"] for rec in stored(r).values() for row in rec[5]["rows"]} == {
        t.id for t in tasks
    }
    with ResultStore(r) as rs:
        train, val = split_rows(list(rs.records()))
    ms = train_monitors(train, val, env=setup.suite, model="scripted")
    path = ms.save(tmp_path / "mon")
    evaluate = configs_factory(setup, ms, path, [1, 2])
    assert [c.name for c in pickle.loads(pickle.dumps(evaluate))()] == [c.name for c in evaluate()]
    backend = RayBackend(WorkerSpec(evaluate, scripted), workers=2)
    test = setup.games("test")[:4]
    assert play(setup, evaluate, test, a).ran == 16  # none, cap1, cap2, random
    assert play(setup, evaluate, test, r, backend) == RunSummary(16, 0, 16, 0, True)
    assert stored(r) == stored(a)


def test_configs_factory_needs_a_setup_workers_can_rebuild() -> None:
    from overseer.envs import WhoDunitConfig

    with pytest.raises(ValueError, match="built by env_setup"):
        configs_factory(whodunit_setup("whodunit-asym", WhoDunitConfig()))
    setup = env_setup("whodunit-asym", **SIZES)
    rebuilt = pickle.loads(pickle.dumps(configs_factory(setup)))()
    assert [c.name for c in rebuilt] == ["collect"]
