"""`overseer report --out DIR`: a self-contained HTML page and its Markdown twin, with plots.

DIR gets `index.html` (every image embedded as a data URI, no network), `report.md` (the same
sections, images as files in `img/`), `img/*.png`, and `traces/*.html`: one page per run trace
found, linked from the per-task table of both pages.
"""

from __future__ import annotations

import base64
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from overseer.bench._report import summarize
from overseer.bench._sections import (
    Cell,
    Section,
    interventions_section,
    kinds_section,
    monitor_section,
    outcomes_section,
    prune_section,
    summary_section,
)
from overseer.bench._store import ResultKey, ResultRecord
from overseer.bench._trace_page import CSS, trace_html
from overseer.bench._traces import (
    ACT_EVENTS,
    Intervention,
    find_trace,
    interventions,
    load_events,
    trace_roots,
)
from overseer.bench._verdict import paired_section, verdict_section
from overseer.bench._who_failed import FailedRun, who_failed_section


@dataclass(frozen=True)
class ReportFiles:
    """What a report wrote, and what it could not read (traces stored but missing or bad)."""

    html: Path
    markdown: Path
    images: list[Path]
    traces: list[Path]
    warnings: list[str] = field(default_factory=list)


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:80]


@dataclass
class _Traces:
    """The trace pages written so far, their links and the interventions they hold."""

    out: Path
    links: dict[ResultKey, str] = field(default_factory=dict)
    pages: list[Path] = field(default_factory=list)
    per: dict[str, Counter[Intervention]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    failed: list[FailedRun] = field(default_factory=list)
    #: per configuration: (runs in which a mechanism acted, runs whose trace was read)
    acted: dict[str, tuple[int, int]] = field(default_factory=dict)

    def add(self, rec: ResultRecord, roots: Sequence[Path]) -> None:
        counts = self.per.setdefault(rec.key.config, Counter())
        path = find_trace(rec, roots)
        k = rec.key
        if path is None:
            if rec.extra.get("trace"):
                self.warnings.append(
                    f"{k.config} {k.task_id}: trace {rec.extra['trace']} not found"
                )
            return
        try:
            events = load_events(path)
        except (OSError, ValueError) as exc:
            self.warnings.append(f"{k.config} {k.task_id}: {exc}")
            return
        counts.update(interventions(events))
        k_n = self.acted.get(k.config, (0, 0))
        hit = any(e.get("event") in ACT_EVENTS for e in events)
        self.acted[k.config] = (k_n[0] + hit, k_n[1] + 1)
        if rec.error is not None or not rec.correct:
            self.failed.append((k, events))
        name = f"traces/{len(self.pages):04d}-{_safe(k.config)}-{_safe(k.task_id)}-s{k.seed}.html"
        title = f"{k.config} on {k.task_id} (seed {k.seed}, {k.model})"
        page = self.out / name
        page.write_text(trace_html(events, title=title), encoding="utf-8")
        self.pages.append(page)
        self.links[k] = name


def _html_table(s: Section) -> str:
    if not s.header:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in s.header)

    def cell(c: Cell) -> str:
        text = escape(c.text)
        inner = f'<a href="{escape(c.href)}">{text}</a>' if c.href else text
        return f'<td class="{escape(c.text)}">{inner}</td>'

    body = "".join("<tr>" + "".join(cell(c) for c in row) + "</tr>" for row in s.rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _html(title: str, sections: Sequence[Section]) -> str:
    parts = [f"<h1>{escape(title)}</h1>"]
    for s in sections:
        parts.append(f"<h2>{escape(s.title)}</h2><p>{escape(s.text)}</p>")
        for _, data, alt in s.images:
            uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
            parts.append(f'<p><img src="{uri}" alt="{escape(alt)}" style="max-width:100%"></p>')
        parts.append(_html_table(s))
    style = (
        CSS + "td.right{background:#d4edda}td.wrong{background:#f8d7da}td.error{background:#ddd}"
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title><style>{style}</style></head><body>{''.join(parts)}</body></html>\n"
    )


def _md_cell(c: Cell) -> str:
    text = c.text.replace("|", "\\|").replace("\n", " ")
    return f"[{text}]({c.href})" if c.href else text


def _markdown(title: str, sections: Sequence[Section]) -> str:
    lines = [f"# {title}", ""]
    for s in sections:
        lines += [f"## {s.title}", "", s.text, ""]
        lines += [f"![{alt}](img/{name})" for name, _, alt in s.images]
        if s.images:
            lines.append("")
        if s.header:
            lines.append("| " + " | ".join(s.header) + " |")
            lines.append("|" + "---|" * len(s.header))
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in s.rows]
            lines.append("")
    return "\n".join(lines)


def _sections(
    records: Sequence[ResultRecord],
    traces: _Traces,
    baseline: str | None,
    order: Sequence[str],
    prune: Sequence[Path],
    monitor: Sequence[Path],
) -> list[Section]:
    """The report's sections, in order (the verdict first); the optional ones only when they
    have something."""
    many_models = len({r.key.model for r in records}) > 1
    acted = traces.acted
    sections = [verdict_section(records, baseline, order, acted)]
    paired = paired_section(records, baseline, order, acted)
    sections += [summary_section(summarize(records, baseline=baseline, order=order), baseline)]
    sections += [paired] if paired is not None else []
    sections += [
        kinds_section(records, many_models),
        interventions_section(traces.per),
        outcomes_section(records, many_models, lambda r: traces.links.get(r.key)),
    ]
    if prune:
        sections.append(prune_section(prune))
    optional = [monitor_section(records, monitor), who_failed_section(traces.failed)]
    sections += [s for s in optional if s is not None]
    if traces.warnings:
        sections.append(Section("Warnings", "; ".join(traces.warnings)))
    return sections


def write_report(
    records: Sequence[ResultRecord],
    out: str | Path,
    *,
    store: Path | None = None,
    baseline: str | None = None,
    order: Sequence[str] = (),
    prune: Sequence[Path] = (),
    monitor: Sequence[Path] = (),
    title: str = "overseer report",
) -> ReportFiles:
    """Write the report of `records` into `out` (see the module doc); token ratios are against
    `baseline` (default: the first of `order`, else `direct` when stored). ValueError naming
    the input when there is nothing to report or a --prune/--monitor file is unusable."""
    if not records:
        raise ValueError("report: no stored results match (check --store, --suite, --configs)")
    if baseline is None:  # the first named configuration, else the single direct call
        present = {r.key.config for r in records}
        baseline = order[0] if order else "direct" if "direct" in present else None
    rank = {name: i for i, name in enumerate(order)}
    records = sorted(records, key=lambda r: (rank.get(r.key.config, len(rank)), r.key.config))
    out = Path(out)
    (out / "img").mkdir(parents=True, exist_ok=True)
    (out / "traces").mkdir(exist_ok=True)
    traces = _Traces(out)
    for rec in records:
        traces.add(rec, trace_roots(store))
    sections = _sections(records, traces, baseline, order, prune, monitor)
    images = []
    for s in sections:
        for name, data, _ in s.images:
            (out / "img" / name).write_bytes(data)
            images.append(out / "img" / name)
    html, md = out / "index.html", out / "report.md"
    html.write_text(_html(title, sections), encoding="utf-8")
    md.write_text(_markdown(title, sections), encoding="utf-8")
    return ReportFiles(html, md, images, traces.pages, traces.warnings)
