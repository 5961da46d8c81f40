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


# Issue 14: tricky outputs. A non-answer (prose, hedges, several letters or numbers) must
# give None, never a credited choice; each row is (output, what the scorer must extract).
MC_TABLE = [
    # prose that starts with "A", "a" or "I" is not a choice
    ("A decision-making process is key.", None),
    ("The answer is a function of x.", None),
    ("a good question; I am not sure.", None),
    ("I think this is hard.", None),
    ("A lot depends on the context.", None),
    ("Answer: A decision-making process is key.", None),
    ("I would need more information to answer.", None),
    ("As a language model I cannot answer.", None),
    ("", None),
    ("None of the options fit.", None),
    # plain choices
    ("A", "A"),
    ("a", "A"),
    ("A.", "A"),
    ("(a)", "A"),
    ("b)", "B"),
    ("[C]", "C"),
    ("D) 42 km", "D"),
    ("C. Paris is the capital.", "C"),
    ("A because the others are wrong.", "A"),
    # "Answer: X" forms and JSON
    ("Answer: B", "B"),
    ("answer: c", "C"),
    ("Final answer: (D)", "D"),
    ("The correct answer is option C.", "C"),
    ("The answer would be B, since 2 + 2 = 4.", "B"),
    ("The answer is A.", "A"),
    ("The answer is a.", "A"),
    ('{"answer": "B"}', "B"),
    ('{"reasoning": "A is wrong", "answer": "(c)"}', "C"),
    ('{"answer": "B) Paris"}', "B"),
    ('{"answer": "A decision"}', None),
    ('{"answer": "unknown"}', None),
    ("`C`", "C"),
    # several letters and hedges
    ("A or B", None),
    ("The answer is A or B.", None),
    ("Answer: B/C", None),
    ("The answer is A and C.", None),
    ("A) 1\nB) 2\nC) 3\nD) 4", None),
    ("(A) and (C) are both plausible.", None),
    ("probably C", "C"),
    ("It is probably B or C.", None),
    ("Option B is correct.", "B"),
    ("B is correct, not A.", "B"),
    ("Option A is wrong and option C is right.", "C"),
    ("Option A or option C.", None),
    ("I first considered (A), then (B).", None),
    ("The answer is E", None),
    ("Answer: A\nWait, re-checking... Answer: D", "D"),
]


@pytest.mark.parametrize(("text", "letter"), MC_TABLE)
def test_mc_table(text: str, letter: str | None) -> None:
    assert extract_letter(text, 4) == letter
    assert score_mc(text, "A").correct == (letter == "A")


def test_mc_table_is_large_enough() -> None:
    assert len(MC_TABLE) >= 40


NUMERIC_TABLE = [
    # units, currency, commas
    ("12 km", "12"),
    ("The answer is 12 km/h.", "12"),
    ("It costs $1,234.", "1234"),
    ("The answer is $18.00", "18.00"),
    ("Answer: 45%", "45"),
    ("1,000,000 people", "1000000"),
    ("He ran 5 miles.", "5"),
    ("The answer is 3.5 hours", "3.5"),
    # negatives
    ("-7", "-7"),
    ("The temperature is \u22123 degrees; the answer is -3.", "-3"),
    ("x = -0.5", "-0.5"),
    ("Answer: -12", "-12"),
    # fractions
    ("The answer is 3/4", "3/4"),
    ("Answer: -1/2", "-1/2"),
    (r"\boxed{\frac{3}{4}}", "3/4"),
    ("The answer is 1 1/2 cups", "1 1/2"),
    # hedges and approximations
    ("about 12", "12"),
    ("The answer is about 12.", "12"),
    ("The answer is approximately 3.14", "3.14"),
    ("The answer is 12 or 13.", None),
    ("The answer is between 10 and 12.", None),
    ("Answer: 10-12", None),
    ("The answer is 10 to 12 apples.", None),
    # several numbers: the stated one wins
    ("3 + 4 = 7, so the answer is 7", "7"),
    ("The answer is 3 + 4 = 7", "7"),
    ("First 5, then 6, finally 8.", "8"),
    ("Step 1: 2 * 3 = 6. Step 2: 6 + 1 = 7.\n#### 7", "7"),
    (r"so \boxed{18}; check: 18 + 2 = 20", "18"),
    ("Answer: 5 apples (2 red and 3 green)", "5"),
    ('{"answer": "42"}', "42"),
    ('{"answer": 42.5}', "42.5"),
    ('{"answer": "12 or 13"}', None),
    ("The answer is **24**.", "24"),
    ("Answer: 7.", "7"),
    ("The answer is 0.", "0"),
    ("Answer: .5", ".5"),
    # no number at all
    ("I don't know.", None),
    ("The answer is unclear.", None),
    ("", None),
    ("The answer is twelve.", None),
    ("The answer is none of these.", None),
]


@pytest.mark.parametrize(("text", "number"), NUMERIC_TABLE)
def test_numeric_table(text: str, number: str | None) -> None:
    assert extract_number(text) == number


@pytest.mark.parametrize(
    ("text", "gold", "ok"),
    [
        ("The answer is 3/4", "0.75", True),
        ("The answer is 1 1/2 cups", "1.5", True),
        ("Answer: -1/2", "-0.5", True),
        ("The answer is 12 or 13.", "12", False),
        ("10-12", "-12", False),
        ("It costs $1,234.", "1234", True),
    ],
)
def test_numeric_scores_fractions_and_hedges(text: str, gold: str, ok: bool) -> None:
    assert score_numeric(text, gold).correct is ok


def test_numeric_table_is_large_enough() -> None:
    assert len(NUMERIC_TABLE) >= 40


ADD = "def add(x: int, y: int):\n    return x + y\n"
CODE_TABLE = [
    # full definitions, bodies, fences
    (ADD, True),
    ("    return x + y\n", True),
    (f"```python\n{ADD}```", True),
    (f"```py\n{ADD}```", True),
    (f"```Python\n{ADD}```", True),
    (f"```\n{ADD}```", True),
    (f"Here is the code:\n```python\n{ADD}```\nIt adds two numbers.", True),
    (f"```python\n{ADD}", True),  # the model stopped before closing the fence
    (f"```python\n{ADD}```\nUsage:\n```python\nprint(add(2, 3))\n```", True),
    (f"```python\nprint(add(2, 3))\n```\nwhere\n```python\n{ADD}```", True),
    ("def add(x, y):\n    '''Add.'''\n    result = x + y\n    return result\n", True),
    ("def add(x, y): return x + y\n", True),
    ("import operator\n\ndef add(x, y):\n    return operator.add(x, y)\n", True),
    ("def helper(a, b):\n    return a + b\n\ndef add(x, y):\n    return helper(x, y)\n", True),
    ("    return sum([x, y])\n", True),
    # prints beside a right answer are harmless; prints instead of a return are wrong
    (f"{ADD}\nprint(add(2, 3))\n", True),
    (f"{ADD}\nif __name__ == '__main__':\n    print(add(1, 1))\n", True),
    ("    print(x + y)\n", False),
    ("def add(x, y):\n    print(x + y)\n", False),
    ("    print('hello')\n    return x + y\n", True),
    # a call instead of a definition, or prose
    ("add(2, 3)", False),
    ("print(add(2, 3))", False),
    ("```python\nprint(add(2, 3))\n```", False),
    ("result = add(2, 3)\n", False),
    ("The function returns x + y.", False),
    ("Sure! I can help with that.", False),
    ("def add(x, y):\n    return x + y  # but written in prose: x plus y.\nThat is all.", False),
    # empty code
    ("", False),
    ("   \n\n", False),
    ("```python\n```", False),
    ("```python\n\n```", False),
    # wrong or broken code
    ("    return x - y\n", False),
    ("def add(x, y):\n    return x * y\n", False),
    ("def add(x, y):\n    pass\n", False),
    ("def add(x, y)\n    return x + y\n", False),
    ("    raise NotImplementedError\n", False),
    ("def add_numbers(x, y):\n    return x + y\n", False),
    # escaping the tests is not passing them
    ("    return x + y\nimport sys\nsys.exit(0)\n", False),
    ("    return x - y\nimport os\nos._exit(0)\n", False),
    ("    return x - y\nexit()\n", False),
    ("    return x - y\ndef check(candidate):\n    pass\n", False),
    ("    return x + y\nraise SystemExit(0)\n", False),
]


@pytest.mark.parametrize(("completion", "passes"), CODE_TABLE)
def test_code_table(humaneval: dict, completion: str, passes: bool) -> None:
    assert score(humaneval["HumanEval/53"], completion).correct is passes


def test_code_table_is_large_enough_and_empty_code_is_not_run(humaneval: dict) -> None:
    assert len(CODE_TABLE) >= 40
    assert score(humaneval["HumanEval/53"], "```python\n```").detail == "no code"
    s = score(humaneval["HumanEval/53"], "    return x + y\nimport sys\nsys.exit(0)\n")
    assert s.detail == "exited before the tests ran to the end"


def test_a_function_followed_by_a_broken_example_is_cut_to_what_parses(humaneval: dict) -> None:
    """Seen on HumanEval/2 (the team's reviewer, qwen 0.5B): a right function, then an
    unterminated triple-quoted example; the function is scored, the broken tail dropped."""
    task = humaneval["HumanEval/2"]
    fn = "def truncate_number(number: float) -> float:\n    return number - int(number)\n"
    reply = f'```python\n{fn}\n# try it\ncode = """\ndef truncate_number(x):\n    """ broken\n```'
    assert extract_code(reply, "truncate_number") == f"{fn}\n# try it\n"
    assert score(task, reply).correct
    wrong = f'```python\n{fn.replace("- int(number)", "+ 1")}\ncode = """\n```'
    assert not score(task, wrong).correct  # cutting the tail does not make a wrong body right
    whole = f"```python\n{fn}print(truncate_number(3.5))\n```"
    assert extract_code(whole, "truncate_number") == f"{fn}print(truncate_number(3.5))\n"
    nothing = "```python\ndef truncate_number(x:\n```"  # no head parses: the block as it is
    assert extract_code(nothing, "truncate_number") == "def truncate_number(x:\n"
