"""The evidence page of a claim: the paper's figure, our protocol, our tables with 95%
intervals and the paired comparison with the baseline, the plots, and how it was made."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from overseer.bench import summarize
from overseer.bench._report import SummaryRow
from overseer.bench._traces import find_trace, load_events, trace_roots
from overseer.bench.stats import paired_table
from overseer.evidence.claims import Claim
from overseer.evidence.plots import part_plot
from overseer.evidence.runs import Part

_CACHE = {
    True: "llama.cpp's prefix cache on: a cached prefix can flip a greedy token, so two "
    "configurations can differ on a task where no mechanism acted (read small differences as "
    "noise).",
    False: "llama.cpp's prefix cache off: equal prompts give equal outputs, so a pair differs "
    "only where a mechanism changed what the model was sent.",
}


_ACTED_NOTE = (
    "*acted on*: tasks where a mechanism of the configuration acted (a supervisor's or "
    "Watcher's verdict, a rule of the rule tier, a monitor's rollback), from the run traces."
)


def md_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The lines of a Markdown table (a `|` in a cell escaped)."""
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}"


_ACTS = frozenset({"verdict", "rule", "rollback"})


def _acted(part: Part, store: Path) -> dict[str, str]:
    """Per configuration, on how many of its tasks a mechanism acted (a verdict, a rule or a
    rollback in the run's trace) as "k/n"; "-" where a run keeps no trace (a direct call).
    A pair can differ only where this fired, or by generation noise with the prefix cache on."""
    roots = trace_roots(store)
    out: dict[str, str] = {}
    for c in part.configs:
        paths = [find_trace(r, roots) for r in part.records if r.key.config == c]
        if not paths or any(p is None for p in paths):
            out[c] = "-"
            continue
        k = sum(any(e.get("event") in _ACTS for e in load_events(p)) for p in paths if p)
        out[c] = f"{k}/{len(paths)}"
    return out


def _summary(part: Part, store: Path) -> tuple[list[str], list[SummaryRow]]:
    acted = _acted(part, store)
    rows = {r.config: r for r in summarize(part.records, baseline=part.baseline)}
    base = rows.get(part.baseline)
    lines: list[str] = []
    points: list[SummaryRow] = []
    body = []
    for c in part.configs:
        r = rows.get(c)
        if r is None:
            body.append([part.label(c), "0", *["-"] * 8])
            continue
        vs = "-" if r.tokens_vs_baseline is None else f"{r.tokens_vs_baseline:.2f}x"
        pvs = f"{r.mean_prompt / base.mean_prompt:.2f}x" if base and base.mean_prompt else "-"
        body.append([part.label(c), str(r.n), str(r.errors), acted[c],
                     f"{_pct(r.accuracy)} ({_pct(r.ci_low)}-{_pct(r.ci_high)})",
                     f"{r.mean_tokens:,.0f}", vs, f"{r.mean_prompt:,.0f}", pvs,
                     f"{r.mean_latency_s:.1f}"])  # fmt: skip
        points.append(r)
    cols = ("configuration", "n", "errors", "acted on", f"{part.metric} % (95% CI)",
            "net tokens/task", "net vs base", "prompt tokens/task", "prompt vs base",
            "s/task")  # fmt: skip
    lines += md_table(cols, body)
    return lines, points


def _paired(part: Part) -> list[str]:
    body = []
    for p in paired_table(list(part.records), part.baseline, part.configs):
        body.append([part.label(p.config), str(p.n), f"{p.errors_baseline}/{p.errors_config}",
                     f"{100 * p.diff:+.1f}" if not math.isnan(p.diff) else "-",
                     f"{p.wins}/{p.losses}/{p.ties}", f"{p.mcnemar_p:.3f}",
                     "-" if math.isnan(p.token_ratio) else
                     f"{p.token_ratio:.2f}x ({p.ratio_lo:.2f}-{p.ratio_hi:.2f})"])  # fmt: skip
    cols = (
        "configuration",
        "pairs",
        "errors (base/config)",
        f"{part.metric} diff (points)",
        "wins/losses/ties",
        "McNemar p (exact)",
        "net-token ratio (95% bootstrap CI)",
    )
    head = f"Paired with **{part.label(part.baseline)}** on the same (task, seed) pairs:"
    return [head, "", *md_table(cols, body)]


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
    """Write docs_dir/CLAIM.md and its plots (CLAIM-N.png beside it), saying how the results
    were made (command, model, size, run time, store); the page's path."""
    docs_dir.mkdir(parents=True, exist_ok=True)
    fig = claim.paper
    lines = [f"# {claim.title}", "", f"> {claim.claim}", "", "## The paper's figure", ""]
    lines += md_table(fig.columns, fig.rows)
    lines += ["", f"Source: {fig.source}." + (f" {fig.note}" if fig.note else ""), ""]
    knobs = ", ".join(f"{k} = {v}" for k, v in claim.size(size).items())
    lines += ["## Our protocol", "", claim.protocol, "",
              f"Model: `{model}`, temperature 0, seed 0. Size `{size}`: {knobs}. "
              + _CACHE[prompt_cache], ""]  # fmt: skip
    lines += ["## Our results", ""]
    for i, part in enumerate(parts, 1):
        table, points = _summary(part, store)
        n_tasks = len({(r.key.suite, r.key.task_id) for r in part.records})
        lines += [f"### {part.title}", "", f"n = {n_tasks} tasks." + (
            f" {part.note}" if part.note else ""), "", *table, "", _ACTED_NOTE, "",
            *_paired(part), ""]  # fmt: skip
        png = part_plot(part, points, docs_dir / f"{claim.name}-{i}.png")
        lines += [f"![{part.title}: {part.metric} against net tokens]({png.name})", ""]
    if claim.headline:
        lines += [f"Headline: {claim.headline}.", ""]
    mins = seconds / 60
    episodes = {r.key: r.latency_s for part in parts for r in part.records}
    lines += ["## How this page was made", "", "```bash", command, "```", "",
              f"Run time: {mins:.1f} minutes, the wall clock of the invocations that finished "
              f"(an interrupted one is not logged); the {len(episodes)} episodes shown took "
              f"{sum(episodes.values()) / 60:.1f} minutes between them (model loading and "
              f"training apart). Results: `{store}`; a rerun resumes, and a finished "
              "claim only rewrites this page.", ""]  # fmt: skip
    if claim.timing:
        lines += [claim.timing, ""]
    page = docs_dir / f"{claim.name}.md"
    page.write_text("\n".join(lines))
    return page
