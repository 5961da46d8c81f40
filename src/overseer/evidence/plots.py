"""The plots of an evidence page, drawn by the report module: accuracy (with its 95% interval)
against mean net tokens per configuration, with the Pareto front, one PNG per part."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from overseer.bench.reports import SummaryRow, accuracy_tokens
from overseer.evidence.runs import Part


def part_plot(part: Part, rows: Sequence[SummaryRow], path: Path) -> Path:
    """Write the accuracy-vs-tokens plot of a part's summary rows, labelled as on the page."""
    named = [dataclasses.replace(r, config=part.label(r.config)) for r in rows]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(accuracy_tokens(named))
    return path
