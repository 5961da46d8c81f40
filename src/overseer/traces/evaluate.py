"""Evaluation of attribution methods on annotated logs: a resumable SQLite store, seeded
cross-validation by log for the methods that learn, accuracy with Wilson 95% intervals and
exact McNemar tests between methods on the same logs."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from overseer.errors import PathError, check_sqlite_file, ensure_dir
from overseer.stats import mcnemar_exact, wilson
from overseer.traces._attr_types import Attribution, Method
from overseer.traces._types import Trajectory

#: the columns that name one attribution (the table's primary key)
_KEY = ("method", "model", "split", "log_id", "with_truth", "seed")
#: what the method answered and what that cost (the fields of its `Attribution`)
_ANSWER = (
    "agent",
    "step",
    "reason",
    "outcome",
    "notes",
    "prompt_tokens",
    "completion_tokens",
    "calls",
    "seconds",
)
_COLUMNS = (*_KEY, *_ANSWER, "agent_ok", "step_ok")


@dataclass(frozen=True)
class Row:
    """One stored attribution of one log by one method (and model) in one setting."""

    method: str
    model: str
    split: str
    log_id: str
    with_truth: bool
    seed: int
    attribution: Attribution
    agent_ok: bool
    step_ok: bool


class ResultStore:
    """Attributions in one SQLite file; a run that is started again skips what is stored."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        ensure_dir(self.path.parent, "attribution store folder")
        check_sqlite_file(self.path, "attribution store")
        cols = ", ".join(_COLUMNS)
        try:
            self.db = sqlite3.connect(self.path)
            self.db.execute(
                f"CREATE TABLE IF NOT EXISTS attribution ({cols}, PRIMARY KEY ({', '.join(_KEY)}))"
            )
        except sqlite3.DatabaseError as exc:  # not SQLite, locked, read-only, disk full
            raise PathError(
                f"attribution store {self.path}: cannot use it as SQLite ({exc})"
            ) from None

    def has(self, method: str, model: str, split: str, log_id: str, truth: bool, seed: int) -> bool:
        cur = self.db.execute(
            f"SELECT 1 FROM attribution WHERE {' AND '.join(f'{k}=?' for k in _KEY)}",
            (method, model, split, log_id, int(truth), seed),
        )
        return cur.fetchone() is not None

    def put(self, row: Row) -> None:
        answer = asdict(row.attribution) | {"notes": json.dumps(row.attribution.notes)}
        values = [getattr(row, k) for k in _KEY] + [answer[k] for k in _ANSWER]
        values += [row.agent_ok, row.step_ok]
        self.db.execute(
            f"INSERT OR REPLACE INTO attribution VALUES ({', '.join('?' * len(_COLUMNS))})",
            [int(v) if isinstance(v, bool) else v for v in values],
        )
        self.db.commit()

    def rows(self) -> list[Row]:
        """Every stored row."""
        out = []
        for r in self.db.execute(f"SELECT {', '.join(_COLUMNS)} FROM attribution"):
            d = dict(zip(_COLUMNS, r, strict=True))
            answer = {k: d[k] for k in _ANSWER} | {"notes": json.loads(d["notes"])}
            key = {k: d[k] for k in _KEY} | {"with_truth": bool(d["with_truth"])}
            a = Attribution(d["log_id"], d["method"], **answer)
            agent_ok, step_ok = bool(d["agent_ok"]), bool(d["step_ok"])
            out.append(Row(**key, attribution=a, agent_ok=agent_ok, step_ok=step_ok))
        return out

    def close(self) -> None:
        self.db.close()


def folds(logs: Sequence[Trajectory], k: int, seed: int) -> list[list[Trajectory]]:
    """`logs` dealt into `k` seeded folds (by log: a log's steps never straddle folds)."""
    order = list(logs)
    random.Random(seed).shuffle(order)
    return [order[i::k] for i in range(k)]


def run_method(
    method: Method,
    logs: Sequence[Trajectory],
    *,
    split: str,
    model: str = "-",
    with_truth: bool = False,
    seed: int = 0,
    train: Callable[[Trajectory], list[Trajectory]] | None = None,
    store: ResultStore | None = None,
    on_row: Callable[[Row], None] | None = None,
) -> list[Row]:
    """Attribute every log (skipping those in `store`). `train(log)` gives the logs a learning
    method is fitted on for that log (a cross-validation fold, another split)."""
    out: list[Row] = []
    fitted_on: int | None = None
    for t in logs:
        if store and store.has(method.name, model, split, t.id, with_truth, seed):
            continue
        if train is not None:
            tr = train(t)
            if id(tr) != fitted_on:  # refit only when the training set changes
                fit = method.fit
                fit(tr, with_truth=with_truth) if _takes_truth(method) else fit(tr)  # type: ignore[call-arg]
                fitted_on = id(tr)
        a = asyncio.run(method.attribute(t, with_truth=with_truth))
        ok = (a.agent_correct(t), a.step_correct(t))
        row = Row(method.name, model, split, t.id, with_truth, seed, a, *ok)
        if store:
            store.put(row)
        if on_row:
            on_row(row)
        out.append(row)
    return out


def _takes_truth(method: Method) -> bool:
    import inspect

    return "with_truth" in inspect.signature(method.fit).parameters


def cv_train(
    logs: Sequence[Trajectory], k: int = 5, seed: int = 0
) -> Callable[[Trajectory], list[Trajectory]]:
    """For each log, the other folds of a seeded k-fold split by log (the same list object for
    every log of one fold, so a method is refitted k times)."""
    parts = folds(logs, k, seed)
    train_of = {}
    for i, part in enumerate(parts):
        rest = [t for j, p in enumerate(parts) if j != i for t in p]
        for t in part:
            train_of[t.id] = rest
    return lambda t: train_of[t.id]


@dataclass(frozen=True)
class Accuracy:
    """Agent- and step-level accuracy of one method in one setting, with Wilson 95% intervals."""

    method: str
    model: str
    split: str
    with_truth: bool
    n: int
    agent: float
    agent_lo: float
    agent_hi: float
    step: float
    step_lo: float
    step_hi: float
    tokens_per_log: float
    seconds_per_log: float
    outcomes: dict[str, int]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def accuracy(rows: Iterable[Row]) -> list[Accuracy]:
    """One Accuracy per (method, model, split, with_truth) group of `rows`."""
    groups: dict[tuple[str, str, str, bool], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.method, r.model, r.split, r.with_truth), []).append(r)
    out = []
    for (m, mod, sp, wt), rs in sorted(groups.items()):
        n = len(rs)
        ka, ks = sum(r.agent_ok for r in rs), sum(r.step_ok for r in rs)
        outc: dict[str, int] = {}
        for r in rs:
            outc[r.attribution.outcome] = outc.get(r.attribution.outcome, 0) + 1
        toks = sum(r.attribution.prompt_tokens + r.attribution.completion_tokens for r in rs)
        secs = sum(r.attribution.seconds for r in rs)
        agent, step = (ka / n, *wilson(ka, n)), (ks / n, *wilson(ks, n))
        out.append(Accuracy(m, mod, sp, wt, n, *agent, *step, toks / n, secs / n, outc))
    return out


@dataclass(frozen=True)
class Comparison:
    """Two methods on the logs both attributed in one setting: exact McNemar p-values."""

    a: str
    b: str
    split: str
    with_truth: bool
    n: int
    agent_wins: int
    agent_losses: int
    agent_p: float
    step_wins: int
    step_losses: int
    step_p: float


def compare(rows: Sequence[Row], a: str, b: str, split: str, with_truth: bool) -> Comparison:
    """`a` against `b` (method names, or `method@model`) on their common logs."""

    def key(r: Row) -> str:
        return r.method if "@" not in a + b else f"{r.method}@{r.model}"

    pick = [r for r in rows if r.split == split and r.with_truth == with_truth]
    ra = {r.log_id: r for r in pick if key(r) == a}
    rb = {r.log_id: r for r in pick if key(r) == b}
    common = sorted(set(ra) & set(rb))
    aw = sum(ra[i].agent_ok and not rb[i].agent_ok for i in common)
    al = sum(rb[i].agent_ok and not ra[i].agent_ok for i in common)
    sw = sum(ra[i].step_ok and not rb[i].step_ok for i in common)
    sl = sum(rb[i].step_ok and not ra[i].step_ok for i in common)
    agent, step = (aw, al, mcnemar_exact(aw, al)), (sw, sl, mcnemar_exact(sw, sl))
    return Comparison(a, b, split, with_truth, len(common), *agent, *step)
