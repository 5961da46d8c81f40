"""What the report reads from run traces: where a result's trace is, and its interventions.

A stored trace path is relative to the directory the bench ran in; the report looks for it
there (the current directory), beside the store and one level above the store (the default
layout: `results/results.sqlite` and `runs/bench/...` under one project directory).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from overseer.bench._export import stored_trace
from overseer.bench._store import ResultRecord
from overseer.runtime import read_trace

Intervention = tuple[str, str]  # (trigger, action)


def trace_roots(store: Path | None) -> list[Path]:
    """Directories a relative trace path may be relative to, most likely first."""
    roots = [Path.cwd()]
    if store is not None:
        base = store.resolve().parent
        roots += [base, base.parent]
    return roots


def find_trace(rec: ResultRecord, roots: Sequence[Path]) -> Path | None:
    """The result's trace file on this machine, or None (none stored, or no longer there)."""
    stored = stored_trace(rec)
    if stored is None:
        return None
    p = Path(stored)
    candidates = [p] if p.is_absolute() else [root / p for root in roots]
    return next((c for c in candidates if c.is_file()), None)


def load_events(path: Path) -> list[dict[str, Any]]:
    """Every event of a trace file; ValueError naming the file and line when one is bad."""
    return list(read_trace(path))


#: trace events that show a mechanism acted on a run (a plug-in's verdict, a rule, a rollback)
ACT_EVENTS = frozenset({"verdict", "rule", "rollback"})


def trace_acted(rec: ResultRecord, roots: Sequence[Path]) -> bool | None:
    """Whether the result's run trace holds a verdict, a rule or a rollback; None when there is
    no trace (a direct call keeps none, or the file is gone)."""
    path = find_trace(rec, roots)
    if path is None:
        return None
    return any(e.get("event") in ACT_EVENTS for e in load_events(path))


def acted_counts(
    records: Iterable[ResultRecord], roots: Sequence[Path]
) -> dict[str, tuple[int, int]]:
    """Per configuration with traces found: (runs in which a mechanism acted, runs traced)."""
    out: dict[str, tuple[int, int]] = {}
    for r in records:
        hit = trace_acted(r, roots)
        if hit is not None:
            k, n = out.get(r.key.config, (0, 0))
            out[r.key.config] = (k + hit, n + 1)
    return out


#: what each rule of the rule tier did, as the report names it
RULE_ACTIONS = {
    "purification": "purified",
    "masking": "masked",
    "loop_breaker": "loop refused",
    "budget": "budget",
    "grounding": "answer grounded",
}


def interventions(events: Iterable[Mapping[str, Any]]) -> Counter[Intervention]:
    """(trigger, action) counts of what a run's plug-ins did (approvals are not written). A
    rule of the rule tier is named by what it did (purified, masked, loop refused, budget),
    its trigger `PLUGIN rules`; the verdict a rule gave (its note is the rule) is that same
    action, not counted twice. Any other verdict is the plug-in that gave it, with the
    SupervisorAgent's filter context (error, excessive, inefficient, synthesis) when one
    flagged the same step, and the verdict's action."""
    context: dict[tuple[Any, Any, Any], str] = {}
    out: Counter[Intervention] = Counter()
    for e in events:
        where = (e.get("agent"), e.get("round"), e.get("step"))
        if e.get("event") == "supervision" and e.get("context"):
            context[where] = str(e["context"])
        elif e.get("event") == "rule":
            rule = str(e.get("rule", "?"))
            out[(f"{e.get('by', '?')} rules", RULE_ACTIONS.get(rule, rule))] += 1
        elif e.get("event") == "verdict" and e.get("note") in RULE_ACTIONS:
            continue
        elif e.get("event") == "verdict":
            by = str(e.get("by", "?"))
            ctx = context.get(where)
            out[(f"{by}:{ctx}" if ctx else by, str(e.get("action", "?")))] += 1
    return out
