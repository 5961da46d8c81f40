"""The Ray backend of the runner: same stored results as asyncio, resume, workers that die,
threads per worker, and how the driver finds its cluster (`_ray_connect`).

Ray starts once for the module (local, 2 CPUs, no dashboard) and is shut down after it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
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
from overseer.bench._ray_connect import Target, check_reachable, find_target, one_line
from overseer.bench.backends import RayBackend, RayConnectError, WorkerSpec, listed_configs
from overseer.bench.solvers import DIRECT, team_configs
from overseer.cli._app import InputError
from overseer.cli._backend_options import BackendOpts
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
    why = r"could not build its model and solvers: ValueError: .*no configuration named \['echo'\]"
    with ResultStore(tmp_path / "r.sqlite") as r, pytest.raises(RayConnectError, match=why):
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


def threaded_model(n_threads: int) -> Model:
    """`answer_model` that notes the llama.cpp threads it was given (stamped on its results)."""
    model = answer_model()
    model.n_threads = n_threads  # type: ignore[attr-defined]
    return model


@pytest.mark.parametrize(
    ("cpus", "threads", "expected"), [(1, None, "1"), (2, None, "2"), (2, 1, "1")]
)
def test_threads_follow_the_cpus_ray_gives_each_worker(
    tmp_path: Path, cpus: float, threads: int | None, expected: str
) -> None:
    spec = WorkerSpec(configs=toy_configs, model=threaded_model, takes_threads=True)
    backend = RayBackend(spec, workers=1, cpus_per_worker=cpus, threads=threads)
    with ResultStore(tmp_path / "r.sqlite") as r:
        assert run(r, numeric_tasks(1), backend, seeds=(0,), names=("echo",)).ran == 1
        assert [x.provenance["threads"] for x in r.records()] == [expected]


def test_the_address_is_found_as_ray_finds_it(tmp_path: Path, monkeypatch) -> None:
    """--address, else RAY_ADDRESS, else the cluster `ray start` recorded, else local Ray."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    assert find_target(None) == Target(None, "local")
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text("10.1.2.3:6379\n")
    assert find_target(None).address == "10.1.2.3:6379"
    assert "ray_current_cluster" in find_target(None).source
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    assert find_target(None) == Target("ray://head:10001", "RAY_ADDRESS")
    assert find_target(None).client
    assert find_target("head:6379") == Target("head:6379", "--address")
    assert find_target("local") == Target(None, "--address")  # Ray's "start one here"


def test_nothing_listening_fails_in_seconds_on_one_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(RayConnectError, match=rf"127.0.0.1:{port} \(from RAY_ADDRESS\): cannot"):
        check_reachable(Target(f"127.0.0.1:{port}", "RAY_ADDRESS"))
    assert time.monotonic() - start < 10
    with pytest.raises(RayConnectError, match="expected HOST:PORT or ray://HOST:PORT"):
        check_reachable(Target("ray://head", "--address"))


def test_one_line_keeps_a_tracebacks_last_line() -> None:
    tb = RuntimeError("creation task failed\nTraceback (most recent call last):\n  File x\nE: gone")
    assert one_line(tb) == "E: gone"
    assert one_line(RuntimeError("Version mismatch: The cluster\n    Ray: 2.0.0\n")) == (
        "Version mismatch: The cluster Ray: 2.0.0"
    )


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        ({"threads": 2}, "--threads: llama.cpp threads per Ray worker, only with backend ray"),
        ({"worker_cpus": 2.0}, "--worker-cpus: CPUs per Ray worker, only with backend ray"),
        ({"backend": "ray", "threads": 0}, "--threads: expected >= 1, got 0"),
        ({"backend": "ray", "worker_cpus": 0.0}, "--worker-cpus: expected > 0, got 0.0"),
    ],
)
def test_bad_worker_options_are_one_line(opts: dict, message: str) -> None:
    with pytest.raises(InputError) as err:
        BackendOpts(**opts)
    assert str(err.value) == message


DEATH = """
import asyncio, functools, json, os, sys, tempfile
from pathlib import Path
from overseer.bench import ConfigRegistry, ResultStore, SolverConfig, SolverOutput, run_experiment
from overseer.bench.backends import RayBackend, WorkerSpec
from overseer.models import ScriptedModel
from overseer.tasks import Task

MARK = sys.argv[1]  # a global of __main__: shipped to the workers with `crash`

async def crash(model, task, seed):  # the worker solving toy/1 dies, the first time
    if task.id == "toy/1":
        try:
            os.close(os.open(MARK, os.O_CREAT | os.O_EXCL))
            os._exit(1)
        except FileExistsError:
            pass
    c = await model.acomplete([{"role": "user", "content": task.prompt}], seed=seed)
    return SolverOutput(c.text, {"agent:solver": c.usage})

def configs():
    return ConfigRegistry([SolverConfig("crash", "", lambda m: functools.partial(crash, m))])

def model():
    return ScriptedModel(lambda msgs: "4")

tasks = [Task("toy", f"toy/{i}", f"What is {i}+{i}?", str(2 * i), "numeric") for i in range(3)]
with tempfile.TemporaryDirectory() as d, ResultStore(Path(d) / "r.sqlite") as st:
    s = asyncio.run(run_experiment(configs=configs().resolve(["crash"]), tasks=tasks, seeds=[0],
        model_name="scripted", load_model=model, store=st, progress=False,
        backend=RayBackend(WorkerSpec(configs, model), workers=1)))
print(json.dumps({"ran": s.ran, "errors": s.errors}))
"""


@pytest.mark.e2e
def test_ray_notices_of_a_dead_worker_stay_off_stdout(tmp_path: Path) -> None:
    """A driver that starts its own Ray prints only its own line on stdout, though a worker
    dies mid-run (Ray prints "A worker died ..." notices to stdout)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    ray_tmp = tempfile.mkdtemp(prefix="ovr", dir="/tmp")  # short: Ray's socket paths
    try:
        done = subprocess.run(
            [sys.executable, "-c", DEATH, str(tmp_path / "died")],
            env={**env, "RAY_TMPDIR": ray_tmp}, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ['{"ran": 3, "errors": 0}']
    assert (tmp_path / "died").is_file()
