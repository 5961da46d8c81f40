"""Scorers: a multiple-choice letter, a number, or code run against its tests in the sandbox.

Extraction prefers the most explicit, latest statement of an answer (a JSON "answer", a
\\boxed{}, "#### N", "the answer is ...") over incidental letters or numbers in the text.
"""

from __future__ import annotations

import json
import re

from overseer.tasks._types import Score, Task

CODE_TIMEOUT_S = 10.0

_NUM = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?\.\d+"
_NUM_RE = re.compile(_NUM)


def _json_answer(text: str) -> str | None:
    """The "answer" field of the last JSON object in the text, if any."""
    for m in reversed(list(re.finditer(r"\{[^{}]*\}", text))):
        try:
            data = json.loads(m.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and "answer" in data:
            return str(data["answer"])
    return None


def extract_letter(output: str, n_choices: int = 4) -> str | None:
    """The chosen option letter, from the most explicit statement in the output."""
    letters = "ABCDEFGHIJ"[:n_choices]
    text = output.replace("**", "")
    j = _json_answer(text)
    if j is not None and j.strip().strip("()").upper()[:1] in letters and len(j.strip()) <= 3:
        return j.strip().strip("()").upper()[:1]
    stated = re.compile(
        rf"answer\s*(?:is|:|=)?\s*(?:option\s*)?[:\-]?\s*\(?([{letters}{letters.lower()}])\)?"
        r"(?![A-Za-z])",
        re.IGNORECASE,
    )
    hits = [m for m in stated.finditer(text)]
    if hits:
        return hits[-1].group(1).upper()
    alone = re.findall(rf"^\s*\(?([{letters}])\)?[.):]?\s*(?:$|\s)", text, re.MULTILINE)
    if alone:
        return alone[-1]
    paren = re.findall(rf"\(([{letters}])\)", text)
    if paren:
        return paren[-1]
    return None


def _to_float(s: str) -> float | None:
    try:
        return float(s.replace(",", "").replace("$", ""))
    except ValueError:
        return None


def extract_number(output: str) -> str | None:
    """The final number: boxed, '#### N', 'the answer is N', JSON answer, else the last number."""
    text = output.replace("\u2212", "-").replace("$", "").replace("\\!", "")
    for pattern in (r"\\boxed\{([^{}]*)\}", r"####\s*([^\n]*)", r"answer\s*(?:is|:|=)\s*([^\n]*)"):
        found = re.findall(pattern, text, re.IGNORECASE)
        for cand in reversed(found):
            nums = _NUM_RE.findall(cand)
            if nums:
                return nums[0].replace(",", "")
    j = _json_answer(text)
    if j is not None:
        nums = _NUM_RE.findall(j)
        if nums:
            return nums[0].replace(",", "")
    nums = _NUM_RE.findall(text)
    return nums[-1].replace(",", "") if nums else None


def score_mc(output: str, answer_letter: str, n_choices: int = 4) -> Score:
    """Correct when the extracted letter is the gold letter."""
    got = extract_letter(output, n_choices)
    ok = got is not None and got == answer_letter.strip().upper()
    return Score(ok, float(ok), got, "" if got else "no answer letter found")


def score_numeric(output: str, answer: str, *, rel_tol: float = 1e-6) -> Score:
    """Correct when the extracted number equals the gold number (relative tolerance)."""
    got = extract_number(output)
    gold = _to_float(answer)
    if gold is None:
        raise ValueError(f"numeric answer {answer!r}: expected a number")
    value = _to_float(got) if got is not None else None
    ok = value is not None and abs(value - gold) <= rel_tol * max(1.0, abs(gold))
    return Score(ok, float(ok), got, "" if got else "no number found")


def extract_code(completion: str) -> str:
    """The code of a completion: the last ```python block if there is one, else the text."""
    blocks = re.findall(r"```(?:python|py)?[ \t]*\n(.*?)```", completion, re.DOTALL)
    if blocks:
        return max(blocks, key=len) if len(blocks) > 1 else blocks[0]
    return completion


def code_program(task: Task, completion: str) -> str:
    """Prompt + completion + tests + check(entry_point). A completion that redefines the
    function replaces the prompt's stub; a body-only completion continues the prompt."""
    entry = str(task.meta["entry_point"])
    code = extract_code(completion)
    if re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", code, re.MULTILINE):
        body = f"{task.prompt}    pass\n\n{code}"
    else:
        body = f"{task.prompt}{code}"
    return f"{body}\n\n{task.meta['test']}\n\ncheck({entry})\n"


def _code_score(ok: bool, timed_out: bool, stderr: str) -> Score:
    if ok:
        return Score(True, 1.0, None, "tests passed")
    why = "timed out" if timed_out else (stderr.strip().splitlines() or ["failed"])[-1]
    return Score(False, 0.0, None, why[:300])


def score_code(task: Task, completion: str) -> Score:
    """Run the task's tests on the completion in the sandbox; correct iff they pass in time."""
    from overseer.sandbox import SandboxLimits, run_python

    r = run_python(code_program(task, completion), limits=SandboxLimits(timeout_s=CODE_TIMEOUT_S))
    return _code_score(r.ok, r.timed_out, r.stderr)


async def ascore_code(task: Task, completion: str) -> Score:
    """`score_code` without blocking the event loop."""
    from overseer.sandbox import SandboxLimits, arun_python

    r = await arun_python(
        code_program(task, completion), limits=SandboxLimits(timeout_s=CODE_TIMEOUT_S)
    )
    return _code_score(r.ok, r.timed_out, r.stderr)


def score(task: Task, output: str) -> Score:
    """Score an output by the task's own scorer (`meta["scorer"]`, if any), else by its kind."""
    own = task.meta.get("scorer")
    if own is not None:
        return own(task, output)
    if task.kind == "mc":
        return score_mc(output, task.answer, len(task.choices) or 4)
    if task.kind == "numeric":
        return score_numeric(output, task.answer)
    if task.kind == "code":
        return score_code(task, output)
    got = output.strip().splitlines()[-1].strip() if output.strip() else ""
    got = re.sub(r"^answer\s*:\s*", "", got, flags=re.IGNORECASE)
    ok = got.lower() == task.answer.strip().lower()
    return Score(ok, float(ok), got or None)


async def ascore(task: Task, output: str) -> Score:
    """Score without blocking the event loop (code runs as an async subprocess)."""
    if task.kind == "code":
        return await ascore_code(task, output)
    return score(task, output)
