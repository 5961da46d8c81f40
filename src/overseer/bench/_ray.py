"""The Ray backend of the experiment runner: episodes run as tasks on worker actors.

Each worker actor builds its model and solvers once, from a picklable `WorkerSpec` (module-level
functions or `functools.partial`s of them, never closures), then solves the `Episode`s it is
sent and returns their records. A worker's llama.cpp threads follow the CPUs Ray gives its
actor (or `threads`), so workers on one node do not oversubscribe its cores. The driver
(`run_experiment`) stays the only writer of the result store, so resume, "already done" and no
duplicates work as with asyncio. A worker that dies is replaced and its episode retried a
bounded number of times, then recorded as an error.

Ray is the optional extra `overseer-agents[ray]`: it is imported only when a backend is opened.
How the driver reaches Ray, and its one-line errors, are in `_ray_connect`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import os
import pickle
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

from overseer.bench._provenance import stamp
from overseer.bench._ray_connect import (
    NODE_HINT,
    RayConnectError,
    Target,
    check_cpus,
    find_target,
    join,
    local_workers,
    one_line,
    preflight,
    say_if_waiting,
    start_local,
    usable_cores,
    worker_died,
)
from overseer.bench._ray_watch import HeadWatch
from overseer.bench._runner import EpisodeFn, budgeted_solver, solve_episode
from overseer.bench._solvers import ConfigRegistry, Solver, SolverConfig
from overseer.bench._store import ResultKey, ResultRecord
from overseer.errors import require
from overseer.models import Model
from overseer.runtime import Budget
from overseer.tasks import Task

ConfigSource = ConfigRegistry | Sequence[SolverConfig]


@dataclass(frozen=True)
class WorkerSpec:
    """How a worker builds what its episodes need: `configs()` gives the configurations (a
    registry or a list, looked up by name) and `model()` loads the model. Both are shipped to
    every worker, so they must pickle: module-level functions or `functools.partial`s. With
    `takes_threads`, workers call `model(n_threads=N)` with the threads they may use."""

    configs: Callable[[], ConfigSource]
    model: Callable[..., Model]
    takes_threads: bool = False

    def check_picklable(self) -> None:
        """Fail on the driver, before any worker starts, if a part is a closure or lambda."""
        for part in ("configs", "model"):
            try:
                pickle.dumps(getattr(self, part))
            except (pickle.PicklingError, AttributeError, TypeError) as exc:
                raise ValueError(
                    f"WorkerSpec.{part}: must pickle (a module-level function or a "
                    f"functools.partial of one, not a closure or lambda): {exc}"
                ) from exc


def listed_configs(configs: Sequence[SolverConfig]) -> Sequence[SolverConfig]:
    """A `WorkerSpec.configs` for configurations that pickle as they are (their `build` a
    module-level function or partial): `functools.partial(listed_configs, configs)`."""
    return configs


@dataclass(frozen=True)
class Episode:
    """What the driver sends a worker for one episode: a configuration name, task and key."""

    config: str
    task: Task
    key: ResultKey
    budget: Budget | None = None


def actor_threads(threads: int | None) -> int:
    """`threads`, else the CPUs Ray assigned this actor (at least 1)."""
    if threads is not None:
        return threads
    import ray

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
    return max(1, math.floor(cpus))


def _build_solvers(
    spec: WorkerSpec, names: Sequence[str], threads: int
) -> tuple[Model, dict[str, SolverConfig], dict[str, Solver]]:
    """The model, once, the configurations named (unknown names fail) and their solvers."""
    source = spec.configs()
    if isinstance(source, ConfigRegistry):
        found = {n: source.get(n) for n in names}
    else:
        by_name = {c.name: c for c in source}
        missing = [n for n in names if n not in by_name]
        if missing:
            raise ValueError(f"worker configs: no configuration named {missing}")
        found = {n: by_name[n] for n in names}
    model = spec.model(n_threads=threads) if spec.takes_threads else spec.model()
    return model, found, {n: cfg.build(model) for n, cfg in found.items()}


class EpisodeWorker:
    """One Ray actor (one process): builds the model and solvers at start, solves episodes.
    A build that fails is kept as a message for `ready`, so the driver can say it in a line."""

    def __init__(self, spec: WorkerSpec, names: Sequence[str], threads: int | None) -> None:
        self.threads = actor_threads(threads)
        self.broken: str | None = None
        self._stamps: dict[str, dict[str, str]] = {}
        try:
            self._model, self._configs, self._solvers = _build_solvers(spec, names, self.threads)
        except Exception as exc:  # any build failure is reported by `ready`, not a traceback
            self.broken = f"{type(exc).__name__}: {one_line(exc)}"

    async def ready(self) -> tuple[int, str, int, str | None]:
        """Process id, node address, llama.cpp threads, and why the build failed (or None)."""
        import ray

        return os.getpid(), ray.util.get_node_ip_address(), self.threads, self.broken

    async def solve(self, ep: Episode) -> ResultRecord:
        """Solve one episode; the record is stamped with this worker's provenance (threads)."""
        cfg = self._configs[ep.config]
        solver = budgeted_solver(cfg, self._model, ep.budget, ep.key, self._solvers)
        rec = await solve_episode(solver, ep.task, ep.key)
        prov = self._stamps.setdefault(ep.key.model, stamp(ep.key.model, self._model))
        return dataclasses.replace(rec, provenance=prov)


def _ray() -> Any:
    """The ray module, or MissingExtra naming the `ray` extra."""
    return require("ray", "ray", "the Ray backend")


@contextlib.contextmanager
def _stdout_to_stderr() -> Any:
    """Ray prints worker-death and scheduling notices to stdout; while Ray runs they go to
    stderr, so stdout holds only what the command prints (one JSON document with --json)."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def _failed(key: ResultKey, error: str) -> ResultRecord:
    return ResultRecord(key, "", None, False, 0.0, {}, 0.0, error=error)


@dataclass(frozen=True)
class RayBackend:
    """Runs episodes on `workers` Ray actors, `concurrency` episodes at once on each.

    Unless Ray is already initialised, `address` ("ray://host:10001" or "host:6379"), else
    RAY_ADDRESS, else the cluster `ray start` recorded is joined; with none, Ray starts on this
    machine (no dashboard, no usage stats). Each actor reserves `cpus_per_worker` CPUs and runs
    llama.cpp with `threads` threads (None: the CPUs it reserved). Ray-side failures raise
    `RayConnectError` (one line).
    """

    spec: WorkerSpec
    workers: int = 2
    address: str | None = None
    max_retries: int = 2
    cpus_per_worker: float = 1.0
    threads: int | None = None

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers: expected >= 1, got {self.workers}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries: expected >= 0, got {self.max_retries}")
        if self.cpus_per_worker <= 0:
            raise ValueError(f"worker_cpus: expected > 0, got {self.cpus_per_worker}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads: expected >= 1, got {self.threads}")
        self.spec.check_picklable()

    @asynccontextmanager
    async def open(
        self,
        configs: Sequence[SolverConfig],
        load_model: Callable[[], Model],
        concurrency: int,
        budget: Budget | None,
    ) -> AsyncIterator[EpisodeFn]:
        """Start Ray (if needed) and the workers; the driver's `load_model` is not used. The
        workers must fit the cluster's CPUs (else one RayConnectError line, not a silent
        wait), and a joined cluster's head is watched (`HeadWatch`) while the run goes on."""
        ray = _ray()
        with _stdout_to_stderr():
            started, target, workers = self._init(ray)
            watch = HeadWatch(target).start() if started and target.address else None
            pool = _Pool(ray, self, workers, [c.name for c in configs], (concurrency, budget))
            try:
                self._fits(ray, target, workers)
                self._wait_note(ray, target, workers)
                await pool.start()
                yield pool.solve
            finally:
                if watch is not None:
                    watch.stop()
                pool.close()
                if started:
                    ray.shutdown()

    def _init(self, ray: Any) -> tuple[bool, Target, int]:
        """Join the cluster or start local Ray: whether this call did (and so shuts it down),
        the target, and how many workers to run (fewer than asked on a local start whose
        cores they do not fit, so a run never has more llama.cpp threads than cores)."""
        if ray.is_initialized():
            return False, Target(None, "the Ray instance already initialised"), self.workers
        target = find_target(self.address)
        if target.address is not None:
            join(ray, target)
            return True, target, self.workers
        workers = local_workers(self.workers, self.cpus_per_worker, usable_cores())
        start_local(ray, max(1, math.ceil(workers * self.cpus_per_worker)))
        return True, target, workers

    def _fits(self, ray: Any, target: Target, workers: int) -> None:
        """RayConnectError when the cluster has fewer CPUs than the workers reserve (Ray
        would wait for them forever, silently)."""
        have = float(ray.cluster_resources().get("CPU", 0.0))
        check_cpus(workers, self.cpus_per_worker, have, _where(target))

    def _wait_note(self, ray: Any, target: Target, workers: int) -> None:
        """One line on stderr when the workers must wait for CPUs another run holds (a
        second bench on a busy cluster), instead of waiting silently until it ends."""
        have = float(ray.cluster_resources().get("CPU", 0.0))
        free = float(ray.available_resources().get("CPU", 0.0))
        say_if_waiting(workers, self.cpus_per_worker, (free, have), _where(target))

    def check_cluster(self) -> None:
        """Before a command creates its files: the cluster to join can be reached and
        accepts this machine (`preflight`), each failure one RayConnectError line; nothing
        is checked when Ray is already initialised or starts here."""
        if _ray().is_initialized():
            return
        target = find_target(self.address)
        if target.address is not None:
            preflight(target)


def _where(target: Target) -> str:
    return f"the Ray cluster at {target.address}" if target.address else "the Ray instance"


class _Pool:
    """The workers, and a queue of free slots (each worker `concurrency` times)."""

    def __init__(
        self,
        ray: Any,
        backend: RayBackend,
        workers: int,
        names: list[str],
        episodes: tuple[int, Budget | None],
    ) -> None:
        concurrency, budget = episodes
        self._ray = ray
        self._budget = budget
        self._backend = backend
        self._workers = workers
        self._names = names
        self._actor_cls = ray.remote(EpisodeWorker).options(
            num_cpus=backend.cpus_per_worker, max_restarts=0, max_task_retries=0
        )
        self._actors: list[Any] = []
        self._free: asyncio.Queue[int] = asyncio.Queue()
        self._concurrency = concurrency

    def _new(self) -> Any:
        return self._actor_cls.remote(self._backend.spec, self._names, self._backend.threads)

    async def _ready(self, actor: Any) -> None:
        """Wait for a worker; one that could not start is a RayConnectError line."""
        try:
            _, node, _, broken = await actor.ready.remote()
        except self._ray.exceptions.RayActorError as exc:
            raise RayConnectError(worker_died(self._ray, exc)) from None
        if broken is not None:
            raise RayConnectError(
                f"a Ray worker on node {node} could not build its model and solvers: "
                f"{broken}; {NODE_HINT}"
            )

    async def start(self) -> None:
        self._actors = [self._new() for _ in range(self._workers)]
        await asyncio.gather(*(self._ready(a) for a in self._actors))
        for _ in range(self._concurrency):
            for i in range(len(self._actors)):
                self._free.put_nowait(i)

    async def _replace(self, slot: int, dead: Any) -> None:
        """A fresh worker in `slot` unless another episode of the dead one replaced it."""
        if self._actors[slot] is not dead:
            return
        self._ray.kill(dead, no_restart=True)
        self._actors[slot] = self._new()
        await self._ready(self._actors[slot])

    async def solve(self, cfg: SolverConfig, task: Task, key: ResultKey) -> ResultRecord:
        """Solve on a free worker; a worker death replaces it and retries, boundedly."""
        ep = Episode(cfg.name, task, key, self._budget)
        errors = self._ray.exceptions
        deaths: list[str] = []
        for _ in range(self._backend.max_retries + 1):
            slot = await self._free.get()
            actor = self._actors[slot]
            try:
                return await actor.solve.remote(ep)
            except errors.RayActorError as exc:
                deaths.append(type(exc).__name__)
                await self._replace(slot, actor)
            except errors.RayTaskError as exc:  # not the solver's (solve_episode records those)
                return _failed(key, f"worker error: {exc}")
            finally:
                self._free.put_nowait(slot)
        kinds = ", ".join(sorted(set(deaths)))
        return _failed(key, f"worker died on each of {len(deaths)} tries ({kinds})")

    def close(self) -> None:
        for a in self._actors:
            self._ray.kill(a, no_restart=True)


@dataclass(frozen=True)
class RayOptions:
    """The Ray-only options of a command: cluster address, CPUs and llama.cpp threads per
    worker (None: as many as its CPUs)."""

    address: str | None = None
    worker_cpus: float = 1.0
    threads: int | None = None

    def check(self) -> None:
        """ValueError naming the option that is out of range."""
        if self.worker_cpus <= 0:
            raise ValueError(f"worker-cpus: expected > 0, got {self.worker_cpus}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads: expected >= 1, got {self.threads}")


def _only_with_ray(opts: RayOptions) -> None:
    if opts.address is not None:
        raise ValueError("address: a Ray cluster address, only with backend ray")
    if opts.worker_cpus != 1.0:
        raise ValueError("worker-cpus: CPUs per Ray worker, only with backend ray")
    if opts.threads is not None:
        raise ValueError("threads: llama.cpp threads per Ray worker, only with backend ray")


def check_backend(kind: str, *, workers: int = 2, ray: RayOptions | None = None) -> None:
    """ValueError for a backend other than "asyncio" or "ray", Ray options without Ray or
    fewer than one worker; MissingExtra if "ray" is named and the extra is missing."""
    if kind not in ("asyncio", "ray"):
        raise ValueError(f"backend: expected asyncio or ray, got {kind!r}")
    opts = ray or RayOptions()
    if kind == "asyncio":
        _only_with_ray(opts)
    if workers < 1:
        raise ValueError(f"workers: expected >= 1, got {workers}")
    opts.check()
    if kind == "ray":
        _ray()  # a missing extra fails here, before any work


def episode_backend(
    kind: str, spec: WorkerSpec, *, workers: int = 2, ray: RayOptions | None = None
) -> RayBackend | Literal["asyncio"]:
    """The backend a command names: "asyncio" (this process) or "ray" (worker actors built
    from `spec`); errors as `check_backend`, and a cluster that cannot be joined is a
    RayConnectError line here, before the command creates its result store."""
    check_backend(kind, workers=workers, ray=ray)
    if kind == "ray":
        o = ray or RayOptions()
        backend = RayBackend(
            spec,
            workers=workers,
            address=o.address,
            cpus_per_worker=o.worker_cpus,
            threads=o.threads,
        )
        with _stdout_to_stderr():
            backend.check_cluster()  # before the command creates its store
        return backend
    return "asyncio"
