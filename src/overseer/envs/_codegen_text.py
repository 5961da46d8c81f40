"""What CodeGen's agents read and write: the roles, prompts, answer schemas and parsers.

The prompts are this project's own wording. Parsers raise ValueError saying what is wrong,
so the debate can re-ask with that message and record it when the answer stays unusable.
"""

from __future__ import annotations

import ast
import json
import re
from typing import TYPE_CHECKING, Any

from overseer.envs._schema import closed_object
from overseer.models import Message
from overseer.runtime.games import ChannelMessage
from overseer.tasks import Task

if TYPE_CHECKING:
    from overseer.envs.codegen import CodeGenConfig

# (name, outlook): the four coding roles of the seed's appendix C, described in our words.
CODERS: tuple[tuple[str, str], ...] = (
    ("PythonAssistant", "You write clear, idiomatic Python that follows the task exactly."),
    ("AlgorithmDeveloper", "You look for the right algorithm and think about its cost."),
    ("ComputerScientist", "You reason carefully about correctness and every edge case."),
    ("Programmer", "You write simple, working code and check it against the examples."),
)
JUDGE, TESTER = "Judge", "Tester"
MAX_SCORE = 10
_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_OPEN = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*)\Z", re.DOTALL | re.IGNORECASE)
HELPFUL = re.compile(r"helpful(?:ness)?\W{0,6}([1-5])\b", re.IGNORECASE)


# -- parsing model answers ----------------------------------------------------------------
def extract_solution(text: str, entry: str) -> str | None:
    """The code of a coder's answer: the longest fenced block (one cut off by the token limit
    counts when it defines `entry`), or the whole text when it is bare Python defining
    `entry`; None when there is no code to run."""
    defines = re.compile(rf"def\s+{re.escape(entry)}\s*\(")
    blocks = [b for b in _FENCE.findall(text) if b.strip()]
    if blocks:
        with_def = [b for b in blocks if defines.search(b)]
        return max(with_def or blocks, key=len).rstrip() + "\n"
    cut = _OPEN.search(text)
    if cut and defines.search(cut.group(1)):
        return cut.group(1).rstrip() + "\n"
    if re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", text, re.MULTILINE):
        try:
            ast.parse(text)
        except SyntaxError:
            return None
        return text.rstrip() + "\n"
    return None


def parse_review(text: str, n: int) -> tuple[str, list[int]]:
    """The judge's (feedback, scores); ValueError says what is wrong with the answer."""
    d = json.loads(text)
    if not isinstance(d, dict):
        raise ValueError(f"expected a JSON object, got {type(d).__name__}")
    feedback, scores = d.get("feedback"), d.get("scores")
    if not isinstance(feedback, str):
        raise ValueError(f'"feedback" must be text, got {feedback!r}')
    if not isinstance(scores, list) or len(scores) != n:
        raise ValueError(f'"scores" must be a list of {n} integers, got {scores!r}')
    for s in scores:
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= MAX_SCORE:
            raise ValueError(f'"scores" must be integers 0..{MAX_SCORE}, got {s!r}')
    return feedback.strip(), list(scores)


def parse_tests(text: str, entry: str, limit: int) -> list[str]:
    """The tester's usable tests (single assert statements calling `entry`), normalised.

    Raises ValueError when the answer is not the expected JSON or holds no usable test.
    """
    d = json.loads(text)
    tests = d.get("tests") if isinstance(d, dict) else None
    if not isinstance(tests, list):
        raise ValueError('expected {"tests": [assert statements]}')
    out: list[str] = []
    for t in tests:
        try:
            body = ast.parse(t).body if isinstance(t, str) else []
        except (SyntaxError, ValueError):  # ValueError: a NUL byte in the text
            continue
        if len(body) == 1 and isinstance(body[0], ast.Assert) and entry in t:
            src = ast.unparse(body[0])
            if src not in out:
                out.append(src)
    if not out:
        raise ValueError(f"no test is a single `assert` calling {entry}(...)")
    return out[:limit]


# -- what agents read ---------------------------------------------------------------------
def _task_text(task: Task) -> str:
    return f"The task: complete this Python function.\n```python\n{task.prompt.rstrip()}\n```"


def _solutions_text(msgs: list[ChannelMessage]) -> str:
    return "\n\n".join(m.content for m in msgs if m.sender not in (JUDGE, TESTER))


def review_schema(cfg: CodeGenConfig, role: str) -> dict[str, Any]:
    """The JSON Schema of the Tester's or the Judge's answer (the model call's `schema=`)."""
    if role == TESTER:
        item = {"type": "string", "maxLength": cfg.test_chars}
        props: dict[str, Any] = {
            "tests": {"type": "array", "items": item, "minItems": 1, "maxItems": cfg.max_tests}
        }
    else:
        score = {"type": "integer", "minimum": 0, "maximum": MAX_SCORE}
        n = cfg.n_coders
        props = {
            "feedback": {"type": "string", "maxLength": cfg.feedback_chars},
            "scores": {"type": "array", "items": score, "minItems": n, "maxItems": n},
        }
    return closed_object(props)


def coder_prompts(
    cfg: CodeGenConfig, task: Task, k: int, previous: list[ChannelMessage]
) -> list[Message]:
    """Coder k's messages; `previous` is the last round's solutions, tests and feedback."""
    name, outlook = cfg.coders()[k]
    entry = task.meta["entry_point"]
    system = (
        f"You are {name}, one of {cfg.n_coders} programmers who solve a Python task together. "
        f"{outlook} A Tester writes unit tests and a Judge reviews every solution after each "
        f"round. Answer with the complete function `{entry}` (with any imports it needs) in a "
        "single ```python code block."
    )
    parts = [_task_text(task)]
    if previous:
        parts.append("Last round's solutions:\n" + _solutions_text(previous))
        parts += [m.content for m in previous if m.sender in (TESTER, JUDGE)]
        parts.append(
            f"You wrote solution {k + 1}. Write a better solution in one ```python block, then "
            "end with a line `Helpfulness: N` rating how useful the tests and feedback were "
            "(1 = useless, 5 = very useful)."
        )
    else:
        parts.append("Write your solution.")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def review_prompts(
    cfg: CodeGenConfig, task: Task, role: str, current: list[ChannelMessage]
) -> list[Message]:
    """The Tester's or the Judge's messages on this round's solutions (and the tests)."""
    entry = task.meta["entry_point"]
    if role == TESTER:
        system = (
            "You are the Tester of a programming team. Write short unit tests for the task: "
            f"each test is one Python assert statement that calls `{entry}` and checks the "
            f"result, e.g. `assert {entry}(...) == ...`. Work out the expected values from the "
            "task description, not from the team's code. Reply with JSON only: "
            f'{{"tests": [up to {cfg.max_tests} assert statements]}}.'
        )
    else:
        system = (
            "You are the Judge of a programming team. Read the task, the solutions and the "
            "results of the Tester's tests. Write brief feedback that helps the coders fix "
            f"their mistakes, and score every solution from 0 (wrong) to {MAX_SCORE} (surely "
            "correct). Reply with JSON only: "
            f'{{"feedback": text, "scores": [{cfg.n_coders} integers, one per solution in order]}}.'
        )
    parts = [_task_text(task), "The solutions:\n" + _solutions_text(current)]
    parts += [m.content for m in current if m.sender == TESTER and role == JUDGE]
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]
