"""The waste of browse runs, from their traces: tool calls, repeated calls (the same tool and
arguments as an earlier call of the run), dead ends (calls that failed), the characters of tool
observations the agents read, and the run's prompt tokens (from its ledger), per configuration.

    python benchmarks/browse_waste.py runs/bench/baseline runs/bench/baseline+supervise:rules \
        --suite browse

A trace directory holds one JSONL trace per run (`overseer bench` writes them under
runs/bench/CONFIG). Only the runs of the named suite's tasks are counted (by run id prefix).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Waste:
    """One run's tool use and prompt tokens."""

    calls: int
    repeated: int
    dead_ends: int
    observation_chars: int
    prompt_tokens: int
    answered: bool


def run_waste(path: Path) -> Waste:
    """The waste of one trace file."""
    seen: set[tuple[str, str]] = set()
    calls = repeated = dead = chars = prompt = 0
    answered = False
    for line in path.read_text(encoding="utf-8").splitlines():
        e = json.loads(line)
        if e.get("event") == "interaction" and e.get("tool"):
            key = (str(e["tool"]), str(e.get("input")))
            calls += 1
            repeated += key in seen
            seen.add(key)
            dead += bool(e.get("error"))
            chars += len(str(e.get("observation") or ""))
        elif e.get("event") == "run_end":
            prompt = int(e.get("usage", {}).get("input_tokens", 0))
            answered = bool(str(e.get("answer") or "").strip())
    return Waste(calls, repeated, dead, chars, prompt, answered)


def summary(name: str, runs: Sequence[Waste]) -> str:
    """One Markdown row: means per run and the share of runs with a repeat or a dead end."""
    n = len(runs)

    def mean(xs: list[int]) -> str:
        return f"{statistics.fmean(xs):,.1f}" if xs else "-"

    return (
        f"| {name} | {n} | {mean([r.calls for r in runs])} | {mean([r.repeated for r in runs])} "
        f"| {sum(r.repeated > 0 for r in runs)}/{n} | {mean([r.dead_ends for r in runs])} "
        f"| {mean([r.observation_chars for r in runs])} | {mean([r.prompt_tokens for r in runs])} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("dirs", type=Path, nargs="+", help="trace directories, one per configuration")
    ap.add_argument("--suite", default="browse", help="count runs of this suite only")
    args = ap.parse_args(argv)
    print("| configuration | runs | tool calls | repeated calls | runs with a repeat | dead ends "
          "| observation chars | prompt tokens |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for d in args.dirs:
        if not d.is_dir():
            print(f"browse_waste: {d}: not a trace directory", file=sys.stderr)
            return 2
        files = sorted(d.glob(f"{args.suite.replace('-', '_')}_*.jsonl"))
        print(summary(d.name, [run_waste(p) for p in files]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
