"""The evidence page of a claim: the paper's figure, our protocol, our tables with 95%
intervals, the paired comparison with the baseline and its power, the plots, how it was made
(with the results' provenance and their export), and the Reading: the verdict against the
paper, computed from the numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from overseer.bench import ResultRecord, summarize
from overseer.bench.reports import (
    ResultKey,
    describe_provenance,
    distinct_provenance,
    trace_acted,
    trace_roots,
)
from overseer.evidence._shipped import digest_text, gunzip
from overseer.evidence.claims import Claim
from overseer.evidence.export import export_path, write_export
from overseer.evidence.plots import part_plot
from overseer.evidence.reading import reading_lines, readme_row, title_verdict
from overseer.evidence.runs import Part
from overseer.evidence.tables import PageData, md_table, part_lines, records_of

_CACHE = {
    True: "llama.cpp's prefix cache on: a cached prefix can flip a greedy token, so two "
    "configurations can differ on a task where no mechanism acted (read small differences as "
    "noise).",
    False: "llama.cpp's prefix cache off: equal prompts give equal outputs, so a pair differs "
    "only where a mechanism changed what the model was sent.",
}
ROW_MARK = "<!-- readme-row: "


def acted_flags(parts: Sequence[Part], store: Path) -> dict[ResultKey, bool | None]:
    """Per record, whether a mechanism of its configuration acted: the part's own test for
    structural mechanisms (`Part.acted_by`: a pruned team, MASFly's own team), or a verdict,
    rule or rollback in the run's trace; None where neither says (a direct call keeps no
    trace, or the trace is gone)."""
    roots = trace_roots(store)
    out: dict[ResultKey, bool | None] = {}
    for part in parts:
        for r in part.records:
            test = part.acted_by.get(r.key.config)
            flag = test(r) if test is not None else None
            traced = None if flag else trace_acted(r, roots)
            out[r.key] = True if flag else (traced if traced is not None else flag)
    return out


def provenance_lines(records: Sequence[ResultRecord]) -> list[str]:
    """One line per distinct provenance stamp of the page's results."""
    seen = distinct_provenance(r.provenance for r in records)
    return [f"- {describe_provenance(p)} ({n} results)" for p, n in seen]


def _made(claim: Claim, data: PageData, docs_dir: Path, meta: Mapping[str, object]) -> list[str]:
    parts = data.parts
    episodes = {r.key: r.latency_s for part in parts for r in part.records}
    mins = float(str(meta["seconds"])) / 60
    export = export_path(docs_dir, claim.name)
    lines = [
        "## How this page was made",
        "",
        "```bash",
        str(meta["command"]),
        "```",
        "",
        f"Run time: {mins:.1f} minutes, the wall clock of the invocations that finished "
        f"(an interrupted one is not logged); the {len(episodes)} episodes shown took "
        f"{sum(episodes.values()) / 60:.1f} minutes between them (model loading and "
        f"training apart). Results: `{meta['store']}`; a rerun resumes, and a finished "
        "claim only rewrites this page.",
        "",
        "Provenance of the results (commit, versions, model file, threads, prompt cache):",
        "",
        *provenance_lines(records_of(data)),
        "",
        f"The results are exported in [`{DATA}/{export.name}`]({DATA}/{export.name})"
        f"{_digest(export)}; `overseer report --from-export docs/evidence/{DATA}/{export.name}` "
        "recomputes this page's tables from it and refuses a file whose content is not the "
        "one this page ships.",
        "",
    ]
    return lines + ([claim.timing, ""] if claim.timing else [])


DATA = "data"


def _digest(export: Path) -> str:
    """The digest this page ships for its export (`gzip -dc FILE | sha256sum`), in words."""
    if not export.is_file():
        return ""
    return f" ({digest_text(gunzip(export))}, `gzip -dc` and `sha256sum` show it)"


def _head_lines(
    claim: Claim, data: PageData, model: str, size: str, prompt_cache: bool
) -> list[str]:
    """The page up to its results: the title with the verdict, the paper's claim, the paper's
    figure, our protocol."""
    fig = claim.paper
    title = f"# {claim.title} — {title_verdict(data)}"
    lines = [title, "", f"> Claim tested: {claim.claim}", "", "## The paper's figure", ""]
    lines += md_table(fig.columns, fig.rows)
    lines += ["", f"Source: {fig.source}." + (f" {fig.note}" if fig.note else ""), ""]
    knobs = ", ".join(f"{k} = {v}" for k, v in claim.size(size).items())
    return [
        *lines,
        "## Our protocol",
        "",
        claim.protocol,
        "",
        f"Model: `{model}`, temperature 0, seed 0. Size `{size}`: {knobs}. " + _CACHE[prompt_cache],
        "",
        "## Our results",
        "",
    ]


def write_page(
    claim: Claim,
    parts: Sequence[Part],
    docs_dir: Path,
    *,
    command: str,
    model: str,
    size: str,
    seconds: float,
    store: Path,
    prompt_cache: bool = True,
) -> Path:
    """Write docs_dir/CLAIM.md, its plots (CLAIM-N.png) and its export (data/CLAIM.jsonl.gz),
    saying how the results were made; the page's path."""
    docs_dir.mkdir(parents=True, exist_ok=True)
    data = PageData(claim.name, parts, acted_flags(parts, store), claim.effects)
    meta = {
        "command": command,
        "model": model,
        "size": size,
        "seconds": round(seconds, 1),
        "store": str(store),
        "prompt_cache": prompt_cache,
    }
    write_export(data, export_path(docs_dir, claim.name), meta)
    return render_page(claim, data, docs_dir, meta)  # after the export: it ships its digest


def render_page(
    claim: Claim, data: PageData, docs_dir: Path, meta: Mapping[str, Any], *, plots: bool = True
) -> Path:
    """Write docs_dir/CLAIM.md from the page's data and the meta its export keeps (command,
    model, size, seconds, store, prompt_cache); the plots too unless `plots` is False (their
    names are the same either way)."""
    cache_on = bool(meta["prompt_cache"])
    lines = _head_lines(claim, data, str(meta["model"]), str(meta["size"]), cache_on)
    for i, part in enumerate(data.parts):
        lines += part_lines(part, data, i)
        png = docs_dir / f"{claim.name}-{i + 1}.png"
        if plots:
            points = summarize(part.records, baseline=part.baseline, order=part.configs)
            part_plot(part, points, png)
        lines += [f"![{part.title}: {part.metric} against net tokens]({png.name})", ""]
    notes = docs_dir / f"{claim.name}.notes.md"  # hand-written sections (a diagnosis) kept
    if notes.is_file():  # across reruns of the page
        lines += [notes.read_text(encoding="utf-8").rstrip(), ""]
    lines += _made(claim, data, docs_dir, meta)
    lines += reading_lines(data)
    cache = "prefix cache " + ("on" if cache_on else "off")
    row = readme_row(data, link=f"docs/evidence/{claim.name}.md", cache=cache)
    lines += [f"{ROW_MARK}{row} -->", ""]
    page = docs_dir / f"{claim.name}.md"
    page.write_text("\n".join(lines))
    return page


def page_from_export(name: str, docs_dir: Path, *, plots: bool = False) -> Path:
    """Rewrite the page of claim `name` from its export in docs_dir (no store, no model): what
    a change to the page writer or to the claim's text (claims.toml) needs."""
    from overseer.evidence.claims import get_claim
    from overseer.evidence.export import read_export

    data, meta = read_export(export_path(docs_dir, name))
    return render_page(get_claim(name), data, docs_dir, meta, plots=plots)


__all__ = ["ROW_MARK", "acted_flags", "md_table", "page_from_export", "render_page", "write_page"]
