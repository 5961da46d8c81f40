"""The held-out table of issue 39: the rule tier paired with the team, per corpus and pooled.

    python benchmarks/heldout_table.py results/heldout/browse-heldout-30.sqlite:browse@30 \
        results/heldout/browse-heldout-31.sqlite:browse@31

For each STORE:SUITE and for all of them pooled: n, accuracy per arm, wins/losses/ties with
the exact McNemar p, the paired accuracy difference with Newcombe's score interval (95%) and
its one-sided 95% lower bound (non-inferiority at a 10-point margin; issue 48: a percentile
bootstrap cannot fall below 0 when a run has no loss, so its "non-inferior" was automatic
there), the net-token ratio with its bootstrap interval,
the split by the fact table's depth and the commits. Then every discordant pair read from its
two traces: per arm, the rules that fired, whether the gold fact was in the researcher's last
prompt, how many steps the researcher took, and its answer.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from overseer.bench.stats import newcombe_paired
from overseer.stats import mcnemar_exact
from overseer.tasks import Task, load_suite

TEAM, TIER = "baseline", "baseline+supervise:rules"
MARGIN = -0.10


@dataclass(frozen=True)
class Arm:
    """One arm's result for a task: right or not, net tokens, answer, commit, trace path."""

    ok: int
    tokens: int
    answer: str
    commit: str
    trace: str


Pair = tuple[Task, Arm, Arm]


def _pairs(store: str, suite: str) -> list[Pair]:
    tasks = {t.id: t for t in load_suite(suite, split="all")}
    sql = "select config, task_id, correct, prompt_tokens + completion_tokens, answer, provenance,"
    by: dict[str, dict[str, Arm]] = {}
    for c, t, ok, tok, ans, prov, extra in sqlite3.connect(store).execute(
        f"{sql} extra from results"
    ):
        commit = json.loads(prov or "{}").get("commit", "?")
        by.setdefault(t, {})[c] = Arm(ok, tok, ans, commit, json.loads(extra).get("trace", ""))
    return [(tasks[t], v[TEAM], v[TIER]) for t, v in sorted(by.items()) if TEAM in v and TIER in v]


def table(name: str, pairs: list[Pair]) -> None:
    """Print the paired table of `pairs` under `name`."""
    n = len(pairs)
    if n == 0:
        print(f"{name}: no task has both arms yet")
        return
    a, b = (np.array([p[k].ok for p in pairs]) for k in (1, 2))
    ta, tb = (np.array([p[k].tokens for p in pairs], float) for k in (1, 2))
    wins, losses = int(((b == 1) & (a == 0)).sum()), int(((b == 0) & (a == 1)).sum())
    idx = np.random.default_rng(0).integers(0, n, (10_000, n))
    d, r = (b[idx] - a[idx]).mean(1), tb[idx].sum(1) / ta[idx].sum(1)
    both = int(((a == 1) & (b == 1)).sum())
    lo, hi = newcombe_paired(both, wins, losses, n)
    bound = newcombe_paired(both, wins, losses, n, level=0.90)[0]  # one-sided 95%
    boot = float(np.quantile(d, 0.05))
    rlo, rhi = np.quantile(r, [0.025, 0.975])
    print(f"{name}: n={n} paired; team {a.sum()}/{n}, rule tier {b.sum()}/{n}")
    print(f"  wins/losses/ties {wins}/{losses}/{n - wins - losses}, exact McNemar p = "
          f"{mcnemar_exact(wins, losses):.3f}")  # fmt: skip
    verdict = "non-inferior" if bound > MARGIN else "non-inferiority not shown"
    print(f"  difference {(b - a).mean():+.1%} [{lo:+.1%}, {hi:+.1%}], one-sided 95% lower "
          f"bound {bound:+.1%} ({verdict} at a {MARGIN:.0%} margin; the percentile "
          f"bootstrap's bound was {boot:+.1%})")  # fmt: skip
    print(f"  net tokens {tb.sum() / ta.sum():.2f}x [{rlo:.2f}, {rhi:.2f}]; per task team "
          f"{ta.mean():.0f}, tier {tb.mean():.0f}")  # fmt: skip
    for depth in sorted({p[0].meta["depth"] for p in pairs}):
        sel = [i for i, p in enumerate(pairs) if p[0].meta["depth"] == depth]
        print(f"  depth {depth}: n={len(sel)}, team {a[sel].sum()}, tier {b[sel].sum()}")
    print("  commits:", sorted({p[k].commit[:7] for p in pairs for k in (1, 2)}))


def read_trace(path: str, gold: str) -> str:
    """One line on an arm's run: rules fired, whether the gold number is anywhere in the
    researcher's last prompt (a filler number can match too: read the trace to be sure)."""
    if not path or not Path(path).exists():
        return "trace missing"
    rules: Counter[str] = Counter()
    last_prompt, steps = "", 0
    for line in Path(path).read_text().splitlines():
        e = json.loads(line)
        if e.get("event") == "rule":
            rules[e.get("rule", "?")] += 1
        elif e.get("event") == "model_call" and e.get("gen_ai.agent.name") == "researcher":
            last_prompt = "\n".join(str(m.get("content", "")) for m in e.get("input", []))
            steps += 1
    fired = ", ".join(f"{k} {v}" for k, v in sorted(rules.items())) or "none"
    seen = "in" if gold in last_prompt else "NOT in"
    return f"{steps} researcher calls; rules: {fired}; gold number {seen} its last prompt"


def discordant(pairs: list[Pair]) -> None:
    """Every pair where one arm was right and the other wrong, read from both traces."""
    for task, x, y in pairs:
        if x.ok == y.ok:
            continue
        side = "tier won" if y.ok else "tier lost"
        print(f"- {task.id} ({side}, depth {task.meta['depth']}, gold {task.answer})")
        print(f"    team {x.answer[:40]!r}: {read_trace(x.trace, str(task.answer))}")
        print(f"    tier {y.answer[:40]!r}: {read_trace(y.trace, str(task.answer))}")


def main(args: list[str]) -> int:
    if not args or any(":" not in a for a in args):
        print("usage: heldout_table.py STORE:SUITE [STORE:SUITE ...]", file=sys.stderr)
        return 2
    pooled: list[Pair] = []
    for arg in args:
        store, suite = arg.rsplit(":", 1)
        pairs = _pairs(store, suite)
        table(suite, pairs)
        pooled += pairs
    if len(args) > 1:
        table("pooled", pooled)
    print("\ndiscordant pairs, read from their traces:")
    discordant(pooled)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
