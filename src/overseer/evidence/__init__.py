"""Evidence pages: each seed claim run at a stated size on a stated model, stored in a
resumable result store, and written up as docs/evidence/CLAIM.md with the paper's figure,
our protocol, our tables with 95% intervals, paired comparisons and plots.

Exported is what `benchmarks/evidence.py` needs: the claims as data (`CLAIMS`, `Claim`,
`PaperFigure`, `get_claim`) and running one (`run_claim`, into `DEFAULT_OUT`, pages in
`DEFAULT_DOCS`). The claim runners (`runs`, `bench_claims`, `games`, `pruning`), the page
writer (`page`, `plots`), its tables and power (`tables`), the verdicts (`reading`), the page's
export (`export`) and the README rows generated from the pages (`readme`) are submodules.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from overseer.evidence.claims import CLAIMS, Claim, PaperFigure, get_claim
from overseer.evidence.runs import Context, Part, RunLog

DEFAULT_OUT = Path("results") / "evidence"
DEFAULT_DOCS = Path("docs") / "evidence"


def _compose(ctx: Context) -> list[Part]:
    """The monitor and the pruned team come from the `monitor` and `prune` claims of the same
    size: reused when those ran, else trained now in their stores (games and masks only)."""
    from overseer.evidence.bench_claims import compose_parts
    from overseer.evidence.games import trained_monitor
    from overseer.evidence.pruning import compose_inputs

    def sibling(name: str) -> Context:
        sib = dataclasses.replace(ctx, claim=get_claim(name), ran=0)
        sib.loader = ctx.loader  # one model in memory for the three stores
        return sib

    mon, pru = sibling("monitor"), sibling("prune")
    monitor = trained_monitor(mon)
    full, pruned = compose_inputs(pru)
    ctx.ran += mon.ran + pru.ran
    return compose_parts(ctx, monitor, full, pruned)


def _runner(name: str) -> Callable[[Context], list[Part]]:
    from overseer.evidence import bench_claims, games, pruning

    return {
        "supervise": bench_claims.supervise_parts,
        "monitor": games.monitor_parts,
        "prune": pruning.prune_parts,
        "masfly": bench_claims.masfly_parts,
        "compose": _compose,
    }[name]


def run_claim(
    name: str,
    *,
    size: str = "default",
    model: str = "qwen2.5-coder-0.5b",
    out_dir: Path = DEFAULT_OUT,
    docs_dir: Path = DEFAULT_DOCS,
    command: str = "",
    progress: bool = True,
    prompt_cache: bool = True,
) -> Path:
    """Run what is not yet stored of a claim at a size, then write its page; the page's path.
    `prompt_cache=False` turns llama.cpp's prefix cache off, so equal prompts give equal
    outputs and a mechanism that never fires leaves a pair identical (own store, `-nocache`).
    Bad names or sizes raise ValueError naming them."""
    from overseer.evidence.page import write_page

    claim = get_claim(name)
    claim.size(size)
    ctx = Context(claim, size, model, out_dir, progress=progress, prompt_cache=prompt_cache)
    log = RunLog(ctx.out_dir / f"{ctx.stem}.runs.json")
    start = time.monotonic()
    try:
        parts = _runner(name)(ctx)
    finally:
        ctx.close()
        if ctx.ran:
            log.add(command=command, seconds=time.monotonic() - start, episodes=ctx.ran)
    return write_page(
        claim,
        parts,
        docs_dir,
        command=command,
        model=model,
        size=size,
        seconds=log.seconds(),
        store=ctx.store,
        prompt_cache=prompt_cache,
    )


__all__ = [
    "CLAIMS",
    "DEFAULT_DOCS",
    "DEFAULT_OUT",
    "Claim",
    "PaperFigure",
    "get_claim",
    "run_claim",
]
