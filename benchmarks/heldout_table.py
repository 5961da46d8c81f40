"""The held-out table of issue 39 from one result store: the rule tier paired with the team.

    python benchmarks/heldout_table.py results/heldout/browse-heldout-30.sqlite browse@30

Prints n, accuracy per arm, wins/losses/ties with the exact McNemar p, the paired accuracy
difference with its bootstrap interval and one-sided 95% lower bound (the non-inferiority
test at a 10-point margin), the net-token ratio with its interval, the split by the fact
table's depth, the commits, and every discordant pair with both answers.
"""

from __future__ import annotations

import json
import sqlite3
import sys

import numpy as np

from overseer.stats import mcnemar_exact
from overseer.tasks import load_suite

TEAM, TIER = "baseline", "baseline+supervise:rules"


def _pairs(store: str) -> list[tuple[str, tuple, tuple]]:
    sql = "select config, task_id, correct, prompt_tokens + completion_tokens, answer, provenance"
    by: dict[str, dict[str, tuple]] = {}
    for c, t, ok, tok, ans, prov in sqlite3.connect(store).execute(f"{sql} from results"):
        by.setdefault(t, {})[c] = (ok, tok, ans, json.loads(prov or "{}").get("commit", "?"))
    return [(t, v[TEAM], v[TIER]) for t, v in sorted(by.items()) if TEAM in v and TIER in v]


def main(store: str, suite: str) -> None:
    tasks = {t.id: t for t in load_suite(suite, split="all")}
    pairs = _pairs(store)
    n = len(pairs)
    a, b = (np.array([p[k][0] for p in pairs]) for k in (1, 2))
    ta, tb = (np.array([p[k][1] for p in pairs], float) for k in (1, 2))
    wins, losses = int(((b == 1) & (a == 0)).sum()), int(((b == 0) & (a == 1)).sum())
    idx = np.random.default_rng(0).integers(0, n, (10_000, n))
    d, r = (b[idx] - a[idx]).mean(1), tb[idx].sum(1) / ta[idx].sum(1)
    print(f"{suite}: n={n} paired; team {a.sum()}/{n}, rule tier {b.sum()}/{n}")
    print(f"  wins/losses/ties {wins}/{losses}/{n - wins - losses}, exact McNemar p = "
          f"{mcnemar_exact(wins, losses):.3f}")  # fmt: skip
    lo, hi, bound = np.quantile(d, [0.025, 0.975, 0.05])
    print(f"  difference {(b - a).mean():+.1%} [{lo:+.1%}, {hi:+.1%}], one-sided 95% lower "
          f"bound {bound:+.1%}")  # fmt: skip
    rlo, rhi = np.quantile(r, [0.025, 0.975])
    print(f"  net tokens {tb.sum() / ta.sum():.2f}x [{rlo:.2f}, {rhi:.2f}]; per task team "
          f"{ta.mean():.0f}, tier {tb.mean():.0f}")  # fmt: skip
    for depth in sorted({t.meta["depth"] for t in tasks.values()}):
        sel = [i for i, p in enumerate(pairs) if tasks[p[0]].meta["depth"] == depth]
        if sel:
            print(f"  depth {depth}: n={len(sel)}, team {a[sel].sum()}, tier {b[sel].sum()}")
    print("  commits:", sorted({p[k][3] for p in pairs for k in (1, 2)}))
    for t, x, y in pairs:
        if x[0] != y[0]:
            print(f"  discordant {t} gold={tasks[t].answer} team={x[2][:40]!r} tier={y[2][:40]!r}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
