"""What purification's extraction costs per output size, old (scikit-learn TF-IDF) vs new (numpy).

    taskset -c 0 python benchmarks/purify_speed.py            # 1 k, 8 k, 100 k, 1 M, 10 M chars
    taskset -c 0 python benchmarks/purify_speed.py --old-commit a7367a2 --sizes 1000,8000

The outputs are real agents' observations (Who&When's hand-crafted logs, concatenated and cut
to each size), the query one of its questions, the budget the rule tier's (`purify_keep`,
1,500 characters; a 1,000-character output is within it, so it is timed with a 500-character
budget to make the extraction run at all). Rows:

- `extract`: the whole `extract()` call (passages, chrome, ranking, selection) at the old
  commit (its `_extract.py` read with `git show`, scikit-learn's `TfidfVectorizer` inside) and
  now;
- `scorer`: the ranking alone on the same passages: scikit-learn's vectoriser and cosine vs
  `_rank.tfidf_scores` (the same numbers: `tests/supervise/test_extract_rank.py`).

A second table times HTML tool outputs (pageloop pages of seed 29, joined and cut to each
size): `strip_markup` alone (what the rule tier does to a page first), then with the extract
of its text (a 600-character budget, a pageloop question).

Each cell is the best of several timed runs (wall clock; run it pinned to one idle core), after
one warm-up call, so the first call's import of scikit-learn (about 2.4 s, issue 50) is not in
it: it is printed apart. No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np

from overseer.supervise.purify import extract, passages, strip_markup, tfidf_scores
from overseer.traces import load_whowhen

ROOT = Path(__file__).resolve().parents[1]
HTML_SIZES = (8_000, 12_000, 35_000, 100_000)
KEEP = 1500  # RuleSettings().purify_keep
SIZES = (1_000, 8_000, 100_000, 1_000_000, 10_000_000)
SLOW = 20.0  # seconds: a size whose first old call took longer is not repeated for the old code


def corpus(size: int) -> tuple[str, str]:
    """Real observations joined and repeated up to `size` characters, and a question."""
    logs = load_whowhen("hand")
    text = "\n\n".join(s.text for t in logs for s in t.steps if s.is_observation)
    return (text * (size // len(text) + 1))[:size], logs[0].question


def old_module(commit: str) -> types.ModuleType:
    """`supervise/_extract.py` as it was at `commit` (it ranked with scikit-learn)."""
    src = subprocess.run(
        ["git", "show", f"{commit}:src/overseer/supervise/_extract.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    mod = types.ModuleType("old_extract")
    exec(compile(src, f"{commit}:_extract.py", "exec"), mod.__dict__)
    return mod


def sklearn_scores(texts: list[str], query: str) -> np.ndarray:
    """The old scorer, verbatim: scikit-learn's TF-IDF and a cosine with the query."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(
        sublinear_tf=True, token_pattern=r"(?u)\b[^\W_]+\b", lowercase=True, stop_words="english"
    )
    try:
        mat = vec.fit_transform([*texts, query])
    except ValueError:
        return np.zeros(len(texts))
    return np.asarray((mat[:-1] @ mat[-1].T).toarray()).ravel()


def best(fn: Callable[[], object], budget_s: float = 1.0) -> float:
    """The fastest of repeated calls (seconds), repeating for about `budget_s`, 3 to 200 times."""
    times: list[float] = []
    spent = 0.0
    while len(times) < 3 or (spent < budget_s and len(times) < 200):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        spent += times[-1]
    return min(times)


def _cell(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:,.3f} ms" if seconds < 1 else f"{seconds:,.2f} s"


def row(size: int, old: types.ModuleType | None) -> str:
    """One Markdown row: extract old / new, scorer old / new, for one output size."""
    text, query = corpus(size)
    keep = KEEP if size > KEEP else size // 2
    new_extract = best(lambda: extract(text, query, keep))
    texts = [p.text for p in passages(text, min(600, keep))]
    new_scorer = best(lambda: tfidf_scores(texts, query))
    old_extract = old_scorer = None
    if old is not None:
        t0 = time.perf_counter()
        old.extract(text, query, keep)
        if time.perf_counter() - t0 < SLOW:
            old_extract = best(lambda: old.extract(text, query, keep))
            old_scorer = best(lambda: sklearn_scores(texts, query))
    ratio = f"{old_extract / new_extract:.1f}x" if old_extract else "-"
    return (
        f"| {size:,} | {len(texts):,} | {_cell(old_extract)} | {_cell(new_extract)} | {ratio} "
        f"| {_cell(old_scorer)} | {_cell(new_scorer)} |"
    )


def html_row(size: int) -> str:
    """One Markdown row for an HTML page of `size` characters: strip, strip + extract."""
    from overseer.tasks.pageloop import make_tasks

    tasks = make_tasks(20, 29)
    pages = "".join(t.page for t in tasks)
    page = (pages * (size // len(pages) + 1))[:size]
    strip = strip_markup
    alone = best(lambda: strip(page))
    both = best(lambda: extract(strip(page) or page, tasks[0].question, 600))
    return f"| {size:,} | {_cell(alone)} | {_cell(both)} |"


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-commit", default="a7367a2", help="'' to time the new code alone")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--html-sizes", default=",".join(map(str, HTML_SIZES)), help="'' for none")
    args = ap.parse_args(argv)
    old = old_module(args.old_commit) if args.old_commit else None
    if old is not None:
        t0 = time.perf_counter()
        import sklearn.feature_extraction.text  # noqa: F401  (the old path's first-use stall)

        print(f"old path's first use: scikit-learn import {time.perf_counter() - t0:.2f} s")
    print(
        "| output chars | passages | extract, old | extract, new | speed-up "
        "| scorer, old | scorer, new |\n|---|---|---|---|---|---|---|"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        print(row(size, old), flush=True)
    if args.html_sizes:
        print("\n| HTML page chars | strip_markup | strip_markup + extract |\n|---|---|---|")
        for size in (int(s) for s in args.html_sizes.split(",")):
            print(html_row(size), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
