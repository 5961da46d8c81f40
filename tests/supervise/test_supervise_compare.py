"""benchmarks/supervise_compare.py end to end on the embedded SmolLM2 (one task, two
configurations): the table, the resumable store, per-actor books, and bad input refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from overseer.bench import ResultStore


@pytest.fixture
def sc(benchmark_script: Callable[[str], ModuleType]) -> ModuleType:
    return benchmark_script("supervise_compare")


def test_bad_input_is_refused_before_any_work(tmp_path: Path, sc: ModuleType) -> None:
    base = ["--store", str(tmp_path / "s.sqlite"), "--traces", str(tmp_path / "runs")]
    with pytest.raises(ValueError, match="--configs: unknown"):
        sc.main([*base, "--configs", "baseline,magic"])
    with pytest.raises(ValueError, match=r"learned trigger .*nothing\.json: no such file"):
        sc.main(
            [*base, "--configs", "baseline,learned", "--trigger", str(tmp_path / "nothing.json")]
        )
    assert not (tmp_path / "s.sqlite").exists()


def test_budgets_name_the_rule_tier_configs(tmp_path: Path, sc: ModuleType) -> None:
    rules = sc.RuleSettings(budget_tokens=2000)
    assert sc.stored_name("rules", None, rules) == "rules[tokens=2000]"
    assert sc.stored_name("rules+llm", "qwen", rules) == "rules+llm[tokens=2000]@qwen"
    assert sc.stored_name("llm", None, rules) == "llm"  # the seed's mode has no rule tier
    assert sc.stored_name("baseline", "qwen", rules) == "baseline"
    assert sc.stored_name("rules", None, sc.RuleSettings()) == "rules"
    base = ["--store", str(tmp_path / "s.sqlite"), "--traces", str(tmp_path / "runs")]
    with pytest.raises(ValueError, match="budget_steps: expected None or an integer >= 1"):
        sc.main([*base, "--configs", "baseline,rules", "--budget-steps", "0"])
    assert not (tmp_path / "s.sqlite").exists()


@pytest.mark.e2e
def test_two_configs_on_one_task_print_the_paired_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sc: ModuleType
) -> None:
    store = tmp_path / "s.sqlite"
    argv = [
        "--model", "smollm2-135m", "--suites", "browse-sample", "--configs", "baseline,rules+llm",
        "--limit", "1", "--max-steps", "3", "--store", str(store),
        "--traces", str(tmp_path / "runs"), "--supervisor-model", "smollm2-135m",
        "--markdown", str(tmp_path / "page" / "modes.md"),
    ]  # fmt: skip
    sc.main(argv)
    out = capsys.readouterr().out
    assert "browse-sample: supervision modes" in out
    for col in ("acc [95%]", "tok/task", "supervisor", "McNemar p", "W/L/T", "heeded", "rules"):
        assert col in out
    assert "rules+llm@smollm2-135m" in out  # the supervisor's model is in the stored name
    page = (tmp_path / "page" / "modes.md").read_text()
    assert page.startswith("`python benchmarks/supervise_compare.py --model smollm2-135m")
    assert "| config | n | acc [95%] |" in page
    assert "| rules+llm@smollm2-135m | 1 |" in page
    assert "2 episodes," in page
    with ResultStore(store, readonly=True) as rs:
        recs = list(rs.records())
    assert sorted(r.key.config for r in recs) == ["baseline", "rules+llm@smollm2-135m"]
    sup = next(r for r in recs if r.key.config != "baseline")
    assert "stats:supervisor" in sup.extra and "agent:researcher" in sup.usage_by_actor
    assert list((tmp_path / "runs" / "test" / "rules+llm@smollm2-135m").glob("*.jsonl"))
    # a rerun resumes: nothing left to do, no model loaded, the same table
    sc.main(argv)
    again = capsys.readouterr().out
    assert "browse-sample: supervision modes" in again
