"""The "Reading" of an evidence page, computed from its numbers: per paper effect a verdict
(reproduced / not reproduced / inconclusive at this n) from the paired comparison and the
minimum detectable effect, and the page's headline row for the README."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from overseer.bench.stats import Paired, Power, paired, paired_diff_ci, paired_power
from overseer.evidence.claims import Effect
from overseer.evidence.runs import Part
from overseer.evidence.tables import PageData, find_config, pct

ALPHA = 0.05
MARGIN = 0.10  # "accuracy kept": the paired difference's lower bound above -10 points
REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive at this n"
NO_FIGURE = "no seed figure"
UNTESTED = "untested"


@dataclass(frozen=True)
class Reading:
    """One effect read against the paper: its verdict, why, and the figures it rests on."""

    effect: Effect
    verdict: str
    why: str
    pair: Paired
    power: Power
    metric: str


def _gain(e: Effect, p: Paired, pw: Power) -> tuple[str, str]:
    want = math.copysign(1.0, e.points or 0.0)
    if p.mcnemar_p < ALPHA and p.diff * want > 0:
        return REPRODUCED, "a significant change in the paper's direction"
    if p.mcnemar_p < ALPHA:
        return NOT_REPRODUCED, "a significant change against the paper's direction"
    if not math.isnan(pw.mde) and pw.mde <= abs(e.points or 0.0) / 100:
        return NOT_REPRODUCED, "no significant change although this n detects the paper's effect"
    return INCONCLUSIVE, "no significant change, and this n cannot detect the paper's effect"


def _saving(e: Effect, p: Paired, pw: Power) -> tuple[str, str]:
    if p.mcnemar_p < ALPHA and p.diff < 0:
        return NOT_REPRODUCED, "accuracy fell significantly"
    low, _ = paired_diff_ci(p.wins, p.losses, p.n)
    if not math.isnan(p.ratio_hi) and p.ratio_hi < 1:
        if low > -MARGIN:
            return REPRODUCED, (
                f"fewer tokens (the interval below 1), accuracy non-inferior "
                f"(the difference's lower bound above -{100 * MARGIN:.0f} points)"
            )
        return INCONCLUSIVE, (
            f"fewer tokens, but accuracy is not shown non-inferior at this n "
            f"(the difference's lower bound {100 * low:.1f} points)"
        )
    if not math.isnan(p.ratio_lo) and p.ratio_lo > 1:
        return NOT_REPRODUCED, "more tokens (the interval above 1)"
    if e.ratio and not math.isnan(pw.mde_tokens) and pw.mde_tokens <= 1 - e.ratio:
        return NOT_REPRODUCED, "no significant saving although this n detects the paper's"
    return INCONCLUSIVE, "no significant saving, and this n cannot detect the paper's"


def read_effect(part: Part, e: Effect) -> Reading | None:
    """The verdict of one effect on its part (None when the part lacks its configurations)."""
    b, c = find_config(part, e.baseline), find_config(part, e.config)
    if b is None or c is None:
        return None
    p = paired(part.records, b, c)
    pw = paired_power(
        part.records, b, c, paper_diff=(e.points / 100) if e.points else None, paper_ratio=e.ratio
    )
    if p.n == 0:
        verdict, why = INCONCLUSIVE, "no pairs"
    elif e.points is None and e.ratio is None:
        verdict, why = NO_FIGURE, "no seed paper has this figure"
    else:
        verdict, why = (_saving if e.kind == "saving" else _gain)(e, p, pw)
    return Reading(e, verdict, why, p, pw, part.metric)


def _observed(r: Reading) -> str:
    p = r.pair
    tok = (
        ""
        if math.isnan(p.token_ratio)
        else (f", {p.token_ratio:.2f}x net tokens ({p.ratio_lo:.2f}-{p.ratio_hi:.2f})")
    )
    lo, hi = paired_diff_ci(p.wins, p.losses, p.n)
    ci = "" if math.isnan(lo) else f" [{100 * lo:+.1f}, {100 * hi:+.1f}]"
    return (
        f"{r.metric} {pct(p.acc_config)}% vs {pct(p.acc_baseline)}% "
        f"({100 * p.diff:+.1f} points{ci}, {p.wins}/{p.losses}/{p.ties} wins/losses/ties, "
        f"McNemar p = {p.mcnemar_p:.2f}){tok}"
    )


def _paper(e: Effect) -> str:
    bits = [
        f"{e.points:+.2f} points" if e.points is not None else "",
        f"{e.ratio:.2f}x tokens" if e.ratio is not None else "",
    ]
    return ", ".join(b for b in bits if b) or "none"


def mde_text(r: Reading) -> str:
    """At n = 16 the MDE is 42.2 points (tokens: 9.7%); the paper's effect needs 74 pairs."""
    pw = r.power
    mde = (
        "no effect is detectable" if math.isnan(pw.mde) else f"the MDE is {100 * pw.mde:.1f} points"
    )
    tok = "" if math.isnan(pw.mde_tokens) else f" (tokens: {100 * pw.mde_tokens:.1f}%)"
    need = [
        f"{pw.n_for_paper} pairs for its accuracy effect" if pw.n_for_paper else "",
        f"{pw.n_for_paper_tokens} for its token ratio" if pw.n_for_paper_tokens else "",
    ]
    needs = ", ".join(x for x in need if x)
    return f"at n = {pw.n} {mde}{tok}" + (f"; the paper's effect needs {needs}" if needs else "")


def sentence(r: Reading) -> str:
    """One or two sentences: the verdict, what was observed against the paper, and power."""
    return (
        f"**{r.verdict}** ({r.why}). {r.effect.what}: {_observed(r)}; the paper: "
        f"{_paper(r.effect)}. Power: {mde_text(r)}."
    )


def readings(data: PageData) -> list[Reading]:
    """The readings of every effect whose part is on the page; an effect that `requires`
    another (an attack must hurt before robustness is read) is untested where that other
    one is not reproduced."""
    out: list[Reading] = []
    for e in data.effects:
        if e.part < len(data.parts):
            r = read_effect(data.parts[e.part], e)
            if r is None:
                continue
            need = next((o for o in out if o.effect.what.startswith(e.requires)), None)
            if e.requires and (need is None or need.verdict != REPRODUCED):
                why = f"untested: '{e.requires}' is not shown on this page"
                r = dataclasses.replace(r, verdict=UNTESTED, why=why)
            out.append(r)
    return out


def reading_lines(data: PageData) -> list[str]:
    """The page's closing "Reading" section."""
    rs = readings(data)
    lines = ["## Reading", ""]
    if not rs:
        return [*lines, "No paper effect could be read on this page (its pairs are missing).", ""]
    return [*lines, *(f"- {sentence(r)}" for r in rs), ""]


def _title_phrase(r: Reading) -> str:
    what = r.effect.what.split(" (")[0]
    if r.verdict != NO_FIGURE:
        return f"{r.verdict} ({what})"
    p = r.pair
    tok = "" if math.isnan(p.token_ratio) else f", {p.token_ratio:.2f}x net tokens"
    return f"{100 * p.diff:+.1f} points, McNemar p = {p.mcnemar_p:.2f}{tok} ({what})"


def title_verdict(data: PageData) -> str:
    """The page's verdict for its title: what each effect came to, e.g. "not reproduced
    (SupervisorAgent vs the team); ..."; an effect no paper has a figure for says what was
    seen."""
    rs = readings(data)
    return "; ".join(_title_phrase(r) for r in rs) or "no effect could be read"


def _direct(part: Part) -> str:
    if "direct" not in part.configs or part.baseline == "direct":
        return "-"
    p = paired(part.records, part.baseline, "direct")
    tok = "" if math.isnan(p.token_ratio) else f" at {p.token_ratio:.2f}x the baseline's tokens"
    return (
        f"{pct(p.acc_config)}%{tok} ({p.wins}/{p.losses}/{p.ties} against "
        f"{part.label(part.baseline)}, McNemar p = {p.mcnemar_p:.2f})"
    )


def readme_row(data: PageData, *, link: str, cache: str) -> str:
    """The page's row of the README's evidence table: page, n, headline, direct call, power,
    reading (the verdicts)."""
    rs = readings(data)
    first = data.parts[0] if data.parts else None
    n = len({(r.key.suite, r.key.task_id) for r in first.records}) if first else 0
    head = "; ".join(f"{r.effect.what}: {_observed(r)}" for r in rs) or "-"
    power = "; ".join(f"{mde_text(r)} (paper: {_paper(r.effect)})" for r in rs) or "-"
    verdicts = "; ".join(r.verdict for r in rs) or "-"
    cells = [
        f"[{data.claim}]({link})",
        f"{n} tasks ({first.title if first else '-'}), {cache}",
        head,
        _direct(first) if first else "-",
        power,
        verdicts,
    ]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def page_tables_reading(data: PageData) -> list[str]:
    """The page's tables and its Reading: what a page and its export must agree on."""
    from overseer.evidence.tables import page_tables

    return [*page_tables(data), *reading_lines(data)]
