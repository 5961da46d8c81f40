"""The tables of an evidence page, computed from its records alone (a store or its export give
the same tables): per part the summary with the *acted on* column, the paired comparison with
the baseline, the power of each pairing (MDE at this n beside the paper's effect), and the
game statistics of game parts."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from overseer.bench import ResultRecord, summarize
from overseer.bench.reports import ResultKey
from overseer.bench.stats import POWER_METHOD, paired_power, paired_table
from overseer.evidence.claims import Effect
from overseer.evidence.runs import Part

ACTED_NOTE = (
    "*acted on*: tasks where a mechanism of the configuration acted, per mechanism: a "
    "supervisor's or Watcher's verdict, a rule of the rule tier or a monitor's rollback in the "
    "run's trace; a pruned team on every task when pruning removed edges; MASFly's team when "
    "it differs from the fixed team it is compared with."
)


@dataclass(frozen=True)
class PageData:
    """What a page's tables are computed from: its parts (with their records), whether a
    mechanism acted on each record (None: not known, e.g. no trace), the paper's effects."""

    claim: str
    parts: Sequence[Part]
    acted: Mapping[ResultKey, bool | None] = field(default_factory=dict)
    effects: Sequence[Effect] = ()


def md_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The lines of a Markdown table (a `|` in a cell escaped)."""
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


def pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}"


def find_config(part: Part, name: str) -> str | None:
    """The part's configuration whose label or name starts with `name` (an effect's)."""
    for c in part.configs:
        if part.label(c).startswith(name) or c.startswith(name):
            return c
    return None


def acted_column(part: Part, acted: Mapping[ResultKey, bool | None]) -> dict[str, str]:
    """Per configuration "k/n": on how many of its tasks a mechanism acted; "-" where that is
    not known for some task (a direct call keeps no trace)."""
    out: dict[str, str] = {}
    for c in part.configs:
        flags = [acted.get(r.key) for r in part.records if r.key.config == c]
        out[c] = "-" if not flags or None in flags else f"{sum(map(bool, flags))}/{len(flags)}"
    return out


def summary_lines(part: Part, acted: Mapping[ResultKey, bool | None]) -> list[str]:
    """The summary table of a part: n, errors, unparsed, acted on, accuracy, tokens, time."""
    col = acted_column(part, acted)
    rows = {r.config: r for r in summarize(part.records, baseline=part.baseline)}
    base = rows.get(part.baseline)
    body = []
    for c in part.configs:
        r = rows.get(c)
        if r is None:
            body.append([part.label(c), "0", *["-"] * 9])
            continue
        vs = "-" if r.tokens_vs_baseline is None else f"{r.tokens_vs_baseline:.2f}x"
        pvs = f"{r.mean_prompt / base.mean_prompt:.2f}x" if base and base.mean_prompt else "-"
        body.append(
            [
                part.label(c),
                str(r.n),
                str(r.errors),
                str(r.unparsed),
                col[c],
                f"{pct(r.accuracy)} ({pct(r.ci_low)}-{pct(r.ci_high)})",
                f"{r.mean_tokens:,.0f}",
                vs,
                f"{r.mean_prompt:,.0f}",
                pvs,
                f"{r.mean_latency_s:.1f}",
            ]
        )
    cols = (
        "configuration",
        "n",
        "errors",
        "unparsed",
        "acted on",
        f"{part.metric} % (95% CI)",
        "net tokens/task",
        "net vs base",
        "prompt tokens/task",
        "prompt vs base",
        "s/task",
    )
    return md_table(cols, body)


def paired_lines(part: Part) -> list[str]:
    """Each configuration paired with the part's baseline on the same (task, seed)."""
    body = []
    for p in paired_table(list(part.records), part.baseline, part.configs):
        body.append(
            [
                part.label(p.config),
                str(p.n),
                f"{p.errors_baseline}/{p.errors_config}",
                f"{100 * p.diff:+.1f}" if not math.isnan(p.diff) else "-",
                f"{p.wins}/{p.losses}/{p.ties}",
                f"{p.mcnemar_p:.3f}",
                "-"
                if math.isnan(p.token_ratio)
                else f"{p.token_ratio:.2f}x ({p.ratio_lo:.2f}-{p.ratio_hi:.2f})",
            ]
        )
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


def _paper(e: Effect | None) -> str:
    if e is None:
        return "-"
    bits = [
        f"{e.points:+.2f} points" if e.points is not None else "",
        f"{e.ratio:.2f}x tokens" if e.ratio is not None else "",
    ]
    return ", ".join(b for b in bits if b) or "no seed figure"


def _needed(e: Effect | None, acc: int | None, tok: int | None) -> str:
    if e is None:
        return "-"
    bits = [
        f"{acc} for the accuracy effect" if acc else "",
        f"{tok} for the token ratio" if tok else "",
    ]
    return ", ".join(b for b in bits if b) or "-"


def power_rows(part: Part, effects: Sequence[Effect]) -> list[tuple[str, str, Effect | None]]:
    """(baseline, config, effect) of the pairings a part's power table shows: each config
    against the part's baseline, and each effect's own pairing."""
    rows: list[tuple[str, str, Effect | None]] = []
    for e in effects:
        b, c = find_config(part, e.baseline), find_config(part, e.config)
        if b and c:
            rows.append((b, c, e))
    seen = {(b, c) for b, c, _ in rows}
    rows += [
        (part.baseline, c, None)
        for c in part.configs
        if c != part.baseline and (part.baseline, c) not in seen
    ]
    return rows


def power_lines(part: Part, effects: Sequence[Effect]) -> list[str]:
    """The power table: what each pairing can detect at its n, the paper's effect, and the
    pairs the paper's effect would need."""
    body = []
    for b, c, e in power_rows(part, effects):
        pw = paired_power(
            part.records,
            b,
            c,
            paper_diff=(e.points / 100) if e and e.points else None,
            paper_ratio=e.ratio if e else None,
        )
        mde = "none at this n" if math.isnan(pw.mde) else f"{100 * pw.mde:.1f}"
        tok = "-" if math.isnan(pw.mde_tokens) else f"{100 * pw.mde_tokens:.1f}%"
        body.append(
            [
                f"{part.label(c)} vs {part.label(b)}",
                str(pw.n),
                f"{100 * pw.discordance:.0f}%",
                mde,
                tok,
                _paper(e),
                _needed(e, pw.n_for_paper, pw.n_for_paper_tokens),
            ]
        )
    cols = (
        "pairing",
        "pairs",
        "discordant",
        f"{part.metric} MDE (points)",
        "token MDE",
        "paper's effect",
        "pairs needed for it",
    )
    return [f"Power ({POWER_METHOD}):", "", *md_table(cols, body)]


def game_lines(part: Part) -> list[str]:
    """For game results (their extra has `turns` and `resets`): per configuration the share of
    games with a reset, resets per game and the mean game length in turns."""
    body = []
    for c in part.configs:
        rs = [
            r
            for r in part.records
            if r.key.config == c and r.error is None and "turns" in r.extra and "resets" in r.extra
        ]
        if not rs:
            continue
        resets = np.array([float(str(r.extra["resets"] or 0)) for r in rs])
        turns = np.array([float(str(r.extra["turns"] or 0)) for r in rs])
        body.append(
            [
                part.label(c),
                str(len(rs)),
                f"{100 * (resets > 0).mean():.0f}%",
                f"{resets.mean():.2f}",
                f"{turns.mean():.1f}",
            ]
        )
    if not body:
        return []
    cols = ("configuration", "games", "reset rate", "resets/game", "mean game length (turns)")
    return ["Games:", "", *md_table(cols, body)]


def part_lines(part: Part, data: PageData, index: int) -> list[str]:
    """Everything a page shows of one part but its plot."""
    n_tasks = len({(r.key.suite, r.key.task_id) for r in part.records})
    effects = [e for e in data.effects if e.part == index]
    lines = [
        f"### {part.title}",
        "",
        f"n = {n_tasks} tasks." + (f" {part.note}" if part.note else ""),
        "",
        *summary_lines(part, data.acted),
        "",
        ACTED_NOTE,
        "",
        *paired_lines(part),
        "",
        *power_lines(part, effects),
        "",
    ]
    games = game_lines(part)
    return lines + ([*games, ""] if games else [])


def page_tables(data: PageData) -> list[str]:
    """The tables of every part (what `overseer report --from-export` prints)."""
    out: list[str] = []
    for i, part in enumerate(data.parts):
        out += part_lines(part, data, i)
    return out


def records_of(data: PageData) -> list[ResultRecord]:
    """The page's records, each once (a direct call may sit in several parts)."""
    seen: dict[ResultKey, ResultRecord] = {}
    for part in data.parts:
        for r in part.records:
            seen.setdefault(r.key, r)
    return list(seen.values())
