"""A pruned team's mechanism acts on every task when pruning removed an edge (the compose and
prune pages count it so in their *acted on* column)."""

from __future__ import annotations

from overseer.bench import ResultRecord
from overseer.bench._store import ResultKey
from overseer.evidence.pruning import pruned_acts
from overseer.runtime import make_team


def _rec(task: str) -> ResultRecord:
    return ResultRecord(ResultKey("pruned:x", "m", "s", task, 0), "A", "A", True, 1.0, {}, 0.1)


def test_a_team_with_an_edge_removed_acts_on_every_task_and_an_uncut_one_on_none() -> None:
    full = make_team("complete", 3)
    cut = full.model_copy(update={"spatial_edges": list(full.spatial_edges)[1:]})
    assert len(cut.spatial_edges) == len(full.spatial_edges) - 1
    acts = pruned_acts(cut, full)
    assert [acts(_rec(t)) for t in ("t1", "t2")] == [True, True]
    same = pruned_acts(full.model_copy(), full)
    assert same(_rec("t1")) is False
