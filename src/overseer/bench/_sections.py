"""The report's sections, each built from the stored results (and, for pruning and the monitor,
the files those plug-ins save): a title, a line of text, images and a table."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score, roc_curve

from overseer.bench import _plots
from overseer.bench._export import outcome, tokens_by_kind
from overseer.bench._report import SummaryRow
from overseer.bench._store import ResultRecord


@dataclass(frozen=True)
class Cell:
    """A table cell: its text, and a link (relative to the report) when it has one."""

    text: str
    href: str | None = None


@dataclass
class Section:
    """One part of the report; images are (file name, PNG bytes, alt text)."""

    title: str
    text: str = ""
    images: list[tuple[str, bytes, str]] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    rows: list[list[Cell]] = field(default_factory=list)


def _f(x: float, fmt: str = ".3f") -> str:
    return "-" if math.isnan(x) else f"{x:{fmt}}"


def summary_section(rows: Sequence[SummaryRow], baseline: str | None) -> Section:
    """Accuracy with its interval against net tokens, and the summary table."""
    s = Section(
        "Accuracy and tokens",
        "Accuracy is over answered tasks (errors are their own "
        "column; unparsed: answered, but no answer could be read from it), with its 95% Wilson "
        "interval; tokens are net: every actor's calls."
        + (f" Token ratios are against {baseline}." if baseline else ""),
    )
    s.images.append(
        (
            "accuracy_tokens.png",
            _plots.accuracy_tokens(rows),
            "accuracy against net tokens per configuration",
        )
    )
    s.header = [
        "suite",
        "model",
        "config",
        "n",
        "errors",
        "unparsed",
        "accuracy",
        "95% CI",
        "mean tokens",
        "vs baseline",
        "latency s",
    ]
    for r in rows:
        s.rows.append(
            [
                Cell(x)
                for x in (
                    *r.lead_cells(),
                    _f(r.accuracy),
                    f"{_f(r.ci_low, '.2f')}–{_f(r.ci_high, '.2f')}",
                    f"{r.mean_tokens:.0f}",
                    r.vs_baseline(),
                    f"{r.mean_latency_s:.2f}",
                )
            ]
        )
    return s


def column_of(rec: ResultRecord, many_models: bool) -> str:
    """The configuration column a result belongs to (with its model when several are shown)."""
    return f"{rec.key.config} ({rec.key.model})" if many_models else rec.key.config


def kinds_section(records: Sequence[ResultRecord], many_models: bool) -> Section:
    """Mean tokens per task of each configuration, stacked by actor kind."""
    sums: dict[str, Counter[str]] = defaultdict(Counter)
    counts: Counter[str] = Counter()
    for r in records:
        col = column_of(r, many_models)
        sums[col].update(tokens_by_kind(r))
        counts[col] += 1
    means = {c: {k: v / counts[c] for k, v in sums[c].items()} for c in sums}
    s = Section("Tokens by actor kind", "Mean tokens per task, by who spent them.")
    s.images.append(("tokens_by_kind.png", _plots.tokens_by_kind(means), "tokens by actor kind"))
    kinds = [k for k in next(iter(sums.values()), {}) if any(means[c][k] for c in means)]
    s.header = ["config", *kinds]
    s.rows = [[Cell(c), *(Cell(f"{means[c][k]:.0f}") for k in kinds)] for c in means]
    return s


def interventions_section(per: Mapping[str, Counter[tuple[str, str]]]) -> Section:
    """What the plug-ins did, by trigger and action, from the results' traces."""
    total = sum(sum(c.values()) for c in per.values())
    s = Section(
        "Interventions",
        "What the plug-ins did, read from the runs' traces: a rule of the rule tier by what it "
        "did (purified, masked, loop refused, budget), any other verdict but approve by the "
        "plug-in that gave it (and the supervisor's filter context) and its action.",
    )
    if total == 0:
        s.text += " No plug-in intervened in these results."
        return s
    s.images.append(
        ("interventions.png", _plots.interventions(per), "interventions by trigger and action")
    )
    s.header = ["config", "trigger", "action", "count"]
    for cfg, counts in per.items():
        for (trigger, action), n in sorted(counts.items()):
            s.rows.append([Cell(cfg), Cell(trigger), Cell(action), Cell(str(n))])
    return s


def _grid(records: Sequence[ResultRecord], many_models: bool, title: str) -> bytes:
    configs = list(dict.fromkeys(column_of(r, many_models) for r in records))
    cells: dict[str, dict[str, ResultRecord]] = defaultdict(dict)
    for r in records:
        cells[f"{r.key.task_id} s{r.key.seed}"][column_of(r, many_models)] = r
    codes = np.array(
        [
            [_plots.OUTCOME_CODES[outcome(row[c]) if c in row else "missing"] for c in configs]
            for row in cells.values()
        ],
        dtype=float,
    )
    return _plots.outcome_grid(list(cells), configs, codes, title)


def outcomes_section(
    records: Sequence[ResultRecord], many_models: bool, link: Callable[[ResultRecord], str | None]
) -> Section:
    """Per suite, the grid of tasks x configurations (right / wrong / error); the table's
    cells link to their run's trace page when there is one."""
    s = Section(
        "Per-task outcomes",
        "Each (task, seed) under each configuration: right, "
        "wrong, or error (no answer). A cell links to its run's trace.",
    )
    suites: dict[str, list[ResultRecord]] = defaultdict(list)
    for r in records:
        suites[r.key.suite].append(r)
    for i, (suite, recs) in enumerate(suites.items()):
        s.images.append(
            (
                f"outcomes_{i}.png",
                _grid(recs, many_models, f"per-task outcomes: {suite}"),
                f"per-task outcomes on {suite}",
            )
        )
    configs = list(dict.fromkeys(column_of(r, many_models) for r in records))
    s.header = ["suite", "task", "seed", *configs]
    rows: dict[tuple[str, str, int], dict[str, ResultRecord]] = defaultdict(dict)
    for r in records:
        rows[(r.key.suite, r.key.task_id, r.key.seed)][column_of(r, many_models)] = r
    for (suite, task, seed), row in rows.items():
        s.rows.append(
            [
                Cell(suite),
                Cell(task),
                Cell(str(seed)),
                *(Cell(outcome(row[c]), link(row[c])) if c in row else Cell("") for c in configs),
            ]
        )
    return s


def _json(path: Path, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{what} {path}: cannot read ({exc})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{what} {path}: expected a JSON object")
    return doc


def prune_section(files: Sequence[Path]) -> Section:
    """AgentPrune's learned keep-probabilities, one heatmap per training record (the
    `.train.json` beside a pruned spec; the spec's own path is accepted too)."""
    s = Section(
        "Pruning: learned edge probabilities",
        "Keep-probabilities AgentPrune learned for each candidate edge (blank: not a candidate).",
    )
    for i, f in enumerate(files):
        side = f if f.name.endswith(".train.json") else f.with_suffix(".train.json")
        masks = _json(side, "--prune").get("masks")
        if not isinstance(masks, dict) or "agents" not in masks:
            raise ValueError(
                f"--prune {side}: no 'masks' with agents (expected the .train.json "
                "that `overseer prune` writes beside the pruned spec)"
            )
        s.images.append(
            (
                f"prune_{i}.png",
                _plots.edge_heatmap(masks, side.name),
                f"learned edge probabilities of {side.name}",
            )
        )
    return s


def resets_points(records: Sequence[ResultRecord]) -> dict[str, tuple[float, float, int]]:
    """Per configuration of game results (those whose extra has `resets`): mean resets,
    success rate and number of games (errored games left out)."""
    by: dict[str, list[ResultRecord]] = defaultdict(list)
    for r in records:
        if r.error is None and "resets" in r.extra:
            by[r.key.config].append(r)
    return {
        c: (
            float(np.mean([float(r.extra["resets"] or 0) for r in rs])),  # type: ignore[arg-type]
            float(np.mean([r.correct for r in rs])),
            len(rs),
        )
        for c, rs in by.items()
    }


def _roc_of(role: str, data: Mapping[str, Any], where: str) -> tuple:
    lowest = np.asarray(data["lowest"], dtype=float)
    failed = ~np.asarray(data["success"], dtype=bool)
    if failed.all() or not failed.any():
        raise ValueError(f"{where}: role {role}: validation games all of one outcome, no ROC")
    fpr, tpr, _ = roc_curve(failed, -lowest)
    flagged = lowest < float(data["tau"])
    point = (
        float((flagged & ~failed).sum() / (~failed).sum()),
        float((flagged & failed).sum() / failed.sum()),
    )
    return fpr, tpr, float(roc_auc_score(failed, -lowest)), point


def monitor_section(records: Sequence[ResultRecord], files: Sequence[Path]) -> Section | None:
    """Game success against resets (from the stored games) and, per monitor file, the ROC of
    its chosen monitors on the validation games; None when there is neither."""
    points = resets_points(records)
    if not points and not files:
        return None
    s = Section(
        "Monitor",
        "Success rate against resets per configuration of stored games; "
        "the ROC of each role's monitor on the validation games (dot: its threshold).",
    )
    if points:
        s.images.append(
            ("monitor_resets.png", _plots.success_resets(points), "success against resets")
        )
    for i, f in enumerate(files):
        jpath = f if f.suffix == ".json" else f.with_name(f.name + ".json")
        roc = _json(jpath, "--monitor").get("meta", {}).get("validation_roc")
        if not isinstance(roc, dict) or not roc:
            raise ValueError(
                f"--monitor {jpath}: no validation estimates (saved by an older "
                "`overseer monitor train`: train it again)"
            )
        try:
            curves = {role: _roc_of(role, d, f"--monitor {jpath}") for role, d in roc.items()}
        except (KeyError, TypeError) as exc:
            raise ValueError(f"--monitor {jpath}: bad validation_roc ({exc})") from None
        s.images.append((f"monitor_roc_{i}.png", _plots.roc(curves), f"ROC of {jpath.name}"))
    return s
