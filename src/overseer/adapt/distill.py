"""Reflective distillation, on labelled training tasks only.

Success: the OP is generalised into a query-agnostic SOP and stored as a case. Failure: the
run's messages and the evaluation are diagnosed, errors are attributed to agents, the
experience pool is updated, the OP is revised and the task re-run, up to `max_tries` runs.
Repository initialisation is the same loop from an empty repository; for code it starts from
a one-agent team and adds roles only when a run fails. Test-split tasks are refused.

Every model call is in the books: planning and the team run in the attempt's run (kinds
"planner", "agent", "watcher", ...); generalising, reflecting and revising after a run are
booked as kind "trainer" in a ledger and trace of their own, one per attempt
(`<run id>-trainer.jsonl` next to the run's trace).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from overseer.adapt.experience import Experience
from overseer.adapt.masfly import MASFly, Outcome, Plan
from overseer.adapt.repository import Case
from overseer.adapt.retrieve import fallback_need
from overseer.adapt.sop import SOP, AgentLesson, Reflection, SOPAgent, sop_to_team
from overseer.models import Model, ModelError, Usage, ask_structured
from overseer.runtime import Ledger, Tool, read_trace
from overseer.runtime.books import MeteredModel, Trace
from overseer.runtime.steps import last_line

GENERALISE_PROMPT = (
    "This operating procedure (OP) made a team of AI agents solve the task below. Rewrite it "
    "as a reusable SOP for similar tasks: keep the agents, tools and flow, but replace details "
    "of this particular task in the instructions with general directions. Reply with the SOP "
    "as JSON in the same format."
)
REFLECT_PROMPT = (
    "A team of AI agents failed the task below. From the OP, the agents' messages and the "
    "evaluation, explain why it failed and which agents caused it: for each responsible "
    "agent, what it did wrong and a concrete strategy to avoid it. Reply with JSON."
)
REVISE_PROMPT = (
    "Revise the operating procedure (OP) of a team of AI agents that failed the task below, "
    "using the diagnosis: change instructions, roles, tools or the flow as needed. {extra}"
    "Reply with the revised OP as JSON in the same format."
)
ADD_ONE_ROLE = "Add at most one new agent, and only if the diagnosis shows it is needed. "


class LeakageError(RuntimeError):
    """A task outside the training split was handed to distillation."""


class Task(Protocol):
    """What distillation needs of a labelled task: its id (checked against the training
    split), its suite and its kind (the domain of the SOP it yields). `overseer.tasks.Task`
    is one."""

    @property
    def id(self) -> str: ...
    @property
    def suite(self) -> str: ...
    @property
    def kind(self) -> str: ...


class Score(Protocol):
    """What distillation needs of an evaluation: right or wrong, and why."""

    @property
    def correct(self) -> bool: ...
    @property
    def detail(self) -> str: ...


TaskT = TypeVar("TaskT", bound=Task)
#: How an answer to a task is evaluated (e.g. `overseer.tasks.ascore`); may be async.
Evaluate = Callable[[TaskT, str], Score | Awaitable[Score]]


@dataclass
class Attempt:
    """One run of a distilled task: the OP's source, the score and what was learnt."""

    correct: bool
    detail: str
    op_source: str
    experience_id: int | None = None
    trainer_usage: Usage = field(default_factory=Usage)  # generalise / reflect / revise calls
    trainer_trace: Path | None = None


@dataclass
class _TrainerBooks:
    """The ledger and trace of one attempt's learning calls (kind "trainer")."""

    model: MeteredModel
    ledger: Ledger
    trace: Trace

    @classmethod
    def open(
        cls, model: Model, run_id: str, trace_dir: Path, task: str, attempt: int
    ) -> _TrainerBooks:
        rid = f"{run_id}-trainer"
        ledger, trace = Ledger(rid), Trace(trace_dir / f"{rid}.jsonl", rid)
        trace.event("trainer_start", task=task, attempt=attempt, team_run=run_id)
        return cls(MeteredModel(model, ledger, "distiller", "trainer", trace), ledger, trace)

    def close(self, attempt: Attempt) -> Usage:
        """Record the attempt's trainer usage and trace; return the usage."""
        t = self.ledger.total
        self.trace.event(
            "trainer_end",
            usage={"input_tokens": t.prompt_tokens, "output_tokens": t.completion_tokens},
            calls=len(self.ledger.entries),
        )
        self.trace.close()
        attempt.trainer_usage, attempt.trainer_trace = t, self.trace.path
        return t


@dataclass
class DistillRecord:
    """What distilling one training task did."""

    task_id: str
    attempts: list[Attempt] = field(default_factory=list)
    case_id: int | None = None
    usage: Usage = field(default_factory=Usage)

    @property
    def success(self) -> bool:
        return self.case_id is not None


def _transcript(outcome: Outcome, limit: int = 3000) -> str:
    """Messages and tool calls of a run (tool calls read back from its trace), clipped."""
    lines = []
    for ev in read_trace(outcome.result.trace_path):
        if ev["event"] == "message":
            lines.append(f"[{ev['sender']}] {' '.join(str(ev['content']).split())[:400]}")
        elif ev["event"] == "interaction" and ev.get("kind") != "message":
            obs = " ".join(str(ev.get("observation", "")).split())[:160]
            err = f" ERROR {ev['error']}" if ev.get("error") else ""
            lines.append(
                f"[{ev['agent']} used {ev.get('tool')}] {str(ev['input'])[:120]} -> {obs}{err}"
            )
    text = "\n".join(lines) or "(no messages)"
    return text[-limit:]


@dataclass(frozen=True)
class _Learn:
    """What learning after a run of one task needs besides the run itself."""

    task: Task
    query: str
    plan: Plan
    tools: list[str]
    minimal: bool
    seed: int | None


class Distiller:
    """Distils training tasks into SOP cases and experiences of one MASFly instance."""

    def __init__(
        self,
        fly: MASFly,
        *,
        train_ids: Collection[str],
        max_tries: int = 2,
        minimal_kinds: Collection[str] = ("code",),
    ) -> None:
        if max_tries < 1:
            raise ValueError(f"max_tries: expected >= 1, got {max_tries}")
        self.fly = fly
        self.train_ids = frozenset(train_ids)
        self.max_tries = max_tries
        self.minimal_kinds = frozenset(minimal_kinds)

    def check(self, task: Task) -> None:
        """Refuse anything that is not a training task (the test split is never seen)."""
        if task.id not in self.train_ids:
            raise LeakageError(
                f"task {task.id!r} of suite {task.suite!r} is not in the training split; "
                "distillation only ever sees training tasks"
            )

    async def distill(
        self,
        task: TaskT,
        query: str,
        *,
        evaluate: Evaluate[TaskT],
        tools: Mapping[str, Tool] | None = None,
        seed: int | None = 0,
        extract_answer: Callable[[str], str] = last_line,
    ) -> DistillRecord:
        """Run, evaluate and reflect on one training task until it succeeds or tries run out."""
        self.check(task)
        rec = DistillRecord(task.id)
        repo = self.fly.repository
        minimal = task.kind in self.minimal_kinds and len(repo.cases(task.kind)) == 0
        plan: Plan | None = None
        op: SOP | None = None
        source = ""
        for n in range(self.max_tries):
            run_id = f"distill-{task.id.replace('/', '_')}-t{n}-s{seed}"
            if plan is None:  # the first run plans inside itself (booked as "planner")
                outcome = await self.fly.solve(
                    query,
                    tools=tools,
                    domain=task.kind,
                    minimal=minimal,
                    seed=seed,
                    extract_answer=extract_answer,
                    run_id=run_id,
                )
                plan = outcome.plan
                op, source = plan.inst.op, plan.inst.source
            else:
                outcome = await self.fly.run_op(
                    query,
                    plan,
                    op=op,
                    tools=tools,
                    seed=seed,
                    extract_answer=extract_answer,
                    run_id=run_id,
                )
            assert op is not None
            rec.usage += outcome.result.total
            learn = _Learn(task, query, plan, sorted(tools or {}), minimal, seed)
            op = await self._evaluate_and_learn(learn, op, outcome, evaluate, source, rec, n)
            if rec.success:
                return rec
            source = "revised"
        return rec

    async def _evaluate_and_learn(
        self,
        learn: _Learn,
        op: SOP,
        outcome: Outcome,
        evaluate: Evaluate[Any],
        source: str,
        rec: DistillRecord,
        n: int,
    ) -> SOP:
        """Score run n, record the attempt, and learn from it in the attempt's trainer books."""
        sc = await _evaluate(learn.task, outcome.answer, evaluate)
        attempt = Attempt(sc.correct, sc.detail, source)
        rec.attempts.append(attempt)
        run_id, fly = outcome.result.run_id, self.fly
        books = _TrainerBooks.open(fly.model, run_id, fly.trace_dir, learn.task.id, n)
        try:
            return await self._learn(books.model, learn, op, outcome, sc, attempt, rec, n)
        finally:
            rec.usage += books.close(attempt)

    async def _learn(
        self,
        model: Model,
        learn: _Learn,
        op: SOP,
        outcome: Outcome,
        sc: Score,
        attempt: Attempt,
        rec: DistillRecord,
        n: int,
    ) -> SOP:
        """After run n: store the generalised SOP on success, else the experience and (if a
        try is left) the revised OP, which is returned."""
        query, plan, seed = learn.query, learn.plan, learn.seed
        if sc.correct:
            sop = await self._generalise(model, query, op, plan, learn.tools, seed)
            need = plan.need.need if plan.need else fallback_need(query)
            rec.case_id = self.fly.repository.add(
                Case(query=query, need=need, sop=sop, domain=learn.task.kind, source=learn.task.id)
            )
            return op
        reflection = await self._reflect(model, query, op, outcome, sc, seed)
        if self.fly.pool is not None:
            attempt.experience_id = self.fly.pool.add(
                Experience(
                    query=query,
                    failure_cause=reflection.failure_cause,
                    lessons=reflection.lessons,
                    need=plan.need.need if plan.need else None,
                    domain=learn.task.kind,
                    source=learn.task.id,
                )
            )
        if n + 1 < self.max_tries:
            return await self._revise(
                model, query, op, reflection, learn.tools, learn.minimal, seed
            )
        return op

    async def _generalise(
        self, model: Model, query: str, op: SOP, plan: Plan, tools: list[str], seed: int | None
    ) -> SOP:
        refs = "\n".join(h.case.sop.model_dump_json() for h in plan.hits)
        value = await _ask(
            model,
            GENERALISE_PROMPT,
            f"Task:\n{query[:2500]}\n\nOP:\n{op.model_dump_json()}"
            + (f"\n\nReference SOPs:\n{refs}" if refs else ""),
            SOP,
            seed,
            max_tokens=900,
            check=lambda s: _same_shape(s, op, tools),
        )
        return value or op

    async def _reflect(
        self, model: Model, query: str, op: SOP, outcome: Outcome, sc: Score, seed: int | None
    ) -> Reflection:
        value = await _ask(
            model,
            REFLECT_PROMPT,
            f"Task:\n{query[:2500]}\n\nOP:\n{op.render()}\n\nMessages:\n"
            f"{_transcript(outcome)}\n\nFinal answer:\n{outcome.answer[:1500]}\n\n"
            f"Evaluation: failed. {sc.detail}",
            Reflection,
            seed,
            max_tokens=500,
        )
        if value is not None:
            return value
        last = op.agents[-1].name
        return Reflection(
            failure_cause=f"evaluation failed: {sc.detail or 'wrong answer'}"[:800],
            lessons=[
                AgentLesson(
                    agent=last,
                    attribution="gave a final answer that failed the evaluation",
                    strategy="check the answer against every requirement of the task before "
                    "giving it",
                )
            ],
        )

    async def _revise(
        self,
        model: Model,
        query: str,
        op: SOP,
        reflection: Reflection,
        tools: list[str],
        minimal: bool,
        seed: int | None,
    ) -> SOP:
        limit = len(op.agents) + 1 if minimal else self.fly.config.max_agents

        def check(s: SOP) -> None:
            if len(s.agents) > limit:
                raise ValueError(f"agents: at most {limit} agents, got {len(s.agents)}")
            sop_to_team(s, tools=tools)

        value = await _ask(
            model,
            REVISE_PROMPT.format(extra=ADD_ONE_ROLE if minimal else ""),
            f"Available tools: {', '.join(tools) or 'none'}\n\nTask:\n{query[:2500]}\n\n"
            f"OP:\n{op.model_dump_json()}\n\nDiagnosis:\n{reflection.model_dump_json()}",
            SOP,
            seed,
            max_tokens=900,
            check=check,
        )
        return value or with_lessons(op, reflection, add_reviewer=minimal)


M = TypeVar("M", SOP, Reflection)


async def _ask(
    model: Model,
    system: str,
    user: str,
    parse: type[M],
    seed: int | None,
    *,
    max_tokens: int,
    check: Callable[[M], None] | None = None,
) -> M | None:
    """One structured ask of the distiller (booked by its metered model); None on failure."""
    try:
        got = await ask_structured(
            model,
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            parse=parse,
            check=check,
            max_reasks=1,
            max_tokens=max_tokens,
            seed=seed,
        )
    except ModelError:
        return None
    return got.value


def with_lessons(op: SOP, reflection: Reflection, *, add_reviewer: bool = False) -> SOP:
    """The OP with each lesson appended to its agent's instructions (the revision fallback);
    with `add_reviewer`, a reviewer agent is added after the last agent (one role more)."""
    by_agent: dict[str, list[str]] = {}
    for x in reflection.lessons:
        by_agent.setdefault(x.agent, []).append(x.strategy)
    agents = [
        a.model_copy(
            update={
                "instructions": (a.instructions + " " + " ".join(by_agent.get(a.name, [])))[:2000]
            }
        )
        for a in op.agents
    ]
    team, edges = list(op.team), list(op.edges)
    if add_reviewer and "Reviewer" not in team and len(team) < 8:
        last = op.team[-1]
        agents.append(
            SOPAgent(
                name="Reviewer",
                responsibility="Check the previous agent's answer and give the corrected final "
                "answer.",
                instructions="Find mistakes against every requirement of the task, fix them, "
                "and give the final answer in the format the task asks for.",
                tools=list(next(a.tools for a in op.agents if a.name == last)),
            )
        )
        team.append("Reviewer")
        edges.append((last, "Reviewer"))
    return op.model_copy(update={"agents": agents, "team": team, "edges": edges})


def _same_shape(sop: SOP, op: SOP, tools: list[str]) -> None:
    if sorted(sop.team) != sorted(op.team):
        raise ValueError(f"team: keep the OP's agents {op.team}, got {sop.team}")
    sop_to_team(sop, tools=tools)


async def _evaluate(task: TaskT, answer: str, evaluate: Evaluate[TaskT]) -> Score:
    result = evaluate(task, answer)
    if isinstance(result, Awaitable):
        return await result
    return result
