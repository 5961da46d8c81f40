"""The plots of an evidence page: accuracy (with its 95% interval) against mean net tokens per
configuration, one PNG per part. Interim: drawn here with matplotlib until the report module's
plots are merged; `page` calls only `part_plot`, so swapping it is one function."""

from __future__ import annotations

import math
from pathlib import Path

from overseer.evidence.runs import Part


def part_plot(part: Part, rows: list[tuple[str, float, float, float, float]], path: Path) -> Path:
    """Write the accuracy-vs-tokens plot of a part; rows are (label, tokens, acc, lo, hi)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    try:
        for i, (label, tokens, acc, lo, hi) in enumerate(rows):
            if math.isnan(acc):
                continue
            err = [[acc - lo], [hi - acc]]
            ax.errorbar([tokens], [acc], yerr=err, fmt="o", capsize=4, color=f"C{i % 10}",
                        label=label)  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel("mean net tokens per task (log scale)")
        ax.set_ylabel(f"{part.metric} (95% Wilson interval)")
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(part.title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path
