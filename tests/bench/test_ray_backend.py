"""The Ray backend of the runner: same stored results as asyncio, resume, workers that die.

Ray starts once for the module (local, 2 CPUs, no dashboard) and is shut down after it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
from pathlib import Path

import pytest

from overseer.bench import (
    ConfigRegistry,
    ResultStore,
    RunSummary,
    SolverConfig,
    SolverOutput,
    run_experiment,
)
from overseer.bench.backends import RayBackend, WorkerSpec, listed_configs
from overseer.bench.solvers import DIRECT, team_configs
from overseer.models import Model, ScriptedModel, load_model
from overseer.tasks import Task

pytestmark = pytest.mark.usefixtures("local_ray")  # tests/conftest.py


def numeric_tasks(n: int) -> list[Task]:
    return [Task("toy", f"toy/{i}", f"What is {i}+{i}?", str(2 * i), "numeric") for i in range(n)]


def answer_model() -> Model:
    """Right on even numbers, wrong on odd ones, so scores differ between tasks."""

    def reply(msgs) -> str:  # a JSON answer fits the direct call's closed-answer schema too
        a = int(re.findall(r"What is (\d+)\+", " ".join(m["content"] for m in msgs))[-1])
        return json.dumps({"reasoning": "add", "answer": 2 * a + a % 2})

    return ScriptedModel(reply)


def _first(marker: Path) -> bool:
    """True for exactly one caller across processes: the one that creates `marker`."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


async def _echo(model: Model, task: Task, seed: int, *, crash_dir: str | None) -> SolverOutput:
    """Asks the model; with `crash_dir`, a task named in it kills its worker process on the
    tries its marker file allows (`once`: the first; `always`: every one)."""
    if crash_dir is not None:
        rule = Path(crash_dir) / task.id.replace("/", "_")
        if rule.is_file():
            tries = Path(f"{rule}.tries")
            with tries.open("a") as f:
                f.write(f"{os.getpid()}\n")
            if rule.read_text() == "always" or _first(Path(f"{rule}.crashed")):
                os._exit(1)
    c = await model.acomplete([{"role": "user", "content": task.prompt}], seed=seed)
    return SolverOutput(c.text, {"agent:solver": c.usage}, extra={"seed": seed})


def echo_solver(model: Model, *, crash_dir: str | None = None):
    return functools.partial(_echo, model, crash_dir=crash_dir)


def toy_configs(crash_dir: str | None = None) -> ConfigRegistry:
    """The direct baseline and `echo` (which can be told to crash its worker)."""
    echo = SolverConfig(
        "echo", "asks the model", functools.partial(echo_solver, crash_dir=crash_dir)
    )
    return ConfigRegistry([DIRECT, echo])


def run(store, tasks, backend="asyncio", seeds=(0, 1), names=("direct", "echo"), concurrency=2):
    return asyncio.run(
        run_experiment(
            configs=toy_configs().resolve(names),
            tasks=tasks,
            seeds=list(seeds),
            model_name="scripted",
            load_model=answer_model,
            store=store,
            concurrency=concurrency,
            progress=False,
            backend=backend,
        )
    )


def ray_backend(crash_dir: Path | None = None, **kw) -> RayBackend:
    configs = functools.partial(toy_configs, str(crash_dir) if crash_dir else None)
    return RayBackend(WorkerSpec(configs=configs, model=answer_model), workers=2, **kw)


def stored(store: ResultStore) -> dict:
    return {r.key: (r.answer, r.correct, r.score, r.error, r.usage) for r in store.records()}


def test_ray_stores_what_asyncio_stores(tmp_path: Path) -> None:
    tasks = numeric_tasks(5)
    with ResultStore(tmp_path / "a.sqlite") as a, ResultStore(tmp_path / "r.sqlite") as r:
        assert run(a, tasks) == RunSummary(20, 0, 20, 0, True)
        assert run(r, tasks, ray_backend()) == RunSummary(20, 0, 20, 0, True)
        assert stored(r) == stored(a)
        assert {x.correct for x in r.records()} == {True, False}


def test_ray_resumes_and_skips_what_is_done(tmp_path: Path) -> None:
    tasks = numeric_tasks(4)
    with ResultStore(tmp_path / "r.sqlite") as r:
        assert run(r, tasks[:2], ray_backend()).ran == 8
        first = {x.key: x.finished_at for x in r.records()}
        s = run(r, tasks, ray_backend())
        assert (s.planned, s.already_done, s.ran, s.errors) == (16, 8, 8, 0)
        again = {x.key: x.finished_at for x in r.records()}
        assert len(again) == 16 and all(again[k] == t for k, t in first.items())
        assert run(r, tasks, ray_backend()) == RunSummary(16, 16, 0, 0, False)


def test_a_worker_killed_mid_run_loses_nothing(tmp_path: Path) -> None:
    crash = tmp_path / "crash"
    crash.mkdir()
    (crash / "toy_1").write_text("once")
    (crash / "toy_3").write_text("once")
    tasks = numeric_tasks(5)
    with ResultStore(tmp_path / "a.sqlite") as a, ResultStore(tmp_path / "r.sqlite") as r:
        run(a, tasks, names=("echo",))
        s = run(r, tasks, ray_backend(crash), names=("echo",), concurrency=1)
        assert (s.ran, s.errors) == (10, 0)
        assert stored(r) == stored(a)  # every episode stored once, the crashed ones retried
    pids = (crash / "toy_1.tries").read_text().split()
    assert len(pids) == 3 and pids[0] not in pids[1:]  # seeds 0 and 1; a new worker retried


def test_an_episode_that_always_kills_its_worker_is_recorded_as_an_error(tmp_path: Path) -> None:
    crash = tmp_path / "crash"
    crash.mkdir()
    (crash / "toy_2").write_text("always")
    with ResultStore(tmp_path / "r.sqlite") as r:
        backend = ray_backend(crash, max_retries=1)
        s = run(r, numeric_tasks(4), backend, seeds=(0,), names=("echo",), concurrency=1)
        assert (s.ran, s.errors) == (4, 1)
        recs = {x.key.task_id: x for x in r.records()}
        assert len(recs) == 4
        assert recs["toy/2"].error == "worker died on each of 2 tries (ActorDiedError)"
        assert all(recs[t].error is None for t in ("toy/0", "toy/1", "toy/3"))
    assert len((crash / "toy_2.tries").read_text().split()) == 2


def test_a_worker_that_cannot_build_its_solvers_fails_the_run(tmp_path: Path) -> None:
    spec = WorkerSpec(configs=functools.partial(listed_configs, [DIRECT]), model=answer_model)
    with ResultStore(tmp_path / "r.sqlite") as r, pytest.raises(RuntimeError, match="could not"):
        run(r, numeric_tasks(2), RayBackend(spec, workers=1))
    with ResultStore(tmp_path / "r.sqlite") as r:
        assert list(r.records()) == []


def preset_configs() -> ConfigRegistry:
    """The direct baseline and the preset teams (a picklable configuration source)."""
    return ConfigRegistry([DIRECT, *team_configs()])


def test_closures_are_rejected_before_any_worker_starts() -> None:
    with pytest.raises(ValueError, match=r"WorkerSpec\.model: must pickle"):
        RayBackend(WorkerSpec(configs=preset_configs, model=lambda: answer_model()))


@pytest.mark.e2e
def test_ray_runs_the_embedded_model(tmp_path: Path) -> None:
    """Two workers each load SmolLM2 once; answers equal the asyncio backend's."""
    load = functools.partial(load_model, "smollm2-135m", n_threads=1, prompt_cache=False)
    tasks = numeric_tasks(2)
    kw = dict(configs=[DIRECT], tasks=tasks, seeds=[0], model_name="smollm2-135m", progress=False)
    backend = RayBackend(WorkerSpec(configs=preset_configs, model=load), workers=2)
    with ResultStore(tmp_path / "a.sqlite") as a, ResultStore(tmp_path / "r.sqlite") as r:
        asyncio.run(run_experiment(load_model=load, store=a, **kw))  # type: ignore[arg-type]
        s = asyncio.run(run_experiment(load_model=load, store=r, backend=backend, **kw))  # type: ignore[arg-type]
        assert (s.ran, s.errors) == (2, 0)
        ra, rr = stored(a), stored(r)
        assert list(ra) == list(rr) and all(v[0] for v in rr.values())
        assert [v[0] for v in rr.values()] == [v[0] for v in ra.values()]
