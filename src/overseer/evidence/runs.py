"""Running a claim: its steps through the library's experiment functions, each result in the
claim's resumable store, and the parts (tables) its page shows."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from overseer import models
from overseer.bench import ResultRecord, ResultStore, SolverConfig, run_experiment
from overseer.evidence.claims import Claim
from overseer.models import Model
from overseer.tasks import Task, load_suite


@dataclass(frozen=True)
class Part:
    """One table of a page: configurations on the same tasks, compared with `baseline`."""

    title: str
    records: Sequence[ResultRecord]
    configs: Sequence[str]
    baseline: str
    labels: Mapping[str, str] = field(default_factory=dict)  # config -> name on the page
    metric: str = "accuracy"
    note: str = ""
    #: config -> whether its mechanism acted on a record, where that is not a verdict, rule
    #: or rollback in the trace (a pruned team, MASFly's own team); None: not known
    acted_by: Mapping[str, Callable[[ResultRecord], bool | None]] = field(default_factory=dict)

    def label(self, config: str) -> str:
        return self.labels.get(config, config)


@dataclass
class Context:
    """What every step of a claim run needs: model, sizes, seed, where results go."""

    claim: Claim
    size_name: str
    model: str
    out_dir: Path
    seed: int = 0
    progress: bool = True
    prompt_cache: bool = True
    ran: int = 0  # episodes run by this invocation (0: the page only)

    def __post_init__(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.loader: Callable[[], Model] = cache(self._load)

    def _load(self) -> Model:
        return models.load_model(self.model, prompt_cache=self.prompt_cache)

    @property
    def size(self) -> Mapping[str, int]:
        return self.claim.size(self.size_name)

    @property
    def stem(self) -> str:
        """CLAIM-SIZE, with `-nocache` when the prefix cache is off: runs with and without it
        never share a store (the cache changes outputs, so results would not be comparable)."""
        return f"{self.claim.name}-{self.size_name}" + ("" if self.prompt_cache else "-nocache")

    @property
    def store(self) -> Path:
        """The claim's result store (one per claim, size and cache setting, never mixed)."""
        return self.out_dir / f"{self.stem}.sqlite"

    def artefact(self, name: str) -> Path:
        """A file this claim writes next to its store (monitor file, pruned spec, ...)."""
        return self.out_dir / f"{self.stem}-{name}"

    def close(self) -> None:
        if self.loader.cache_info().currsize:  # type: ignore[attr-defined]
            self.loader().close()


def run_configs(
    ctx: Context, configs: Sequence[SolverConfig], tasks: Sequence[Task]
) -> list[ResultRecord]:
    """Run the configurations on the tasks (stored, resumable); their records, in task order."""
    with ResultStore(ctx.store) as store:
        s = asyncio.run(
            run_experiment(
                configs=list(configs),
                tasks=list(tasks),
                seeds=[ctx.seed],
                model_name=ctx.model,
                load_model=ctx.loader,
                store=store,
                progress=ctx.progress,
            )
        )
        ctx.ran += s.ran
        return stored(store, ctx, [c.name for c in configs], tasks)


def stored(
    store: ResultStore, ctx: Context, names: Sequence[str], tasks: Sequence[Task]
) -> list[ResultRecord]:
    """The stored records of these configurations on these tasks (this model and seed)."""
    ids = {(t.suite, t.id) for t in tasks}
    return [
        r
        for r in store.records(model=ctx.model, configs=list(names))
        if (r.key.suite, r.key.task_id) in ids and r.key.seed == ctx.seed
    ]


def suite_tasks(suite: str, split: str, limit: int, seed: int) -> list[Task]:
    """The first `limit` tasks of a suite's split (ValueError when the split is shorter)."""
    tasks = load_suite(suite, split=split, seed=seed, limit=limit)  # type: ignore[arg-type]
    if len(tasks) < limit:
        raise ValueError(f"{suite}/{split}: has {len(tasks)} tasks, the size asks for {limit}")
    return tasks


@dataclass(frozen=True)
class RunLog:
    """The invocations that ran episodes for a claim: when, how long, the command."""

    path: Path

    def entries(self) -> list[dict[str, object]]:
        if not self.path.is_file():
            return []
        data = json.loads(self.path.read_text())
        if not isinstance(data, list):
            raise ValueError(f"{self.path}: expected a JSON list of runs")
        return data

    def add(self, *, command: str, seconds: float, episodes: int) -> None:
        runs = self.entries()
        runs.append(
            {
                "finished": time.strftime("%Y-%m-%d %H:%M"),
                "command": command,
                "seconds": round(seconds, 1),
                "episodes": episodes,
            }
        )
        self.path.write_text(json.dumps(runs, indent=1))

    def seconds(self) -> float:
        return sum(float(str(e["seconds"])) for e in self.entries())
