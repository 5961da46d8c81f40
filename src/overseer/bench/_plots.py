"""The report's plots (matplotlib, Agg canvas, no display): each function gives PNG bytes.

Figures are made with `matplotlib.figure.Figure` directly, never pyplot, so no global figure
state is kept between calls and threads. matplotlib (the `bench` extra) is imported when a
plot is drawn, so a report's text and tables do not need it; without it a plot fails in one line.
"""

from __future__ import annotations

import io
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from overseer.bench._export import ACTOR_KINDS
from overseer.bench._report import SummaryRow
from overseer.errors import require

if TYPE_CHECKING:
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure

OUTCOME_CODES = {"right": 0, "wrong": 1, "error": 2, "missing": 3}
_OUTCOME_HEX = ["#2e8b57", "#d9534f", "#888888", "#ffffff"]
_KIND_COLOURS = [
    "#4c72b0",
    "#55a868",
    "#c44e52",
    "#8172b2",
    "#ccb974",
    "#64b5cd",
    "#e17c05",
    "#937860",
    "#bbbbbb",
]


def _mpl(module: str) -> Any:
    """matplotlib's `module`, imported on first plot, or MissingExtra naming the `bench` extra."""
    return require(f"matplotlib.{module}", "bench", "a report's plot")


def _figure(figsize: tuple[float, float]) -> Figure:
    """A new Figure (no pyplot)."""
    fig: Figure = _mpl("figure").Figure(figsize=figsize)
    return fig


def _outcome_colours() -> ListedColormap:
    """The outcome grid's colour map: right, wrong, error, missing."""
    cmap: ListedColormap = _mpl("colors").ListedColormap(_OUTCOME_HEX)
    return cmap


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes."""
    _mpl("backends.backend_agg").FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return buf.getvalue()


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats (fewer or equal tokens and higher accuracy),
    by increasing tokens. Points are (tokens, accuracy); NaN accuracies are left out."""
    order = sorted(
        (i for i, p in enumerate(points) if not math.isnan(p[1])),
        key=lambda i: (points[i][0], -points[i][1]),
    )
    front: list[int] = []
    best = -math.inf
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


def label_offsets(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Text offsets (points) for the labels of these data points. A point in the right half of
    the x span gets its label on its left (negative x offset: draw it right-aligned, see
    `label_ha`), so long labels stay inside the axes; a label whose point is on the same side,
    within 4% of the y span and 35% of the x span of an earlier one (a label is wide), goes one
    line higher, so labels of equal or near points stack instead of overlapping."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    span = (max(xs) - min(xs)) if xs else 0.0
    mid = (min(xs) + span / 2) if xs else 0.0
    dx = 0.35 * span or 1e-9
    dy = 0.04 * max(1.0, (max(ys) - min(ys)) if ys else 0.0)
    out: list[tuple[float, float]] = []
    for i, (x, y) in enumerate(points):
        left = span > 0 and x > mid
        k = sum(
            abs(x - a) <= dx and abs(y - b) <= dy and (o[0] < 0) == left
            for (a, b), o in zip(points[:i], out, strict=True)
        )
        out.append((-5.0 if left else 5.0, 5.0 + 10.0 * k))
    return out


def label_ha(offset: tuple[float, float]) -> str:
    """The horizontal alignment of a label placed with this offset."""
    return "right" if offset[0] < 0 else "left"


def accuracy_tokens(rows: Sequence[SummaryRow]) -> bytes:
    """Accuracy (95% Wilson interval) against mean net tokens, one panel per (suite, model),
    with the Pareto front drawn through the configurations no other one beats."""
    groups: dict[tuple[str, str], list[SummaryRow]] = {}
    for r in rows:
        groups.setdefault((r.suite, r.model), []).append(r)
    fig = _figure((6.4 * len(groups), 4.4))
    for ax, ((suite, model), rs) in zip(
        fig.subplots(1, len(groups), squeeze=False)[0], groups.items(), strict=True
    ):
        pts = [(r.mean_tokens, r.accuracy) for r in rs]
        shown = [(x, 0.0 if math.isnan(y) else y) for x, y in pts]
        for r, offset in zip(rs, label_offsets(shown), strict=True):
            ok = not math.isnan(r.accuracy)
            err = [[r.accuracy - r.ci_low], [r.ci_high - r.accuracy]] if ok else None
            ax.errorbar(
                r.mean_tokens,
                r.accuracy if ok else 0.0,
                yerr=err,
                fmt="o" if ok else "x",
                capsize=4,
            )
            ax.annotate(
                r.config,
                (r.mean_tokens, r.accuracy if ok else 0.0),
                fontsize=8,
                xytext=offset,
                textcoords="offset points",
                ha=label_ha(offset),
            )
        front = pareto_front(pts)
        ax.plot(
            [pts[i][0] for i in front],
            [pts[i][1] for i in front],
            "--D",
            color="#999",
            mfc="none",
            ms=11,
            label="Pareto front",
        )
        ax.set(
            xlabel="mean net tokens per task",
            ylabel="accuracy (answered tasks)",
            title=f"{suite} / {model}",
            ylim=(-0.05, 1.05),
        )
        ax.legend(loc="lower right", fontsize=8)
    return png(fig)


def tokens_by_kind(means: Mapping[str, Mapping[str, float]]) -> bytes:
    """Mean tokens per task of each configuration, stacked by actor kind."""
    configs = list(means)
    kinds = [k for k in (*ACTOR_KINDS, "other") if any(means[c].get(k, 0) for c in configs)]
    fig = _figure((8, 1.2 + 0.45 * len(configs)))
    ax = fig.subplots()
    left = np.zeros(len(configs))
    for i, kind in enumerate(kinds):
        vals = np.array([means[c].get(kind, 0.0) for c in configs])
        ax.barh(configs, vals, left=left, label=kind, color=_KIND_COLOURS[i % len(_KIND_COLOURS)])
        left += vals
    ax.invert_yaxis()
    ax.set(xlabel="mean tokens per task (net: every actor)", title="tokens by actor kind")
    ax.legend(fontsize=8, loc="lower right")
    return png(fig)


def interventions(per: Mapping[str, Counter[tuple[str, str]]]) -> bytes:
    """Interventions per configuration, stacked by (trigger, action)."""
    configs = list(per)
    pairs = sorted({p for c in per.values() for p in c})
    fig = _figure((8, 1.2 + 0.45 * len(configs)))
    ax = fig.subplots()
    left = np.zeros(len(configs))
    for i, pair in enumerate(pairs):
        vals = np.array([per[c].get(pair, 0) for c in configs], dtype=float)
        ax.barh(
            configs,
            vals,
            left=left,
            label=f"{pair[0]} → {pair[1]}",
            color=_KIND_COLOURS[i % len(_KIND_COLOURS)],
        )
        left += vals
    ax.invert_yaxis()
    ax.set(xlabel="interventions (all results)", title="interventions by trigger and action")
    if pairs:
        ax.legend(fontsize=8, loc="lower right")
    return png(fig)


def outcome_grid(
    rows: Sequence[str], configs: Sequence[str], codes: np.ndarray, title: str
) -> bytes:
    """Tasks (rows) x configurations (columns): right, wrong, error or missing."""
    fig = _figure((1.6 + 0.9 * len(configs), 1.2 + 0.28 * len(rows)))
    ax = fig.subplots()
    colours = _outcome_colours()
    ax.imshow(codes, cmap=colours, vmin=0, vmax=3, aspect="auto")
    ax.set_xticks(range(len(configs)), configs, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    handles = [
        ax.scatter([], [], marker="s", color=colours(v), edgecolors="#444", label=k)
        for k, v in OUTCOME_CODES.items()
    ]
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title(title)
    return png(fig)


def _matrix(names: Sequence[str], edges: Sequence[Mapping[str, Any]]) -> np.ndarray:
    idx = {n: i for i, n in enumerate(names)}
    m = np.full((len(names), len(names)), np.nan)
    for e in edges:
        a, b = e["edge"]
        m[idx[a], idx[b]] = float(e["p"])
    return m


def edge_heatmap(masks: Mapping[str, Any], title: str) -> bytes:
    """AgentPrune's learned keep-probabilities: spatial and temporal edges, source x target
    (blank: not a candidate edge)."""
    names = [str(n) for n in masks["agents"]]
    fig = _figure((10, 4.4))
    axes = fig.subplots(1, 2)
    for ax, kind in zip(axes, ("spatial", "temporal"), strict=True):
        im = ax.imshow(_matrix(names, masks.get(kind, [])), vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.set(xlabel="to", ylabel="from", title=f"{kind} edges")
    fig.colorbar(im, ax=list(axes), label="keep probability")
    fig.suptitle(title, fontsize=10)
    return png(fig)


def success_resets(points: Mapping[str, tuple[float, float, int]]) -> bytes:
    """Game success rate against mean resets per game, per configuration (label: n games)."""
    fig = _figure((6.4, 4.4))
    ax = fig.subplots()
    offsets = label_offsets([(r, s) for r, s, _ in points.values()])
    for (name, (resets, success, n)), offset in zip(points.items(), offsets, strict=True):
        ax.plot(resets, success, "o")
        ax.annotate(
            f"{name} (n={n})",
            (resets, success),
            fontsize=8,
            xytext=offset,
            textcoords="offset points",
            ha=label_ha(offset),
        )
    ax.set(
        xlabel="mean resets per game",
        ylabel="success rate",
        ylim=(-0.05, 1.05),
        title="monitor: success against resets",
    )
    return png(fig)


def roc(curves: Mapping[str, tuple[np.ndarray, np.ndarray, float, tuple[float, float]]]) -> bytes:
    """Per role, the monitor's ROC on the validation games (a positive: a failed game caught),
    with its AUC and the operating point of the chosen threshold."""
    fig = _figure((5.2, 5))
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], ":", color="#999", label="chance")
    for role, (fpr, tpr, auc, (x, y)) in curves.items():
        (line,) = ax.plot(fpr, tpr, label=f"{role} (AUC {auc:.2f})")
        ax.plot([x], [y], "o", color=line.get_color())
    ax.set(
        xlabel="false positive rate (successful games flagged)",
        ylabel="true positive rate (failed games flagged)",
        title="monitor ROC on validation games",
        xlim=(-0.02, 1.02),
        ylim=(-0.02, 1.02),
    )
    ax.legend(fontsize=8, loc="lower right")
    return png(fig)
