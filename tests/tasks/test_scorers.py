"""Scorers on hand-written outputs, and HumanEval code run in the real sandbox."""

from __future__ import annotations

import pytest

from overseer.tasks import ascore, load_suite, score
from overseer.tasks._score import (
    extract_code,
    extract_letter,
    extract_number,
    score_mc,
    score_numeric,
)


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("B", "B"),
        ("(C)", "C"),
        ("Answer: D", "D"),
        ("the answer is b.", "B"),
        ('{"answer": "A"}', "A"),
        ("A good answer is C", "C"),
        ("I first thought A, but the answer is (B)", "B"),
        ("Answer: A\nWait, re-checking... Answer: D", "D"),
        ("**Answer:** C", "C"),
        ("B\nBecause option B lists the right value.", "B"),
        ("I cannot tell.", None),
        ("The answer is E", None),
    ],
)
def test_extract_letter(text: str, letter: str | None) -> None:
    assert extract_letter(text, 4) == letter


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("The answer is 42", "42"),
        ("so x = -7", "-7"),
        ("Total: $1,234.50 in all. The answer is 1,234.5", "1234.5"),
        (r"Thus \boxed{18} is right, not 20.", "18"),
        ("work... #### 72", "72"),
        ('{"reasoning": "3 + 4", "answer": 7}', "7"),
        ("It costs 3 dollars each, 4 items, so 12 dollars.", "12"),
        ("Answer: \u22125", "-5"),
        ("There are 2 cats and 3 dogs; the answer is 5 animals.", "5"),
        ("no digits here", None),
    ],
)
def test_extract_number(text: str, number: str | None) -> None:
    assert extract_number(text) == number


def test_numeric_and_mc_scores() -> None:
    assert score_numeric("The answer is 18.0", "18").correct
    assert not score_numeric("The answer is 19", "18").correct
    assert score_numeric("1,000,000", "1000000").correct
    assert score_mc("Answer: b", "B").correct and not score_mc("Answer: C", "B").correct
    s = score_numeric("nothing", "3")
    assert not s.correct and s.parsed is None and "no number" in s.detail


def test_extract_code_prefers_fenced_blocks() -> None:
    text = "Here:\n```python\ndef f():\n    return 1\n```\nDone."
    assert extract_code(text).strip() == "def f():\n    return 1"
    assert extract_code("    return 1\n") == "    return 1\n"


HE_IDS = ["HumanEval/0", "HumanEval/2", "HumanEval/13", "HumanEval/38", "HumanEval/53"]


@pytest.fixture(scope="module")
def humaneval() -> dict:
    return {t.id: t for t in load_suite("humaneval", split="all")}


@pytest.mark.parametrize("task_id", HE_IDS)
def test_canonical_solutions_pass(humaneval: dict, task_id: str) -> None:
    task = humaneval[task_id]
    assert score(task, task.answer).correct


def test_full_function_in_a_fence_passes(humaneval: dict) -> None:
    task = humaneval["HumanEval/53"]  # add(x, y)
    reply = "Sure!\n```python\ndef add(x: int, y: int):\n    return x + y\n```"
    assert score(task, reply).correct


def test_wrong_body_fails_with_the_reason(humaneval: dict) -> None:
    s = score(humaneval["HumanEval/53"], "    return x - y\n")
    assert not s.correct and "AssertionError" in s.detail


async def test_infinite_loop_fails_by_timeout(
    humaneval: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("overseer.tasks._score.CODE_TIMEOUT_S", 1.5)
    s = await ascore(humaneval["HumanEval/53"], "    while True:\n        pass\n")
    assert not s.correct and s.detail == "timed out"


async def test_async_score_matches_sync(humaneval: dict) -> None:
    task = humaneval["HumanEval/2"]
    assert (await ascore(task, task.answer)).correct
