"""Markdown tables of the replay and attribution pages (docs/evidence/replay.md, attribution.md).

Inputs are the outputs of the pages' commands:
  overseer replay whowhen --json > replay.json
  overseer attribute whowhen-alg ... --store results/attribution.sqlite   (and whowhen-hand)
Usage: python benchmarks/attribution_tables.py --replay replay.json \
    --store results/attribution.sqlite [--transfer] [--export rows.jsonl] [--study]
Prints the tables; also writes the store's rows as JSON Lines next to the page with --export
(a header line with the rows' manifest first: overseer.traces.export).
--study (no store, no model, about a minute on one core): the learned scorer over 10 fold
seeds, trivial one-line rules on the same logs with exact McNemar tests, transfer across the
two systems and across task sources (GAIA, AssistantBench) within each, and the frozen split.
--judge-frozen KIND: the next change to the scorer (here a LearnedScorer kind) fitted on the
development logs and judged once on the frozen ones, against the current scorer and the rules.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Literal

from overseer.traces.evaluate import Accuracy, ResultStore, accuracy, compare
from overseer.traces.export import export_row, write_attribution_export
from overseer.traces.learned import Kind

Split = Literal["alg", "hand"]


def _pct(x: float) -> str:
    return f"{x:.1%}"


def replay_tables(path: Path) -> str:
    """Per split and in total: repeats, loop blocks, tokens with and without the rules."""
    doc = json.loads(path.read_text())
    out = [f"Tokenizer: {doc['tokenizer']}; replay took {doc['seconds']} s.", ""]
    head = ("| split | logs | logs with repeats | repeats | loop-breaker blocks | observation "
            "tokens | after purification | context tokens (sum over steps) | with masking + "
            "purification | ratio | purification / masking firings |")  # fmt: skip
    out += [head, "|" + "---|" * 11]
    pos_rows = []
    for split in ("whowhen-hand", "whowhen-alg", None):
        logs = [r for r in doc["logs"] if split is None or r["source"] == split]

        def s(k: str, logs: list[dict] = logs) -> int:
            return sum(r[k] for r in logs)

        fire: Counter[str] = Counter()
        for r in logs:
            fire.update(r["firings"])
        name = split or "all"
        out.append(
            f"| {name} | {len(logs)} | {sum(1 for r in logs if r['repeats'])} | {s('repeats')} | "
            f"{s('loop_blocks')} | {s('observation_tokens'):,} | {s('observation_tokens_rules'):,} "
            f"| {s('context_logged'):,} | {s('context_rules'):,} | "
            f"{s('context_rules') / s('context_logged'):.2f}x | {fire['purification']} / "
            f"{fire['masking']} |"
        )
        pos = Counter(r["position"] for r in logs)
        rpos = Counter(r["repeat_position"] for r in logs)
        pos_rows.append(
            f"| {name} | {pos['before']} | {pos['at']} | {pos['after']} | {pos['none']} | "
            f"{rpos['before']} | {rpos['at']} | {rpos['after']} | {rpos['none']} |"
        )
    out += ["", "| split | first firing before mistake | at | after | no firing | first repeat "
            "before | at | after | no repeat |", "|" + "---|" * 9, *pos_rows]  # fmt: skip
    return "\n".join(out)


def _acc_row(a: Accuracy) -> str:
    outc = ", ".join(f"{k} {v}" for k, v in sorted(a.outcomes.items()))
    return (
        f"| {a.method} | {a.model} | {'yes' if a.with_truth else 'no'} | {a.n} | {_pct(a.agent)} "
        f"[{a.agent_lo:.0%}, {a.agent_hi:.0%}] | {_pct(a.step)} [{a.step_lo:.0%}, "
        f"{a.step_hi:.0%}] | {a.tokens_per_log:,.0f} | {a.seconds_per_log:.1f} | {outc} |"
    )


def attribution_tables(path: Path, export: Path | None) -> str:
    """Accuracy per split (full split for LLM-free methods, the judged subset for all methods)
    and exact McNemar tests."""
    store = ResultStore(path)
    rows = store.rows()
    store.close()
    out = []
    head = ("| method | model | truth | n | agent (95% CI) | step (95% CI) | tokens/log | s/log "
            "| outcomes |")  # fmt: skip
    for split in ("whowhen-alg", "whowhen-hand"):
        rs = [r for r in rows if r.split == split]
        done: dict[str, set[tuple[str, bool]]] = {}
        for r in rs:
            if r.model != "-":
                done.setdefault(r.log_id, set()).add((r.method, r.with_truth))
        full = max((len(v) for v in done.values()), default=0)
        judged = {k for k, v in done.items() if len(v) == full}  # every judge, both settings
        out += [f"### {split}: all logs", "", head, "|" + "---|" * 9]
        out += [_acc_row(a) for a in accuracy(r for r in rs if r.model == "-")]
        if judged:
            out += ["", f"### {split}: the judged subset (n = {len(judged)}, seed 0)", "", head,
                    "|" + "---|" * 9]  # fmt: skip
            out += [_acc_row(a) for a in accuracy(r for r in rs if r.log_id in judged)]
        out += ["", "| a vs b | truth | n | agent a-b wins | p | step a-b wins | p |",
                "|" + "---|" * 7]  # fmt: skip
        # a judge is named with its model (`method@model`), an LLM-free method by `method@-`
        names = sorted({f"{r.method}@{r.model}" for r in rs})
        pairs = [("learned@-", m) for m in names if m != "learned@-"]
        pairs += [(j, f"{b}@-") for j in names if not j.endswith("@-")
                  for b in ("random", "most-frequent")]  # fmt: skip
        for a, b in pairs:
            for wt in (False, True):
                free = a.endswith("@-") and b.endswith("@-")
                sub = rs if free else [r for r in rs if r.log_id in judged]
                c = compare(sub, a, b, split, wt)
                if c.n:
                    shown = f"{a.removesuffix('@-')} vs {b.removesuffix('@-')}"
                    out.append(
                        f"| {shown} | {'yes' if wt else 'no'} | {c.n} | {c.agent_wins}-"
                        f"{c.agent_losses} | {c.agent_p:.3g} | {c.step_wins}-{c.step_losses} | "
                        f"{c.step_p:.3g} |"
                    )
        out.append("")
    if export is not None:
        write_attribution_export((export_row(r) for r in rows), export)
    return "\n".join(out)


def transfer_table() -> str:
    """The learned scorer trained on one split and tested on the other (no cross-validation)."""
    import asyncio

    from overseer.traces import load_whowhen
    from overseer.traces.evaluate import wilson
    from overseer.traces.learned import LearnedScorer

    out = [
        "| trained on | tested on | n | agent (95% CI) | step (95% CI) |",
        "|---|---|---|---|---|",
    ]
    pairs: tuple[tuple[Split, Split], ...] = (("alg", "hand"), ("hand", "alg"))
    for train, test in pairs:
        m = LearnedScorer("logreg", seed=0)
        m.fit(load_whowhen(train))
        logs = load_whowhen(test)
        got = [asyncio.run(m.attribute(t)) for t in logs]
        ka = sum(a.agent_correct(t) for a, t in zip(got, logs, strict=True))
        ks = sum(a.step_correct(t) for a, t in zip(got, logs, strict=True))
        n = len(logs)
        (al, ah), (sl, sh) = wilson(ka, n), wilson(ks, n)
        out.append(f"| {train} | {test} | {n} | {ka / n:.1%} [{al:.0%}, {ah:.0%}] | "
                   f"{ks / n:.1%} [{sl:.0%}, {sh:.0%}] |")  # fmt: skip
    return "\n".join(out)


def window_table(window: int = 8192, tokenizer: str = "qwen2.5-coder-0.5b") -> str:
    """How the all-at-once judge would have to fit each split into `window` tokens (no model
    call): logs that fit, logs chunked (and into how many chunks), steps clipped."""
    from collections import Counter

    from overseer.models import ScriptedModel
    from overseer.traces import load_whowhen
    from overseer.traces.judges import AllAtOnce
    from overseer.traces.replay import ModelTokenizer

    tok = ModelTokenizer.load(tokenizer)
    judge = AllAtOnce(ScriptedModel([]), window=window, count=tok.count)
    out = ["| split | logs | fit in one prompt | chunked | chunks (median, max) | steps clipped "
           "(logs) |", "|---" * 6 + "|"]  # fmt: skip
    for split in ("alg", "hand"):
        logs = load_whowhen(split)
        chunks, clipped = [], []
        for t in logs:
            notes: Counter[str] = Counter()
            fit = judge.fitter(t, judge.ASK + judge.CHUNK_ASK, False)
            chunks.append(len(fit.chunks(t, notes)))
            clipped.append(notes["clipped_steps"])
        many = sorted(c for c in chunks if c > 1)
        med = many[len(many) // 2] if many else 0
        cut = sum(1 for c in clipped if c)
        out.append(f"| {split} | {len(logs)} | {chunks.count(1)} | {len(many)} | {med}, "
                   f"{max(chunks)} | {sum(clipped)} ({cut}) |")  # fmt: skip
    tok.close()
    return "\n".join(out)


SPLITS: dict[Split, str] = {"alg": "whowhen-alg", "hand": "whowhen-hand"}


def _pp(k: int, n: int) -> str:
    from overseer.stats import wilson

    lo, hi = wilson(k, n)
    return f"{k / n:.1%} [{lo:.0%}, {hi:.0%}]"


def _p_range(ps: list[float]) -> str:
    return f"{min(ps):.2g}-{max(ps):.2g}" if len(ps) > 1 else f"{ps[0]:.2g}"


def seed_table(per_seed: dict, seeds: list[int]) -> list[str]:
    """Per split: the learned scorer's accuracy over the fold seeds (mean, range, each)."""
    from overseer.traces.study import spread

    out = ["| split | n | fold seeds | agent: mean (range) | step: mean (range) | step per seed |",
           "|---|---|---|---|---|---|"]  # fmt: skip
    for split, runs in per_seed.items():
        a, st = spread(runs, 0), spread(runs, 1)
        n = len(next(iter(runs.values())))
        each = ", ".join(f"{x:.1%}" for x in st.each)
        out.append(f"| {SPLITS[split]} | {n} | {seeds[0]}-{seeds[-1]} | {a.mean:.1%} "
                   f"({a.low:.1%}-{a.high:.1%}) | {st.mean:.1%} ({st.low:.1%}-{st.high:.1%}) "
                   f"| {each} |")  # fmt: skip
    return out


def rules_table(split: Split, logs: list, runs: dict) -> list[str]:
    """The trivial rules on one split's logs, each paired with the learned scorer: wins-losses
    and the exact McNemar p at fold seed 0, and the range of p over every fold seed."""
    from overseer.traces.study import RULES, pair, rule_outcomes

    n = len(logs)
    out = [f"**{SPLITS[split]}** (n = {n}; learned at fold seed 0: agent "
           f"{_pp(sum(o[0] for o in runs[0].values()), n)}, step "
           f"{_pp(sum(o[1] for o in runs[0].values()), n)})", "",
           "| rule | agent (95% CI) | learned vs rule, agent: W-L, p (seed 0) | p over seeds "
           "| step (95% CI) | learned vs rule, step: W-L, p (seed 0) | p over seeds |",
           "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, rule in RULES.items():
        got = rule_outcomes(rule, logs, logs)
        cells = []
        for level in (0, 1):
            ps = [pair(r, got, level) for r in runs.values()]
            first = pair(runs[0], got, level)
            cells += [_pp(first.b, n), f"{first.wins}-{first.losses}, p = {first.p:.2g}",
                      _p_range([x.p for x in ps])]  # fmt: skip
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out


def transfer_rows(label: str, train: list, test: list) -> list[str]:
    """The learned scorer fitted on `train` and tested on `test`, beside the trivial rules on
    `test` (counting rules count over `test` itself), each with its McNemar test."""
    from overseer.traces.learned import LearnedScorer
    from overseer.traces.study import RULES, pair, rule_outcomes, scorer_outcomes

    m = LearnedScorer("logreg", seed=0)
    m.fit(train)
    mine, n = scorer_outcomes(m, test), len(test)
    ka, ks = sum(o[0] for o in mine.values()), sum(o[1] for o in mine.values())
    out = [f"| {label} | {len(train)} -> {n} | learned | {_pp(ka, n)} | - | {_pp(ks, n)} | - |"]
    for name, rule in RULES.items():
        got = rule_outcomes(rule, test, test)
        a, st = pair(mine, got, 0), pair(mine, got, 1)
        out.append(f"| | | {name} | {_pp(a.b, n)} | {a.wins}-{a.losses}, {a.p:.2g} | "
                   f"{_pp(st.b, n)} | {st.wins}-{st.losses}, {st.p:.2g} |")  # fmt: skip
    return out


def study_tables(seeds: list[int]) -> str:
    """The tables of --study: fold seeds, trivial rules, transfer, frozen split."""
    from overseer.traces import load_whowhen, task_sources
    from overseer.traces.learned import LearnedScorer
    from overseer.traces.study import FROZEN_SEED, cv_outcomes, frozen_ids

    logs = {s: load_whowhen(s) for s in SPLITS}
    scorer = LearnedScorer("logreg", seed=0)  # one feature cache for every seed
    per_seed = {s: {k: cv_outcomes(scorer, logs[s], k) for k in seeds} for s in SPLITS}
    out = ["#### The learned scorer over fold seeds (5 folds by log)", "",
           *seed_table(per_seed, seeds), "", "#### Trivial rules on the same logs", ""]  # fmt: skip
    for s in SPLITS:
        out += [*rules_table(s, logs[s], per_seed[s]), ""]
    head = ["| transfer | train -> test logs | method | agent (95% CI) | learned vs it: W-L, p "
            "| step (95% CI) | learned vs it: W-L, p |", "|---" * 7 + "|"]  # fmt: skip
    out += ["#### Across systems", "", *head]
    out += transfer_rows("alg -> hand", logs["alg"], logs["hand"])
    out += transfer_rows("hand -> alg", logs["hand"], logs["alg"])
    src = task_sources()
    out += ["", "#### Across task sources within a split", "", *head]
    for s in SPLITS:
        for a, b in (("GAIA", "AssistantBench"), ("AssistantBench", "GAIA")):
            tr = [t for t in logs[s] if src[t.id] == a]
            te = [t for t in logs[s] if src[t.id] == b]
            out += transfer_rows(f"{s}: {a} -> {b}", tr, te)
    out += ["", f"#### The frozen split (seed {FROZEN_SEED})", ""]
    out += [f"- {SPLITS[s]}: {', '.join(frozen_ids(logs[s]))}" for s in SPLITS]
    return "\n".join(out)


def frozen_table(kind: Kind) -> str:
    """The next scorer change judged once on the frozen split: a `LearnedScorer(kind)` as the
    candidate against the current scorer (logreg) and the trivial rules, per split. Spends the
    frozen split: run it once, for the change it was frozen for, and report what it prints."""
    from overseer.traces import load_whowhen
    from overseer.traces.learned import LearnedScorer
    from overseer.traces.study import judge_on_frozen

    out = []
    for s, split in SPLITS.items():
        current, candidate = LearnedScorer("logreg", seed=0), LearnedScorer(kind, seed=0)
        ids, rows = judge_on_frozen(load_whowhen(s), current, candidate)
        n = len(ids)
        out += [f"**{split}**, frozen logs (n = {n}): candidate learned-{kind} at agent "
                f"{_pp(rows[0].agent.a, n)}, step {_pp(rows[0].step.a, n)}", "",
                "| candidate vs | agent (95% CI) | W-L, p | step (95% CI) | W-L, p |",
                "|---|---|---|---|---|"]  # fmt: skip
        for r in rows:
            a, st = r.agent, r.step
            out.append(f"| {r.against} | {_pp(a.b, n)} | {a.wins}-{a.losses}, {a.p:.2g} | "
                       f"{_pp(st.b, n)} | {st.wins}-{st.losses}, {st.p:.2g} |")  # fmt: skip
        out.append("")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replay", type=Path)
    ap.add_argument("--store", type=Path)
    ap.add_argument("--export", type=Path, help="write the store's rows here (JSON Lines)")
    ap.add_argument("--transfer", action="store_true", help="learned scorer across splits")
    ap.add_argument("--windows", action="store_true", help="how logs fit an 8k window")
    ap.add_argument("--study", action="store_true", help="fold seeds, trivial rules, transfer")
    ap.add_argument("--seeds", type=int, default=10, help="fold seeds for --study (0..N-1)")
    ap.add_argument("--judge-frozen", metavar="KIND", choices=("logreg", "boost"),
                    help="judge a scorer change once on the frozen split")  # fmt: skip
    args = ap.parse_args()
    if args.judge_frozen:
        print(frozen_table(args.judge_frozen))
    if args.study:
        print(study_tables(list(range(args.seeds))))
        print()
    if args.windows:
        print(window_table())
        print()
    if args.transfer:
        print(transfer_table())
        print()
    if args.replay:
        print(replay_tables(args.replay))
        print()
    if args.store:
        print(attribution_tables(args.store, args.export))


if __name__ == "__main__":
    main()
