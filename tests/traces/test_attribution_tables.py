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


def test_the_export_has_a_manifest_and_the_frozen_table_prints(
    tmp_path: Path, benchmark_script: Callable[[str], ModuleType], monkeypatch
) -> None:
    from overseer import traces
    from overseer.traces import Annotation, TraceStep, Trajectory, learned
    from overseer.traces.export import read_attribution_export

    store = ResultStore(tmp_path / "a.sqlite")
    store.put(_row("learned", "-", "l1", True, False))
    store.close()
    mod = benchmark_script("attribution_tables")
    mod.attribution_tables(tmp_path / "a.sqlite", tmp_path / "rows.jsonl")
    assert [r["log"] for r in read_attribution_export(tmp_path / "rows.jsonl")] == ["l1"]

    class Fixed:
        """Names the second speaker and step 1, whatever it was fitted on."""

        def __init__(self, kind: str, *, seed: int = 0) -> None:
            self.kind = kind

        def fit(self, train: list, *, with_truth: bool = False) -> None:
            pass

        async def attribute(self, t: Trajectory, *, with_truth: bool = False) -> Attribution:
            return Attribution(t.id, self.kind, t.steps[1].agent, 1, "fixed")

    def logs(split: str) -> list[Trajectory]:
        steps = tuple(TraceStep(j, a, "user", f"{split} {j}") for j, a in enumerate("hAB"))
        return [
            Trajectory(f"{split}-{i}", split, "q", steps, annotation=Annotation("A", 1))
            for i in range(10)
        ]

    monkeypatch.setattr(learned, "LearnedScorer", Fixed)
    monkeypatch.setattr(traces, "load_whowhen", logs)
    text = mod.frozen_table("boost")
    assert "**whowhen-alg**, frozen logs (n = 3): candidate learned-boost at agent 100.0%" in text
    assert "| current scorer | 100.0% [44%, 100%] | 0-0, 1 |" in text
