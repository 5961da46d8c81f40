"""CodeGen: a code-writing debate on HumanEval (the seed's section 4.1 and appendix C).

Four coders with different outlooks write a solution each; then, every round, a Tester
writes unit tests (single asserts, run on every solution in the sandbox) and a Judge reads
the solutions and the test results, writes feedback and scores each solution 0..10. The
next round's coders see the previous solutions, the tests with their results and the
feedback, write new solutions and say how helpful the feedback was. After the last round's
review the solution with the best judge score (then most tests passed, then coder order)
is the team's answer, scored pass@1 by the HumanEval task's own tests in the sandbox.

Code, once written, is final (an irreversible mark after each round's solutions). The
monitor sees the Judge's turns (role `judge`; decision positions are the numbers in
"scores"); a rollback drops the round's review (tests and feedback) and it is written again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Unpack

from overseer.envs._codegen_text import (
    CODERS,
    HELPFUL,
    JUDGE,
    MAX_SCORE,
    TESTER,
    coder_prompts,
    extract_solution,
    parse_review,
    parse_tests,
    review_prompts,
    review_schema,
)
from overseer.envs._loop import call_seed
from overseer.envs._sampling import Sampling
from overseer.models import Message, Model, Usage
from overseer.runtime.games import ChannelMessage, GameSession, Played, SessionOptions, Turn
from overseer.tasks import Score, Task, load_suite
from overseer.tasks.code import ascore_code, code_program

_MARK = "@@overseer-tests@@"


@dataclass(frozen=True)
class CodeGenConfig(Sampling):
    """Sizes and sampling of the debate; defaults follow the seed (4 coders, judge, tester)."""

    n_coders: int = 4
    rounds: int = 3
    max_tokens: int = 384  # a coder's answer
    review_tokens: int = 256  # the judge's and the tester's answers
    feedback_chars: int = 400
    max_tests: int = 5
    test_chars: int = 160
    test_timeout_s: float = 5.0
    top_logprobs: int = 10
    decision_keys: tuple[str, ...] = ("scores",)

    def __post_init__(self) -> None:
        checks = [
            (1 <= self.n_coders <= len(CODERS), "n_coders", f"1..{len(CODERS)}", self.n_coders),
            (self.rounds >= 1, "rounds", ">= 1", self.rounds),
            (self.max_tokens >= 16, "max_tokens", ">= 16", self.max_tokens),
            (self.review_tokens >= 16, "review_tokens", ">= 16", self.review_tokens),
            (self.max_tests >= 1, "max_tests", ">= 1", self.max_tests),
            (self.max_retries >= 0, "max_retries", ">= 0", self.max_retries),
            (self.test_timeout_s > 0, "test_timeout_s", "> 0", self.test_timeout_s),
            (self.top_logprobs >= 1, "top_logprobs", ">= 1", self.top_logprobs),
        ]
        for ok, name, expected, got in checks:
            if not ok:
                raise ValueError(f"codegen {name}: expected {expected}, got {got!r}")

    def coders(self) -> list[tuple[str, str]]:
        return list(CODERS[: self.n_coders])


def codegen_splits(seed: int = 0) -> dict[str, list[Task]]:
    """HumanEval's deterministic train/validation/test split (`load_suite`'s seeded hash)."""
    return {s: load_suite("humaneval", split=s, seed=seed) for s in ("train", "validation", "test")}


@dataclass
class CodeGenResult:
    """How a debate ended: pass@1 of the chosen solution, the reviews, resets and books."""

    game_id: str
    task_id: str
    success: bool
    answer: str
    chosen: int | None  # 1-based coder of the answer; None when nobody wrote code
    detail: str
    rounds: int
    turns: int  # judge turns, discarded ones included
    resets: int
    invalid_actions: int
    solved_by: list[bool]  # each final solution against the real tests
    scores: list[list[int] | None]  # the judge's scores of each round
    tests_passed: list[list[int]]  # tester's tests passed by each solution, per round
    helpfulness: list[int | None]  # the coders' ratings of the feedback, in order
    errors: list[str]
    usage_by_actor: dict[str, Usage]
    interventions: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The JSON-safe part kept with a stored result."""
        skip = {"game_id", "usage_by_actor"}
        return {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in skip
        }


def check_program(task: Task, code: str, tests: list[str]) -> str:
    """A program running `tests` one by one on `code`, printing which passed (for the sandbox)."""
    lines = ["def check(candidate):", "    ok = []"]
    for t in tests:
        lines += ["    try:", f"        {t}", "        ok.append(1)"]
        lines += ["    except Exception:", "        ok.append(0)"]
    lines.append(f"    print({_MARK!r} + ''.join(map(str, ok)))")
    fake = dataclasses.replace(task, meta={**task.meta, "test": "\n".join(lines)})
    return code_program(fake, code)


async def run_tests(task: Task, code: str | None, tests: list[str], timeout_s: float) -> int:
    """How many of `tests` the code passes, run in the sandbox (0 if it crashes or hangs)."""
    from overseer.sandbox import SandboxLimits, arun_python

    if code is None or not tests:
        return 0
    r = await arun_python(
        check_program(task, code, tests), limits=SandboxLimits(timeout_s=timeout_s)
    )
    marks = [ln for ln in r.stdout.splitlines() if ln.startswith(_MARK)]
    return marks[-1][len(_MARK) :].count("1") if marks and not r.timed_out else 0


# -- the debate ---------------------------------------------------------------------------
class _Debate:
    """The mutable state of one debate while it is played on a GameSession."""

    def __init__(self, task: Task, cfg: CodeGenConfig, seed: int, session: GameSession) -> None:
        self.task, self.cfg, self.seed, self.s = task, cfg, seed, session
        self.entry = str(task.meta["entry_point"])
        self.code: list[str | None] = [None] * cfg.n_coders
        self.errors: list[str] = []
        self.helpfulness: list[int | None] = []
        self.scores: list[list[int] | None] = []  # the judge's, per round
        self.passed: list[list[int]] = []  # the tester's tests passed, per round
        self.verdicts: list[Score | None] = []  # each coder's final code, scored

    async def play(self) -> str:
        """Every round (solve, then review), then the chosen solution; its code is the answer."""
        for r in range(1, self.cfg.rounds + 1):
            await self.solve(r)
            self.s.mark_irreversible()
            s, p = await self.review(r)
            self.scores.append(s)
            self.passed.append(p)
        self.verdicts.extend([await ascore_code(self.task, c) if c else None for c in self.code])
        k = self.chosen()
        passed = [bool(v and v.correct) for v in self.verdicts]
        self.s.run.trace.event("codegen_result", chosen=k, passed=passed)
        return (self.code[k] or "") if k is not None else ""

    def chosen(self) -> int | None:
        """The coder whose solution is the answer (see `_choose`)."""
        return _choose(self.code, self.scores[-1], self.passed[-1])

    def _round(self, r: int) -> list[ChannelMessage]:
        return [m for m in self.s.run.channel.messages if m.round == r]

    async def ask(
        self,
        name: str,
        role: str,
        msgs: list[Message],
        r: int,
        check: Callable[[str], Any],
        **kw: Any,
    ) -> Played[Any]:
        """One answer through the session, re-asked while `check` rejects it."""
        hint = (
            f"Reply again with the complete function `{self.entry}` in one ```python block."
            if role == "coder"
            else "Reply again with JSON only."
        )
        judged = role == "judge"  # the monitor watches the Judge's scores
        cfg = self.cfg
        p = await self.s.turn(
            Turn(
                agent=name,
                role=role,
                round=r,
                messages=msgs,
                parse=check,
                describe=kw.pop("describe", lambda v: ""),
                temperature=cfg.temperature_at(self.s.resets),
                seed=call_seed(self.task.id, self.seed, self.s.resets, r, name),
                max_reasks=cfg.max_retries,
                judged=judged,
                as_json=False,
                decision_keys=cfg.decision_keys if judged else (),
                reask="That answer is not usable ({error}). " + hint,
                **kw,
            )
        )
        if p.error:
            self.errors.append(f"round {r} {name}: {p.error}")
        return p

    def _no_code(self, text: str) -> str:
        code = extract_solution(text, self.entry)
        if code is None:
            raise ValueError(f"no ```python code block defining {self.entry}")
        return code

    async def solve(self, r: int) -> None:
        """Every coder writes (or rewrites) a solution; a coder without code keeps its last."""
        previous = self._round(r - 1)
        posts = []
        for k, (name, _) in enumerate(self.cfg.coders()):
            msgs = coder_prompts(self.cfg, self.task, k, previous)
            p = await self.ask(
                name, "coder", msgs, r, self._no_code, max_tokens=self.cfg.max_tokens
            )
            if p.move is not None:
                self.code[k] = p.move
            if r > 1:
                m = HELPFUL.search(p.completion.text)
                self.helpfulness.append(int(m.group(1)) if m else None)
            body = f"\n```python\n{self.code[k]}```" if self.code[k] else " (no solution)"
            posts.append((name, f"Solution {k + 1} ({name}):{body}"))
        for name, text in posts:
            self.s.post(name, text, round=r)

    async def _tests(self, r: int) -> tuple[list[str], list[int]]:
        """The Tester's tests, run in the sandbox on every solution, posted with the results."""
        cfg = self.cfg
        p = await self.ask(
            TESTER,
            "tester",
            review_prompts(cfg, self.task, TESTER, self._round(r)),
            r,
            lambda t: parse_tests(t, self.entry, cfg.max_tests),
            max_tokens=cfg.review_tokens,
            schema=review_schema(cfg, TESTER),
        )
        tests = p.move or []
        passed = [await run_tests(self.task, c, tests, cfg.test_timeout_s) for c in self.code]
        if tests:
            got = "; ".join(f"solution {k + 1}: {n}/{len(tests)}" for k, n in enumerate(passed))
            text = "The Tester's tests:\n" + "\n".join(tests) + f"\nTests passed: {got}."
        else:
            text = "The Tester wrote no usable tests."
        self.s.post(TESTER, text, round=r, tests=tests, passed=passed)
        return tests, passed

    async def review(self, r: int) -> tuple[list[int] | None, list[int]]:
        """The Tester's tests and the Judge's review, redone on rollback."""
        cfg, n = self.cfg, self.cfg.n_coders
        while True:
            _, passed = await self._tests(r)
            p = await self.ask(
                JUDGE,
                "judge",
                review_prompts(cfg, self.task, JUDGE, self._round(r)),
                r,
                lambda t: parse_review(t, n),
                max_tokens=cfg.review_tokens,
                schema=review_schema(cfg, JUDGE),
                top_logprobs=cfg.top_logprobs,
                describe=_review_text,
            )
            if p.rolled_back or await self.s.round_end(r):
                continue
            scores = p.move[1] if p.move else None
            self.s.post(JUDGE, p.observation, round=r, scores=scores)
            return scores, passed


def _review_text(review: tuple[str, list[int]] | None) -> str:
    if not review:
        return "The Judge gave no usable review."
    feedback, scores = review
    got = "; ".join(f"solution {k + 1}: {s}/{MAX_SCORE}" for k, s in enumerate(scores))
    return f"The Judge's feedback: {feedback}\nScores: {got}."


async def play_codegen(
    task: Task,
    model: Model,
    cfg: CodeGenConfig,
    *,
    seed: int = 0,
    **options: Unpack[SessionOptions],
) -> CodeGenResult:
    """Debate one HumanEval task for `cfg.rounds` rounds and score the chosen solution."""
    missing = [k for k in ("test", "entry_point") if k not in task.meta]
    if task.kind != "code" or missing:
        raise ValueError(f"codegen task {task.id}: expected a code task with test and entry_point")
    gid = f"codegen-{task.id}"
    roles = [(n, "coder") for n, _ in cfg.coders()] + [(TESTER, "tester"), (JUDGE, "judge")]
    session = GameSession(model, f"codegen {task.id}", roles, f"{gid}-s{seed}", **options)
    d = _Debate(task, cfg, seed, session)
    answer = (await session.play(d.play)).answer
    chosen = d.chosen()
    best = d.verdicts[chosen] if chosen is not None else None
    return CodeGenResult(
        game_id=gid,
        task_id=task.id,
        success=bool(best and best.correct),
        answer=answer,
        chosen=chosen + 1 if chosen is not None else None,
        detail=best.detail if best else "no coder wrote code",
        rounds=cfg.rounds,
        solved_by=[bool(v and v.correct) for v in d.verdicts],
        scores=d.scores,
        tests_passed=d.passed,
        helpfulness=d.helpfulness,
        errors=d.errors,
        **session.stats(),
    )


def _choose(code: list[str | None], scores: list[int] | None, passed: list[int]) -> int | None:
    """The final answer: best judge score, then most tests passed, then coder order."""
    written = [k for k, c in enumerate(code) if c]
    if not written:
        return None
    return max(written, key=lambda k: (scores[k] if scores else -1, passed[k], -k))
