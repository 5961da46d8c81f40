"""Episodes per second against workers: the asyncio backend and the Ray backend.

Usage: python benchmarks/scale_out.py [--episodes 16] [--latency 0.2] [--workers 1,2,4]

A fixed-latency scripted model stands for the LLM, so scaling is measurable on 2 cores:
"server" sleeps without blocking (an HTTP model server: asyncio overlaps the calls),
"in-process" blocks its process while it "generates" without using CPU (a model whose
compute is elsewhere), and "cpu-bound" burns `latency` seconds of CPU per call (the embedded
llama.cpp model: only more cores can overlap it, so Ray workers beyond this machine's cores
gain nothing). asyncio runs `workers` episodes at once;
Ray runs `workers` actors, one episode each at a time. "ratio to linear" is episodes/s over
workers / latency (one model call per episode: the scripted model answers in the closed-answer
JSON the direct solver asks for, so nothing is re-asked; "calls/episode" checks it, and every
episode must be right). The Ray overhead per episode is measured with an instant model. All
times start when the workers are ready (start-up is shown apart). Ray always starts on this
machine, whatever cluster `ray start` recorded or RAY_ADDRESS names.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import re
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
from rich.console import Console
from rich.table import Table

from overseer.bench import ResultStore, RunSummary, run_experiment
from overseer.bench.backends import (
    RayBackend,
    RayConnectError,
    WorkerSpec,
    asyncio_episodes,
    start_local,
)
from overseer.experiments.registry import bench_configs
from overseer.models import Model, ScriptedModel
from overseer.tasks import Task


def answer(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The closed answer the direct solver's schema asks for: {"reasoning", "answer"}, the sum
    of the two numbers of "What is a+b?"."""
    a, b = map(int, re.findall(r"\d+", messages[-1]["content"])[-2:])
    return {"reasoning": "add the two numbers", "answer": a + b}


class BlockingModel(ScriptedModel):
    """The scripted model whose async call blocks its process, like in-process inference."""

    async def acomplete(self, *args: Any, **kwargs: Any) -> Any:
        return self.complete(*args, **kwargs)


class CPUBoundModel(ScriptedModel):
    """The scripted model whose every call burns `burn_s` seconds of this thread's CPU."""

    def __init__(self, burn_s: float) -> None:
        super().__init__(answer)
        self.burn_s = burn_s

    async def acomplete(self, *args: Any, **kwargs: Any) -> Any:
        end = time.thread_time() + self.burn_s
        while time.thread_time() < end:
            pass
        return self.complete(*args, **kwargs)


KINDS = ("server", "in-process", "cpu-bound")


def fixed_latency_model(latency_s: float, kind: str) -> Model:
    if kind == "cpu-bound":
        return CPUBoundModel(latency_s)
    cls = BlockingModel if kind == "in-process" else ScriptedModel
    return cls(answer, latency_s=latency_s)


def tasks(n: int) -> list[Task]:
    return [Task("toy", f"toy/{i}", f"What is {i}+{i}?", str(2 * i), "numeric") for i in range(n)]


@dataclass
class Timed:
    """A backend that notes when its workers are ready, so start-up is timed apart."""

    inner: Any
    ready_at: float = 0.0

    @property
    def workers(self) -> int:
        """The inner backend's workers: the runner keeps workers x concurrency episodes going,
        so a wrapper that hid this would run Ray one episode at a time."""
        return 1 if self.inner == "asyncio" else int(self.inner.workers)

    @asynccontextmanager
    async def open(self, *args: Any) -> AsyncIterator[Any]:
        opener = asyncio_episodes if self.inner == "asyncio" else self.inner.open
        async with opener(*args) as episode:
            self.ready_at = time.perf_counter()
            yield episode


def timed_run(
    n: int, load: functools.partial, workers: int, backend: str
) -> tuple[float, float, float]:
    """Seconds to start the workers, to run `n` direct episodes into a fresh store, and the
    model calls per episode (1: answered in the expected format, nothing re-asked);
    RuntimeError when an episode errs or answers wrong."""
    chosen = bench_configs().resolve(["direct"])
    runner = Timed("asyncio")
    if backend == "ray":
        runner = Timed(RayBackend(WorkerSpec(configs=bench_configs, model=load), workers=workers))
    with tempfile.TemporaryDirectory() as d, ResultStore(Path(d) / "r.sqlite") as st:
        start = time.perf_counter()
        s: RunSummary = asyncio.run(
            run_experiment(configs=chosen, tasks=tasks(n), seeds=[0], model_name="scripted",
                           load_model=load, store=st, progress=False,
                           concurrency=1 if backend == "ray" else workers, backend=runner)
        )  # fmt: skip
        end = time.perf_counter()
        recs = list(st.records())
    if (s.ran, s.errors) != (n, 0) or not all(r.correct for r in recs):
        raise RuntimeError(f"{backend} x{workers}: {s}, {sum(r.correct for r in recs)} right")
    calls = sum(int(r.extra.get("attempts", 0)) for r in recs) / n
    return runner.ready_at - start, end - runner.ready_at, calls


def scaling_table(episodes: int, latency: float, workers: list[int]) -> Table:
    cores = len(os.sched_getaffinity(0))
    t = Table(title=f"{episodes} episodes, one {latency:.2f} s model call each, {cores} cores")
    cols = ("model", "backend", "workers", "seconds", "episodes/s", "ratio to linear", "calls/ep")
    for col in cols:
        t.add_column(col, justify="left" if col in ("model", "backend") else "right")
    for kind in KINDS:
        load = functools.partial(fixed_latency_model, latency, kind)
        for backend in ("asyncio", "ray"):
            for w in workers:
                _, took, calls = timed_run(episodes, load, w, backend)  # start-up apart
                eps = episodes / took
                t.add_row(kind, backend, str(w), f"{took:.2f}", f"{eps:.2f}",
                          f"{eps / (w / latency):.2f}", f"{calls:.2f}")  # fmt: skip
    return t


def overhead_lines(episodes: int) -> list[str]:
    """Per-episode cost of each backend with an instant model, start-up excluded."""
    load = functools.partial(fixed_latency_model, 0.0, "server")
    out = []
    for backend in ("asyncio", "ray"):
        start, took, _ = timed_run(episodes, load, 1, backend)
        per = 1000 * took / episodes
        out.append(f"{backend}: workers ready in {start:.2f} s, then {per:.1f} ms per episode")
    return out


def start_ray(cpus: int) -> None:
    """Ray on this machine with `cpus` CPUs, whatever cluster `ray start` recorded or
    RAY_ADDRESS names (the benchmark measures this machine; joining a recorded cluster, live
    or stale, was a ValueError traceback); a Ray that cannot start is one line, exit 2."""
    try:
        start_local(ray, cpus)
    except RayConnectError as exc:
        print(f"scale_out: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=16)
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--workers", default="1,2,4")
    a = p.parse_args(argv)
    workers = [int(w) for w in a.workers.split(",")]
    start_ray(max(workers))
    try:
        console = Console()
        console.print(scaling_table(a.episodes, a.latency, workers))
        console.print("instant model, 1 worker:")
        for line in overhead_lines(4 * a.episodes):
            console.print(f"  {line}")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
