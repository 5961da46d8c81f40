"""The peers page of benchmarks/framework_tasks.py (issue 48): overseer beside what a user of
each framework would pick instead, per framework and task family, from the stored rows.

Families: (a) page-and-loop tasks (kind `answerable`), (b) AgentDojo's user tasks (`dojo-*`),
(c) unanswerable tasks (`failing`, `missing`, `unfound`: right is saying it could not be found).
The best peer of a framework and family is the arm, among the plain agent and the peers, with
the most right answers (ties: the fewest prompt tokens). The goal, stated as measured: on (a)
and (b) overseer's prompt tokens <= 0.8x the best peer's at accuracy non-inferior to it (the
one-sided 95% lower bound of Newcombe's paired interval above -10 points), and on (c) no more
invented answers than the best peer.

Not a package: the entry point puts this folder on `sys.path`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from _frameworks_report import Row, Store
from _frameworks_runners import FRAMEWORKS, MASK_KEEP, PEERS, applies

#: written before any held-out run (issue 48 item 2): the seeds and sizes the page judges on
DECLARED = (
    "Declared before the runs (2026-11-28, commit d461de6): held-out task seeds 40 and 41 of "
    "`overseer.tasks.pageloop` (`PEER_HELDOUT_SEEDS`) at 11,000-13,000 characters a page "
    "(`PEER_CHARS`), kinds answerable, failing, missing and unfound; AgentDojo's suites as "
    "packaged (fixed, seed 0), their first non-trivial user tasks. Development (tuning): seed "
    "29 only. Prompt cache off (a fresh `overseer serve` per run); temperature 0; at most 8 "
    "model calls a run, 128 completion tokens a call; qwen2.5-coder-0.5b."
)
FAMILIES = {"a": "(a) page-and-loop", "b": "(b) AgentDojo", "c": "(c) unanswerable"}
OURS = "with"
MARGIN = -0.10
#: below this many paired tasks a cell is shown but not judged (its interval spans everything)
MIN_N = 10
TOKENS_GOAL = 0.8


def family(r: Row) -> str:
    """The family letter of a row's task."""
    if r.kind.startswith("dojo"):
        return "b"
    return "a" if r.kind == "answerable" else "c"


@dataclass(frozen=True)
class Versus:
    """overseer against one arm on their common tasks."""

    arm: str
    n: int
    both: int
    wins: int  # overseer right, the arm wrong
    losses: int
    tokens: tuple[float, float, float]  # overseer / arm, paired bootstrap 95%
    invented: tuple[int, int]  # overseer's, the arm's

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        from overseer.bench.stats import newcombe_paired

        return newcombe_paired(self.both, self.wins, self.losses, self.n, level=level)

    @property
    def bound(self) -> float:
        """The one-sided 95% lower bound of overseer's accuracy minus the arm's."""
        return self.interval(0.90)[0]


def _by_task(rows: Sequence[Row], fw: str, fam: str, arm: str) -> dict[str, Row]:
    return {r.task: r for r in rows if (r.framework, r.arm) == (fw, arm) and family(r) == fam}


def versus(rows: Sequence[Row], fw: str, fam: str, arm: str) -> Versus | None:
    """overseer (`with`) against `arm` for `fw` on family `fam`, paired by task."""
    from overseer.bench.stats import bootstrap_ratio

    ours, theirs = _by_task(rows, fw, fam, OURS), _by_task(rows, fw, fam, arm)
    keys = sorted(ours.keys() & theirs.keys())
    if not keys:
        return None
    pairs = [(ours[k], theirs[k]) for k in keys]
    ratio = bootstrap_ratio(
        [t.prompt_tokens for _, t in pairs], [o.prompt_tokens for o, _ in pairs]
    )
    return Versus(
        arm, len(pairs),
        sum(o.right and t.right for o, t in pairs),
        sum(o.right and not t.right for o, t in pairs),
        sum(t.right and not o.right for o, t in pairs),
        ratio, (sum(o.invented for o, _ in pairs), sum(t.invented for _, t in pairs)),
    )  # fmt: skip


def best_peer(rows: Sequence[Row], fw: str, fam: str) -> str | None:
    """The arm among the plain agent and the peers with the best share of right answers on
    the tasks overseer ran (ties: fewer prompt tokens a task), among the arms that ran at
    least 80% of what the arm that ran most of them did: an arm run on one task is not "best"
    for being cheap there."""
    ours = _by_task(rows, fw, fam, OURS)
    common = {}
    for arm in ("without", *PEERS):
        theirs = _by_task(rows, fw, fam, arm)
        keys = ours.keys() & theirs.keys()
        if applies(fw, arm) and keys:
            common[arm] = (theirs, keys)
    most = max((len(k) for _, k in common.values()), default=0)
    scored = [
        (-sum(t[k].right for k in keys) / len(keys),
         sum(t[k].prompt_tokens for k in keys) / len(keys), arm)
        for arm, (t, keys) in common.items() if len(keys) >= 0.8 * most
    ]  # fmt: skip
    return min(scored)[2] if scored else None


def goal(rows: Sequence[Row], fw: str, fam: str) -> tuple[bool | None, str]:
    """Whether the goal holds for `fw` on `fam` (None: not run), in words."""
    peer = best_peer(rows, fw, fam)
    v = versus(rows, fw, fam, peer) if peer else None
    if v is None:
        return None, "not run"
    if v.n < MIN_N:
        return None, f"too few tasks to judge: n = {v.n} (best peer so far: {peer})"
    if fam == "c":
        ok = v.invented[0] <= v.invented[1]
        return ok, f"invented {v.invented[0]} vs {v.invented[1]} ({peer}), n = {v.n}"
    ok = v.tokens[0] <= TOKENS_GOAL and v.bound > MARGIN
    return ok, (
        f"tokens {v.tokens[0]:.2f}x {peer}'s; right {v.both + v.wins} vs {v.both + v.losses} "
        f"of {v.n}, lower bound {v.bound:+.0%} (margin {MARGIN:.0%})"
    )


def arm_rows(rows: Sequence[Row], fw: str, fam: str) -> list[str]:
    """One table line per arm that ran: n, right, invented, tokens, what acted, vs overseer."""
    out = []
    for arm in ("without", *PEERS, OURS, "proxy"):
        mine = list(_by_task(rows, fw, fam, arm).values())
        if not mine:
            continue
        n, v = len(mine), versus(rows, fw, fam, arm) if arm != OURS else None
        lo, hi = v.interval() if v else (0.0, 0.0)
        vs = (
            f"{v.wins}/{v.losses} | {(v.wins - v.losses) / v.n:+.0%} [{lo:+.0%}, {hi:+.0%}] | "
            f"{v.tokens[0]:.2f}x ({v.tokens[1]:.2f}-{v.tokens[2]:.2f})"
            if v
            else " | | "
        )
        out.append(
            f"| {arm} | {n} | {sum(r.right for r in mine)} | {sum(r.invented for r in mine)} | "
            f"{sum(r.prompt_tokens for r in mine):,} | {sum(r.evaluated_tokens for r in mine):,} "
            f"| {sum(bool(r.acted) for r in mine)} | {vs} |"
        )
    return out


#: why a peer at its documented settings can leave every request of these runs as it was
IDLE_WHY = {
    "mask": f"masking keeps the last M = {MASK_KEEP} tool outputs whole, and no run here had more",
    "trim": "ToolOutputTrimmer never touches the items after the last `recent_turns` (2) user "
    "messages, and each run here is one user message",
}


def idle_peers(rows: Sequence[Row], fw: str, fam: str) -> str:
    """A sentence naming the peers that changed no request in any of their runs (so they ran
    as the plain agent), with why, or "" when every peer that ran acted somewhere."""
    idle = [
        p for p in PEERS
        if (mine := list(_by_task(rows, fw, fam, p).values())) and not any(r.acted for r in mine)
    ]  # fmt: skip
    if not idle:
        return ""
    why = "; ".join(IDLE_WHY[p] for p in idle if p in IDLE_WHY)
    return (
        f"{', '.join(idle)} changed no request in any of {'its' if len(idle) == 1 else 'their'} "
        f"runs (acted on 0), so {'it' if len(idle) == 1 else 'they'} ran as the plain agent"
        + (f": {why}." if why else ".")
    )


def none_right(rows: Sequence[Row], fw: str, fam: str) -> str:
    """A sentence when no arm answered any task of the cell right: the cell then says nothing
    about accuracy (its bound is the interval's width at this n), only about tokens."""
    arms = [list(_by_task(rows, fw, fam, a).values()) for a in ("without", *PEERS, OURS)]
    if fam == "c" or not any(arms) or any(r.right for mine in arms for r in mine):
        return ""
    return (
        "No arm answered any task right: the model does not do these tasks, so the accuracy "
        "bound is only the interval's width at this n (no difference was measured); the "
        "tokens are the cell's one reading."
    )


HEAD = (
    "| arm | n | right | invented | prompt tokens | evaluated | acted on | overseer W/L "
    "| overseer - arm, right [95%] | overseer's tokens / arm's [95%] |"
)


def mde(rows: Sequence[Row], fw: str, fam: str) -> str:
    """The smallest accuracy difference the family's n could detect against its best peer."""
    from overseer.bench.stats import mcnemar_mde

    peer = best_peer(rows, fw, fam)
    v = versus(rows, fw, fam, peer) if peer else None
    if v is None:
        return ""
    share = max((v.wins + v.losses) / v.n, 0.05)
    found = mcnemar_mde(v.n, share)
    if found != found:  # NaN: no effect up to 100 points is detectable at this n
        return f"n = {v.n}: no difference in accuracy is detectable at this n"
    return f"n = {v.n}: the smallest difference it could detect is {found:.0%}"


def verdict(rows: Sequence[Row]) -> str:
    """The page's title: the goal, per framework and family, as measured."""
    held, missed, thin = [], [], []
    for fw in FRAMEWORKS:
        for fam in FAMILIES:
            ok, said = goal(rows, fw, fam)
            if ok is None and said != "not run":
                thin.append(f"{fw} {fam}")
            elif ok is not None:
                (held if ok else missed).append(f"{fw} ({fam})")
    if not held and not missed:
        return (
            "overseer beside the frameworks' own context control: inconclusive, "
            f"{len(thin)} framework-family cells run with fewer than {MIN_N} tasks each"
        )
    return (
        f"overseer beside the frameworks' own context control: the goal is met in {len(held)} "
        f"of {len(held) + len(missed)} framework-family cells judged"
        + (f", missed in {', '.join(missed)}" if missed else "")
    )


def write(path: Path, rows: Sequence[Row], store: Store, declared: str) -> None:
    """The page: verdict, what was declared before the run, then a table per framework and
    family with the goal's line."""
    lines = [f"# {verdict(rows)}", "", declared, ""]
    lines += [f"Command: `{store.note('command') or '?'}`; {store.note('date') or '?'}.", ""]
    for fw in FRAMEWORKS:
        for fam, name in FAMILIES.items():
            body = arm_rows(rows, fw, fam)
            if not body:
                continue
            ok, said = goal(rows, fw, fam)
            mark = "holds" if ok else "missed" if ok is not None else "not judged"
            lines += [f"## {fw}, {name}", "", f"Goal {mark}: {said}. {mde(rows, fw, fam)}.", ""]
            lines += [HEAD, "|" + "---|" * 10, *body, ""]
            lines += [idle, ""] if (idle := idle_peers(rows, fw, fam)) else []
            lines += [blank, ""] if (blank := none_right(rows, fw, fam)) else []
    commits = sorted({r.commit for r in rows})
    lines += [f"Code: {', '.join(commits)}.", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
