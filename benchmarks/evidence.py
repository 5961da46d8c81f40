"""Run one seed claim at a stated size and write its evidence page, docs/evidence/CLAIM.md.

Results go to a resumable store (results/evidence/CLAIM-SIZE.sqlite): a killed run resumes,
and rerunning a finished claim only rewrites the page. `compose` reuses the monitor file and
the pruned team of the `monitor` and `prune` claims of the same size; where those have not
run, it plays their training games and trains their masks first (in their stores), not their
test runs.

    python benchmarks/evidence.py supervise                 # default size, qwen2.5-coder-0.5b
    python benchmarks/evidence.py monitor --size large
    python benchmarks/evidence.py prune --size tiny --model smollm2-135m
    python benchmarks/evidence.py supervise --no-prompt-cache   # equal prompts, equal outputs
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from overseer.evidence import CLAIMS, DEFAULT_DOCS, DEFAULT_OUT, run_claim


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("claim", choices=list(CLAIMS))
    ap.add_argument("--size", default="default", help="tiny, default or large (see the page)")
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--out-dir", type=Path, default=DEFAULT_OUT, help="result stores")
    ap.add_argument("--docs-dir", type=Path, default=DEFAULT_DOCS, help="where pages go")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument(
        "--no-prompt-cache",
        action="store_true",
        help="llama.cpp prefix cache off: equal prompts, equal outputs (own store)",
    )
    a = ap.parse_args(argv)
    words = ["python", "benchmarks/evidence.py", *(sys.argv[1:] if argv is None else argv)]
    try:
        page = run_claim(a.claim, size=a.size, model=a.model, out_dir=a.out_dir,
                         docs_dir=a.docs_dir, command=shlex.join(words),
                         progress=not a.no_progress,
                         prompt_cache=not a.no_prompt_cache)  # fmt: skip
    except ValueError as exc:
        print(f"evidence: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {page}")
    for line in closing_note(page):
        print(line)
    return 0


def closing_note(page: Path) -> list[str]:
    """The page's headline row, its power and reading, and its run time, for the log."""
    from overseer.evidence.readme import page_row

    text = page.read_text(encoding="utf-8")
    row = page_row(text)
    cells = [c.strip() for c in row.strip("| ").split(" | ")] if row else []
    took = next((ln.split(",")[0] for ln in text.splitlines() if ln.startswith("Run time:")), "")
    if len(cells) != 6:
        return [took] if took else []
    return [f"n: {cells[1]}", f"headline: {cells[2]}", f"direct call: {cells[3]}",
            f"power: {cells[4]}", f"reading: {cells[5]}", took]  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
