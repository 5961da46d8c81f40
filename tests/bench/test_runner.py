"""The experiment runner and its store: resume, no duplicates, errors kept, bounded concurrency."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from overseer.bench import ResultRecord, ResultStore, SolverConfig, SolverOutput, run_experiment
from overseer.bench._store import ResultKey
from overseer.models import Model, ScriptedModel, Usage
from overseer.tasks import Task


def numeric_tasks(n: int) -> list[Task]:
    return [Task("toy", f"toy/{i}", f"What is {i}+{i}?", str(2 * i), "numeric") for i in range(n)]


def doubling_config(name: str = "double", *, fail_on: set[str] = frozenset()) -> SolverConfig:
    """A solver that asks the model and answers with the model's text (scripted in tests)."""

    def build(model: Model):
        async def solve(task: Task, seed: int) -> SolverOutput:
            if task.id in fail_on:
                raise RuntimeError(f"solver broke on {task.id}")
            c = await model.acomplete([{"role": "user", "content": task.prompt}], seed=seed)
            return SolverOutput(c.text, {"agent:solver": c.usage})

        return solve

    return SolverConfig(name, "test solver", build)


def answer_model(latency_s: float = 0.0) -> ScriptedModel:
    def reply(msgs) -> str:
        a = int(msgs[-1]["content"].split()[2].split("+")[0])
        return f"The answer is {2 * a}"

    return ScriptedModel(reply, latency_s=latency_s)


def run(store: ResultStore, model: Model, configs, tasks, seeds=(0,), concurrency=2, loads=None):
    def load() -> Model:
        if loads is not None:
            loads.append(1)
        return model

    return asyncio.run(
        run_experiment(
            configs=configs,
            tasks=tasks,
            seeds=list(seeds),
            model_name="scripted",
            load_model=load,
            store=store,
            concurrency=concurrency,
            progress=False,
        )
    )


def test_results_are_scored_stored_and_a_rerun_does_nothing(tmp_path: Path) -> None:
    model, loads = answer_model(), []
    with ResultStore(tmp_path / "r.sqlite") as store:
        s1 = run(store, model, [doubling_config()], numeric_tasks(5), seeds=(0, 1), loads=loads)
        assert (s1.planned, s1.already_done, s1.ran, s1.errors) == (10, 0, 10, 0)
        recs = list(store.records())
        assert len(recs) == 10 and all(r.correct for r in recs)
        assert all(r.usage.prompt_tokens > 0 for r in recs)
        calls = len(model.calls)
        s2 = run(store, model, [doubling_config()], numeric_tasks(5), seeds=(0, 1), loads=loads)
    assert (s2.already_done, s2.ran, s2.model_loaded) == (10, 0, False)
    assert len(model.calls) == calls and loads == [1]


def test_errors_are_recorded_then_retried(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "r.sqlite") as store:
        s1 = run(store, answer_model(), [doubling_config(fail_on={"toy/2"})], numeric_tasks(4))
        assert s1.errors == 1
        bad = [r for r in store.records() if r.error]
        assert len(bad) == 1 and "solver broke on toy/2" in (bad[0].error or "")
        assert not bad[0].correct
        s2 = run(store, answer_model(), [doubling_config()], numeric_tasks(4))
        assert (s2.already_done, s2.ran, s2.errors) == (3, 1, 0)
        assert len(list(store.records())) == 4 and all(r.correct for r in store.records())


def test_concurrency_is_bounded(tmp_path: Path) -> None:
    in_flight, peak = 0, 0

    def build(model: Model):
        async def solve(task: Task, seed: int) -> SolverOutput:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.02)
            in_flight -= 1
            return SolverOutput(task.answer, {})

        return solve

    with ResultStore(tmp_path / "r.sqlite") as store:
        run(store, answer_model(), [SolverConfig("c", "", build)], numeric_tasks(12), concurrency=3)
    assert peak == 3


def test_cancelled_run_resumes_without_loss_or_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"

    async def partial() -> None:
        with ResultStore(path) as store:
            task = asyncio.create_task(
                run_experiment(
                    configs=[doubling_config()],
                    tasks=numeric_tasks(8),
                    seeds=[0],
                    model_name="scripted",
                    load_model=lambda: answer_model(0.05),
                    store=store,
                    concurrency=1,
                    progress=False,
                )
            )
            while len(store.done_keys()) < 3:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(partial())
    with ResultStore(path) as store:
        kept = len(store.done_keys())
        assert 3 <= kept < 8
        s = run(store, answer_model(), [doubling_config()], numeric_tasks(8))
        assert s.already_done == kept and s.ran == 8 - kept
    rows = sqlite3.connect(path).execute("SELECT task_id, COUNT(*) FROM results GROUP BY 1")
    assert sorted(c for _, c in rows) == [1] * 8


KILLED_RUN = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, {tests!r})
    from test_runner import answer_model, doubling_config, numeric_tasks
    from overseer.bench import ResultStore, run_experiment
    with ResultStore({path!r}) as store:
        asyncio.run(run_experiment(configs=[doubling_config()], tasks=numeric_tasks(40),
            seeds=[0], model_name="scripted", load_model=lambda: answer_model(0.1),
            store=store, concurrency=1, progress=False))
    """
)


def test_sigkilled_process_resumes_from_the_store(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    code = KILLED_RUN.format(tests=str(Path(__file__).parent), path=str(path))
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists():
            try:
                with ResultStore(path) as probe:
                    if len(probe.done_keys()) >= 5:
                        break
            except (ValueError, sqlite3.OperationalError):
                pass
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with ResultStore(path) as store:
        kept = len(store.done_keys())
        assert 5 <= kept < 40
        s = run(store, answer_model(), [doubling_config()], numeric_tasks(40))
        assert s.already_done == kept and s.ran == 40 - kept
        assert len(list(store.records())) == 40


def test_store_rejects_a_non_sqlite_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_text("this is not a database" * 100)
    with pytest.raises(ValueError, match=r"bad\.sqlite: not a usable SQLite file"):
        ResultStore(bad)


def test_store_round_trips_usage_by_actor(tmp_path: Path) -> None:
    rec = ResultRecord(
        key=ResultKey("c", "m", "s", "t/1", 3),
        answer="42",
        parsed="42",
        correct=True,
        score=1.0,
        usage_by_actor={"agent:a": Usage(10, 2, 4), "supervisor:s": Usage(5, 1, 0)},
        latency_s=0.5,
        extra={"note": "x"},
    )
    with ResultStore(tmp_path / "r.sqlite") as store:
        store.add(rec)
        store.add(rec)  # replacing, not duplicating
        (got,) = list(store.records())
    assert got.usage_by_actor == rec.usage_by_actor and got.usage == Usage(15, 3, 4)
    assert got.extra == {"note": "x"} and got.key == rec.key


CLI_BENCH = textwrap.dedent(
    """
    import signal
    import sys
    # Ctrl-C raises KeyboardInterrupt even when the test run was started in the background,
    # where the shell starts every child with SIGINT ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import overseer.models
    from overseer.cli import main
    from overseer.models import ScriptedModel
    model = ScriptedModel(lambda m: "The answer is 42", latency_s={latency})
    overseer.models.load_model = lambda *a, **kw: model
    sys.exit(main(["bench", "--model", "smollm2-135m", "--suite", "gsm8k-sample",
                   "--limit", "30", "--store", {path!r}, "--no-progress"]))
    """
)


def _cli_bench(path: Path, latency: float) -> subprocess.Popen[str]:
    code = CLI_BENCH.format(path=str(path), latency=latency)
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for_results(path: Path, n: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists():
            try:
                with ResultStore(path) as probe:
                    if len(probe.done_keys()) >= n:
                        return
            except (ValueError, sqlite3.OperationalError):
                pass
        time.sleep(0.05)
    raise AssertionError(f"{path}: fewer than {n} results after 60 s")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_killed_cli_bench_resumes_without_loss_or_duplicates(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """`overseer bench` killed mid-run (Ctrl-C: exit 130 with the kept count; SIGKILL), then
    rerun: it says what is already done, runs only the rest, and stores each result once."""
    path = tmp_path / "r.sqlite"
    proc = _cli_bench(path, 0.1)
    _wait_for_results(path, 5)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    with ResultStore(path) as store:
        kept = len(store.done_keys())
    assert 5 <= kept < 30
    if sig == signal.SIGINT:
        assert proc.returncode == 130
        assert err.strip().splitlines()[-1] == (
            f"overseer: interrupted; {kept} finished results are kept"
        )
    else:
        assert proc.returncode == -signal.SIGKILL
    rerun = _cli_bench(path, 0.0)
    out, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err
    assert f"30 planned: {kept} already done, {30 - kept} ran, 0 errors" in out
    rows = sqlite3.connect(path).execute("SELECT task_id, COUNT(*) FROM results GROUP BY 1")
    assert sorted(c for _, c in rows) == [1] * 30
