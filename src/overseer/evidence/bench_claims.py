"""The claims that are `overseer bench` comparisons on a packaged suite: supervise, masfly,
compose. Each returns the parts of its page."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from overseer.bench import ConfigRegistry, ResultRecord
from overseer.evidence.pruning import pruned_acts
from overseer.evidence.runs import Context, Part, run_configs, suite_tasks
from overseer.experiments.registry import bench_configs
from overseer.runtime import TeamSpec, make_team

#: the name each part's page gives a configuration (one not named here keeps its own)
_LABELS = {
    "supervise": {
        "baseline": "team (coder + reviewer, Python tool)",
        "baseline+supervise:rules": "team + rule tier (no LLM)",
        "supervised": "team + SupervisorAgent (LLM)",
    },
    "browse": {
        "direct": "direct (one call, no tools)",
        "baseline": "team (researcher + writer, browser tools)",
        "baseline+supervise:rules": "team + rule tier (no LLM)",
    },
    "masfly": {
        "chain": "chain team (3 agents)",
        "complete": "complete team (3 agents)",
        "masfly": "MASFly (with the Watcher)",
        "masfly-nowatch": "MASFly without the Watcher",
    },
}
#: MASFly's two configurations, with and without the Watcher (the ablation)
_WATCH = ("masfly", "masfly-nowatch")


def supervise_parts(ctx: Context) -> list[Part]:
    """HumanEval: the workload team without and with the SupervisorAgent, and one call."""
    from overseer.experiments.supervise import supervise_configs

    reg = bench_configs(agents=2, rounds=1, suite="humaneval")
    for c in supervise_configs("humaneval"):
        reg.replace(c)
    names = ["direct", "baseline", "baseline+supervise:rules", "supervised"]
    tasks = suite_tasks("humaneval", "test", ctx.size["limit"], ctx.seed)
    recs = run_configs(ctx, reg.resolve(names), tasks)
    labels = _LABELS["supervise"]
    parts = [Part("HumanEval (test split)", recs, names, "baseline", labels, "pass@1")]
    return [*parts, _browse_part(ctx)] if ctx.size.get("browse") else parts


def _browse_part(ctx: Context) -> Part:
    """The calibrated browse suite: a workload with waste for the rule tier to cut."""
    reg = bench_configs(agents=2, rounds=1, suite="browse")
    names = ["direct", "baseline", "baseline+supervise:rules"]
    tasks = suite_tasks("browse", "test", ctx.size["browse"], ctx.seed)
    recs = run_configs(ctx, reg.resolve(names), tasks)
    return Part("browse (calibrated, test split)", recs, names, "baseline", _LABELS["browse"])


def _distill(ctx: Context, adapt_store: Path, suite: str, limit: int) -> None:
    """Distil the first `limit` training tasks into MASFly's repository, once each."""
    from overseer.adapt import Embedder
    from overseer.experiments.adapt_campaign import campaign_stores, distill_tasks, training_tasks

    marker = adapt_store.with_suffix(".distilled.json")
    done = set(json.loads(marker.read_text())) if marker.is_file() else set()
    tasks, train_ids = training_tasks(suite, seed=ctx.seed, limit=limit)
    todo = [t for t in tasks if t.id not in done]
    if not todo:
        return
    repo, pool = campaign_stores(adapt_store, Embedder(), starter=True)
    trace_dir = ctx.out_dir / "runs" / "adapt"
    asyncio.run(
        distill_tasks(ctx.loader(), repo, pool, todo, train_ids, seed=ctx.seed, trace_dir=trace_dir)
    )
    marker.write_text(json.dumps(sorted(done | {t.id for t in todo})))
    ctx.ran += len(todo)


def masfly_parts(ctx: Context) -> list[Part]:
    """HumanEval: fixed teams, MASFly with and without the Watcher, and one call."""
    adapt_store = ctx.artefact("adapt.sqlite")
    _distill(ctx, adapt_store, "humaneval", ctx.size["distill"])
    reg = bench_configs(agents=3, rounds=1, suite="humaneval", adapt_store=adapt_store)
    names = ["direct", "chain", "complete", *_WATCH]
    tasks = suite_tasks("humaneval", "test", ctx.size["limit"], ctx.seed)
    recs = run_configs(ctx, reg.resolve(names), tasks)
    labels = _LABELS["masfly"]
    ablation = [r for r in recs if r.key.config in _WATCH]
    acted = dict.fromkeys(_WATCH, own_team(make_team("complete", 3).names))
    note = (
        "paired with the best fixed team of the paper's headline, the complete team; "
        "*acted on* counts MASFly where its team differs from that fixed team, or a "
        "Watcher verdict is in the trace"
    )
    return [
        Part("HumanEval (test split)", recs, names, "complete", labels, "pass@1", note, acted),
        Part(
            "Watcher ablation (the same tasks)",
            ablation,
            _WATCH,
            "masfly",
            labels,
            "pass@1",
            "",
            acted,
        ),
    ]


def own_team(fixed: Sequence[str]) -> Callable[[ResultRecord], bool | None]:
    """MASFly acts on a task when the team it built (agent names kept in the result) is not
    the fixed team; None when the result kept no team."""

    def test(rec: ResultRecord) -> bool | None:
        team = rec.extra.get("team")
        return None if not isinstance(team, list) else list(team) != list(fixed)

    return test


def compose_names(monitor: Path, full: Path, pruned: Path) -> dict[str, str]:
    """The compose configurations (composition grammar) -> their labels on the page."""
    return {
        "direct": "one direct call",
        f"pruned:{full}": "team alone (complete, shared thoughts)",
        f"pruned:{full}+supervise:rules": "+ supervise (rule tier)",
        f"pruned:{full}+monitor:{monitor}": "+ monitor (rollback)",
        f"pruned:{pruned}": "pruned team (AgentPrune)",
        f"pruned:{pruned}+supervise:rules+monitor:{monitor}": "all composed",
    }


def compose_parts(ctx: Context, monitor: Path, full: Path, pruned: Path) -> list[Part]:
    """MMLU sample: the team alone, each plug-in alone, all composed, and one call. The
    monitor file and the full/pruned specs come from the `monitor` and `prune` claims."""
    for path, claim in ((monitor, "monitor"), (full, "prune"), (pruned, "prune")):
        if not path.is_file():
            raise ValueError(f"{path}: missing; run `benchmarks/evidence.py {claim}` first")
    labels = compose_names(monitor, full, pruned)
    reg: ConfigRegistry = bench_configs(agents=3, rounds=2, suite="mmlu-sample")
    names = list(labels)
    tasks = suite_tasks("mmlu-sample", "test", ctx.size["limit"], ctx.seed)
    recs = run_configs(ctx, reg.resolve(names), tasks)
    cut = pruned_acts(TeamSpec.load(pruned), TeamSpec.load(full))
    acted = {n: cut for n in names if n.startswith(f"pruned:{pruned}")}
    return [Part("MMLU sample (test split)", recs, names, names[1], labels, "accuracy", "", acted)]
