"""Scorers: a multiple-choice letter, a number, or code run against its tests in the sandbox.

Extraction prefers the most explicit, latest statement of an answer (a JSON "answer", a
\\boxed{}, "#### N", "the answer is ...") over incidental letters or numbers in the text.
"""

from __future__ import annotations

import hashlib
import json
import re

from overseer.models.text import extract_code
from overseer.tasks._types import Score, Task

CODE_TIMEOUT_S = 10.0

# A number not glued to a word or to a preceding digit (so "10-12" is not 10 and -12).
_NUM = r"(?:(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\d)|(?<![\w.])-?\.\d+)"
_NUM_RE = re.compile(_NUM)
_FRAC_RE = re.compile(rf"(?:(?P<whole>{_NUM})\s+)?(?P<num>{_NUM})\s*/\s*(?P<den>\d+)(?![\d.])")
_LATEX_FRAC_RE = re.compile(r"(-?)\\d?frac\{\s*(-?\d+)\s*\}\{\s*(\d+)\s*\}")
# Two candidates joined by "or", "to", a dash or "and" in a stated answer: a hedge, no answer.
_HEDGE = r"\s*(?:or|to|and|/|-|–|,)\s*(?:option\s*|choice\s*)?"
# After "A" or "I" a lowercase word makes it an article or pronoun, unless it is one of these.
_LETTER_FOLLOWERS = frozenset(
    [
        "because",
        "since",
        "as",
        "is",
        "was",
        "seems",
        "and",
        "or",
        "which",
        "with",
        "for",
        "so",
        "but",
        "then",
        "here",
        "-",
        "–",
        ":",
        ",",
        ".",
    ]
)


def _json_answer(text: str) -> str | None:
    """The "answer" field of the last JSON object in the text, if any (the whole text first:
    a constrained reply's reasoning may hold braces)."""
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and "answer" in whole:
        return str(whole["answer"])
    for m in reversed(list(re.finditer(r"\{[^{}]*\}", text))):
        try:
            data = json.loads(m.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and "answer" in data:
            return str(data["answer"])
    return None


def _letter_at(text: str, m: re.Match[str], letters: str) -> str | None:
    """The option letter of match group 1 if it really is one (not "a"/"A"/"I" in prose)."""
    raw, rest = m.group(1), text[m.end(1) :]
    if raw.upper() not in letters:
        return None
    wrapped = text[m.start(1) - 1 : m.start(1)] in "([" and rest[:1] in ")]"
    if raw.islower() and not wrapped and not re.match(r"[.)]?\s*(?:$|\n)|\)", rest):
        return None  # a lowercase letter counts only alone at a line's end or as "(b)"/"b)"
    if raw in "AI" and not wrapped:
        word = re.match(r" +([a-z]+|[-–:,.])", rest)
        if word and word.group(1) not in _LETTER_FOLLOWERS:
            return None  # "A decision-making process", "I think"
    if re.match(rf"[\)\]]?{_HEDGE}[\(\[]?[{letters}][\)\]]?(?![A-Za-z])", rest, re.I):
        return "?"  # "A or B", "B/C", "A and C": hedged between letters
    return raw.upper()


def _unique(found: list[str | None]) -> str | None:
    """The one letter named (ignoring repeats); None when none, hedged, or several differ."""
    named = {x for x in found if x is not None}
    return named.pop() if len(named) == 1 and "?" not in named else None


_TOKEN = r"[\(\[]?([A-Za-z])(?![A-Za-z0-9])(?!'s)"
_STATED = re.compile(
    r"\banswer\b\s*(?:is\s*|would\s+be\s*|should\s+be\s*|[:=\-]\s*)?(?:(?:option|choice)\s*)?"
    rf"[:\-]?\s*{_TOKEN}",
    re.IGNORECASE,
)
_LONE = re.compile(
    rf"^\s*{_TOKEN}[\)\]]?(?:\s*[.:]?\s*$|[.):]\s+\S|\s+-\s+\S|\s+(?:because|since)\b)",
    re.MULTILINE,
)
_CORRECT = re.compile(rf"{_TOKEN}[\)\]]?\s+is\s+(?:the\s+)?(?:correct|right|best)\b", re.I)
_CHOSEN = re.compile(
    r"(?:\b(?:option|choice)\s*|\b(?:probably|likely|maybe|perhaps|choose|pick|select|go\s+with)"
    rf"\s+(?:(?:it'?s|is)\s+)?(?:(?:option|choice)\s+)?){_TOKEN}",
    re.IGNORECASE,
)
_PAREN = re.compile(r"\(([A-Za-z])\)")


def extract_letter(output: str, n_choices: int = 4) -> str | None:
    """The chosen option letter, or None when the output does not commit to exactly one.

    In order: a JSON "answer"; the last "answer is/: X" (hedged "A or B" gives None); a lone
    letter line ("B", "(C)", "D) text"); "X is correct"; "option X", "probably X"; "(X)".
    Below the stated answer, a tier naming two different letters gives None.
    Prose never counts: "A decision..." and "the answer is a function" give None.
    """
    letters = "ABCDEFGHIJ"[:n_choices]
    text = output.replace("**", "").replace("`", "")
    j = _json_answer(text)
    if j is not None:
        m = re.fullmatch(rf"\s*{_TOKEN}[\)\]]?(?:[.):]\s*.*)?", j, re.DOTALL)
        return _letter_at(j, m, letters) if m else None
    stated = [_letter_at(text, m, letters) for m in _STATED.finditer(text)]
    stated = [x for x in stated if x is not None]
    if stated:
        return None if stated[-1] == "?" else stated[-1]
    for pattern in (_LONE, _CORRECT, _CHOSEN, _PAREN):
        found = [_letter_at(text, m, letters) for m in pattern.finditer(text)]
        if any(x is not None for x in found):
            return _unique(found)
    return None


def _to_float(s: str) -> float | None:
    """A number from text: "1,234.5", "-3/4", "1 1/2", "$12"; None when it is not one."""
    s = s.replace(",", "").replace("$", "").strip()
    m = re.fullmatch(r"(-?)(?:(\d+)\s+)?(-?\d+(?:\.\d+)?)\s*/\s*(\d+)", s)
    if m:
        sign, whole, num, den = m.groups()
        if float(den) == 0:
            return None
        value = float(whole or 0) + float(num) / float(den)
        return -value if sign else value
    try:
        return float(s)
    except ValueError:
        return None


def _numbers(text: str) -> list[str]:
    """The numbers of a text in order; a fraction ("3/4", "1 1/2", \\frac{3}{4}) is one."""
    text = _LATEX_FRAC_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}/{m.group(3)}", text)
    out: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for m in _FRAC_RE.finditer(text):
        out.append((m.start(), m.group(0).replace(",", "")))
        taken.append(m.span())
    for m in _NUM_RE.finditer(text):
        if not any(a <= m.start() < b for a, b in taken):
            out.append((m.start(), m.group(0).replace(",", "")))
    return [v for _, v in sorted(out)]


def _stated_number(cand: str) -> str | None:
    """The number a stated answer gives: after its last "=", the first number, unless two
    numbers are offered as alternatives or a range ("12 or 13", "between 10 and 12")."""
    cand = re.split(r"(?<=[^\d\s])\.\s|\n", cand)[0]
    if "=" in cand:
        cand = cand.rsplit("=", 1)[1]
    nums = _numbers(cand)
    if not nums:
        return None
    if re.search(rf"between\s+{_NUM}|{_NUM}\s*(?:or|to|–)\s*{_NUM}", cand):
        return None
    first = re.escape(nums[0])
    if len(nums) > 1 and re.search(rf"{first}\s*-\s*\d", cand.replace(",", "")):
        return None  # "10-12"
    return nums[0]


def _boxed(text: str) -> list[str]:
    """The contents of every \\boxed{...}, nested braces included."""
    out = []
    for m in re.finditer(r"\\boxed\s*\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out.append(text[m.end() : i - 1])
    return out


def extract_number(output: str) -> str | None:
    """The final number: boxed, '#### N', 'the answer is N', JSON answer, else the last number.

    A stated answer offering two values ("12 or 13") gives None; fractions are kept as
    "a/b" (scored as their value); thousands commas, "$", units and "about" are ignored.
    """
    text = output.replace("\u2212", "-").replace("$", "").replace("\\!", "").replace("**", "")
    for group in (
        _boxed(text),
        re.findall(r"####\s*([^\n]*)", text),
        re.findall(r"answer\s*(?:is|:|=|would be)\s*([^\n]*)", text, re.IGNORECASE),
    ):
        for cand in reversed(group):
            if _numbers(cand):
                return _stated_number(cand)
    j = _json_answer(text)
    if j is not None:
        return _stated_number(j)
    nums = _numbers(text)
    return nums[-1] if nums else None


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


def _defines(code: str, entry: str) -> bool:
    return re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", code, re.MULTILINE) is not None


def code_program(task: Task, completion: str, *, sentinel: str = "") -> str:
    """Prompt + completion + tests + check(entry_point). A completion that redefines the
    function replaces the prompt's stub; a body-only completion continues the prompt.
    A `sentinel` is printed after the check, so an early `sys.exit(0)` cannot pass."""
    entry = str(task.meta["entry_point"])
    code = extract_code(completion, entry)
    body = f"{task.prompt}    pass\n\n{code}" if _defines(code, entry) else f"{task.prompt}{code}"
    tail = f"print({sentinel!r}, flush=True)\n" if sentinel else ""
    return f"{body}\n\n{task.meta['test']}\n\ncheck({entry})\n{tail}"


def _sentinel(task: Task, completion: str) -> str:
    """A token the completion cannot know in advance: printed only when the tests ran out."""
    return "checked-" + hashlib.sha256(f"{task.id}\0{completion}".encode()).hexdigest()[:24]


def _code_score(ok: bool, timed_out: bool, stderr: str, stdout: str, sentinel: str) -> Score:
    if ok and sentinel in stdout.splitlines():
        return Score(True, 1.0, None, "tests passed")
    if ok:
        return Score(False, 0.0, None, "exited before the tests ran to the end")
    why = "timed out" if timed_out else (stderr.strip().splitlines() or ["failed"])[-1]
    return Score(False, 0.0, None, why[:300])


_NO_CODE = Score(False, 0.0, None, "no code")


def _with_code(task: Task, completion: str, sc: Score) -> Score:
    """A code score whose `parsed` is the code that ran (None only when there was none, so
    'unparsed' means the same for code as for letters and numbers)."""
    code = extract_code(completion, str(task.meta["entry_point"]))
    return Score(sc.correct, sc.value, code, sc.detail)


def _has_code(task: Task, completion: str) -> bool:
    return bool(extract_code(completion, str(task.meta["entry_point"])).strip())


def score_code(task: Task, completion: str) -> Score:
    """Run the task's tests on the completion in the sandbox; correct iff they all ran and
    passed in time (an empty completion is not run)."""
    from overseer.sandbox import SandboxLimits, run_python

    if not _has_code(task, completion):
        return _NO_CODE
    mark = _sentinel(task, completion)
    program = code_program(task, completion, sentinel=mark)
    r = run_python(program, limits=SandboxLimits(timeout_s=CODE_TIMEOUT_S))
    return _with_code(task, completion, _code_score(r.ok, r.timed_out, r.stderr, r.stdout, mark))


async def ascore_code(task: Task, completion: str) -> Score:
    """`score_code` without blocking the event loop."""
    from overseer.sandbox import SandboxLimits, arun_python

    if not _has_code(task, completion):
        return _NO_CODE
    mark = _sentinel(task, completion)
    program = code_program(task, completion, sentinel=mark)
    r = await arun_python(program, limits=SandboxLimits(timeout_s=CODE_TIMEOUT_S))
    return _with_code(task, completion, _code_score(r.ok, r.timed_out, r.stderr, r.stdout, mark))


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
