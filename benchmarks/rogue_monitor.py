"""Rogue-agent monitor end to end: collect games, train monitors, compare interventions.

Usage: python benchmarks/rogue_monitor.py [--env whodunit-asym] [--model qwen2.5-coder-0.5b]
    [--train 60] [--val 30] [--test 20] [--store results/monitor-bench.sqlite] [-- SIZE OPTIONS]

Runs `overseer monitor collect`, `train` and `eval` in order on one store, so a killed run
resumes where it stopped. Extra options after `--` (e.g. --suspects 4 --turns 9) go to all
three steps. Prints the selection report and the table: no intervention, the trained
monitor with each reset cap, the tuned random monitor.
"""

from __future__ import annotations

import argparse
import sys

from overseer.cli import main as cli


def _for_train(args: list[str]) -> list[str]:
    """The options `train` takes: drop progress flags and play-only options with their value."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in ("--base-url", "--trace-dir"):
            skip = True
        elif a not in ("--no-progress", "--progress"):
            out.append(a)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="whodunit-asym")
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--train", type=int, default=60, help="training games")
    ap.add_argument("--val", type=int, default=30, help="validation games")
    ap.add_argument("--test", type=int, default=20, help="test games per configuration")
    ap.add_argument("--caps", default="1,2")
    ap.add_argument("--store", default="results/monitor-bench.sqlite")
    args, extra = ap.parse_known_args()
    extra = [a for a in extra if a != "--"]
    common = ["--env", args.env, "--model", args.model, "--store", args.store, *extra]
    steps = [
        ["monitor", "collect", *common, "--games", str(args.train), "--val-games", str(args.val)],
        ["monitor", "train", *_for_train(common)],
        ["monitor", "eval", *common, "--games", str(args.test), "--caps", args.caps],
    ]
    for step in steps:
        code = cli(step)
        if code:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
