"""benchmarks/attribution_tables.py: with judges of two models in the store, each judge is
compared as itself (method and model), not as whichever model's rows came last."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from overseer.traces._attr_types import Attribution
from overseer.traces.evaluate import ResultStore, Row


def _row(method: str, model: str, log: str, agent_ok: bool, step_ok: bool) -> Row:
    a = Attribution(log, method, "A", 0, "r")
    return Row(method, model, "whowhen-alg", log, False, 0, a, agent_ok, step_ok)


def test_two_models_of_one_judge_are_compared_each_on_its_own_answers(
    tmp_path: Path, benchmark_script: Callable[[str], ModuleType]
) -> None:
    store = ResultStore(tmp_path / "a.sqlite")
    logs = ["l1", "l2", "l3"]
    for log in logs:
        store.put(_row("learned", "-", log, True, True))
        store.put(_row("all-at-once", "small", log, False, False))  # wrong on all three
        store.put(_row("all-at-once", "big", log, log == "l1", False))  # right on one
    store.close()
    text = benchmark_script("attribution_tables").attribution_tables(tmp_path / "a.sqlite", None)
    assert "| learned vs all-at-once@small | no | 3 | 3-0 |" in text
    assert "| learned vs all-at-once@big | no | 3 | 2-0 |" in text
