"""The report's verdict, first thing a reader sees: per configuration against the baseline on
the same tasks and seeds, one sentence (net-token ratio with its interval, accuracy difference
with its interval and exact McNemar p, on how many runs a mechanism acted), then where the
results come from (provenance) and when they were made."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

from overseer.bench._provenance import describe, distinct
from overseer.bench._report import paired_groups
from overseer.bench._sections import Cell, Section
from overseer.bench._store import ResultRecord
from overseer.bench.stats import Paired, paired_diff_ci


def _tokens(p: Paired) -> str:
    if math.isnan(p.token_ratio):
        return "net tokens not comparable (the baseline spent none)"
    return f"{p.token_ratio:.2f}x the net tokens (95% CI {p.ratio_lo:.2f}-{p.ratio_hi:.2f})"


def _accuracy(p: Paired) -> str:
    if p.n == 0:
        return "no pair answered by both, so no accuracy difference"
    lo, hi = paired_diff_ci(p.wins, p.losses, p.n)
    return (
        f"accuracy {100 * p.diff:+.1f} points (95% CI {100 * lo:+.1f} to {100 * hi:+.1f}; "
        f"{100 * p.acc_config:.1f}% vs {100 * p.acc_baseline:.1f}%, McNemar p = "
        f"{p.mcnemar_p:.2g}; {_count(p.wins, 'win')}, {_count(p.losses, 'loss')}, "
        f"{_count(p.ties, 'tie')})"
    )


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("s") else f"{n} {word}s"


def _acted(config: str, acted: Mapping[str, tuple[int, int]]) -> str:
    if config not in acted:
        return "acted on: unknown (no run trace found; a direct call keeps none)"
    k, n = acted[config]
    return f"a mechanism acted on {k} of {n} runs"


def plain_verdict(p: Paired) -> str:
    """One configuration against the baseline in plain words, before any statistic: tokens,
    how often each answered right, and whether the run can tell a difference (issue 49: "the
    rule tier used half the tokens and answered as often as the team: 1 of 5 each; too few
    tasks to tell a difference")."""
    r = p.token_ratio
    tokens = (
        "spent tokens the baseline's could not be compared with"
        if math.isnan(r)
        else "used half the tokens"
        if 0.45 <= r <= 0.55
        else f"used {r:.2f}x the tokens"
    )
    k, kb = round(p.acc_config * p.n), round(p.acc_baseline * p.n)
    right = (
        f"answered right as often as {p.baseline}: {k} of {p.n} each"
        if k == kb
        else f"answered right {'more' if k > kb else 'less'} often than {p.baseline}: "
        f"{k} vs {kb} of {p.n}"
    )
    if p.n == 0:
        return f"{p.config} {tokens}; no task was answered by both, so no accuracy to compare"
    tell = (
        "a difference this run can tell (McNemar p < 0.05)"
        if p.mcnemar_p < 0.05
        else "too few tasks to tell a difference"
        if p.n < 30
        else f"no difference this run can tell (McNemar p = {p.mcnemar_p:.2g})"
    )
    return f"{p.config} {tokens} and {right}; {tell}."


def verdict_sentence(
    suite: str, model: str, p: Paired, acted: Mapping[str, tuple[int, int]]
) -> str:
    """One configuration against the baseline in one sentence."""
    return (
        f"{p.config} vs {p.baseline} on {suite} ({model}, {p.n} pairs): {_tokens(p)}, "
        f"{_accuracy(p)}; {_acted(p.config, acted)}."
    )


def made_line(records: Sequence[ResultRecord]) -> str:
    """Where the results come from (each distinct provenance stamp) and when they were made."""
    if not records:
        return "No results."
    stamps = "; ".join(
        f"{describe(p)} ({n} results)" for p, n in distinct(r.provenance for r in records)
    )
    days = sorted({time.strftime("%Y-%m-%d", time.gmtime(r.finished_at)) for r in records})
    when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    return f"Made {when} (UTC) by {stamps}."


def verdict_lines(
    records: Sequence[ResultRecord],
    baseline: str | None,
    order: Sequence[str],
    acted: Mapping[str, tuple[int, int]],
) -> list[str]:
    """The verdict: per configuration (and suite, model) paired with `baseline`, one sentence
    in plain words, then one with the statistics, then the provenance-and-date line; without
    a baseline, why there is no verdict."""
    pairs = paired_groups(records, baseline, order) if baseline else []
    if not pairs:
        why = "no baseline" if not baseline else f"nothing to pair with {baseline}"
        return [f"No verdict: {why}.", made_line(records)]
    plain = [plain_verdict(p) for _, _, p in pairs]
    return [*plain, *(verdict_sentence(s, m, p, acted) for s, m, p in pairs), made_line(records)]


def verdict_section(
    records: Sequence[ResultRecord],
    baseline: str | None,
    order: Sequence[str],
    acted: Mapping[str, tuple[int, int]],
) -> Section:
    """The report's first section: the verdict sentences, then provenance and date."""
    *sentences, made = verdict_lines(records, baseline, order, acted)  # plain, then statistics
    s = Section("Verdict", made)
    s.header = ["each configuration against the baseline, on the same tasks and seeds"]
    s.rows = [[Cell(x)] for x in sentences]
    return s


def paired_section(
    records: Sequence[ResultRecord],
    baseline: str | None,
    order: Sequence[str],
    acted: Mapping[str, tuple[int, int]],
) -> Section | None:
    """The paired table the verdict is read from (None without a baseline to pair with)."""
    pairs = paired_groups(records, baseline, order) if baseline else []
    if not pairs:
        return None
    s = Section(
        f"Paired with {baseline}",
        "Same task and seed; errored pairs left out of n. Accuracy difference with its 95% "
        "interval (Agresti-Min) and the exact McNemar p; net-token ratio with its paired "
        "bootstrap 95% interval; acted on: runs whose trace holds a rule, verdict or rollback.",
    )
    s.header = ["suite", "model", "config", "n", "W/L/T", "diff (points)", "95% CI", "McNemar p",
                "token ratio", "95% CI", "acted on"]  # fmt: skip
    for suite, model, p in pairs:
        lo, hi = paired_diff_ci(p.wins, p.losses, p.n)
        k_n = acted.get(p.config)
        ci = f"{_num(100 * lo, '+.1f')} to {_num(100 * hi, '+.1f')}"
        cells = [suite, model, p.config, str(p.n), f"{p.wins}/{p.losses}/{p.ties}",
                 _num(100 * p.diff, "+.1f"), ci,
                 _num(p.mcnemar_p, ".2g"), _num(p.token_ratio, ".2f") + "x",
                 f"{_num(p.ratio_lo, '.2f')}-{_num(p.ratio_hi, '.2f')}",
                 f"{k_n[0]}/{k_n[1]}" if k_n else "-"]  # fmt: skip
        s.rows.append([Cell(c) for c in cells])
    return s


def _num(x: float, fmt: str) -> str:
    return "-" if math.isnan(x) else format(x, fmt)
