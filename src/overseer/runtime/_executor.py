"""The Executor owns the loop: rounds of agents on the spatial DAG, the bus, verdicts, decision.

Within a round an agent starts as soon as its spatial predecessors are done (not layer by
layer), up to `concurrency` at once; temporal inputs come from the previous round.
"""

from __future__ import annotations

import asyncio
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

from overseer.models import Model
from overseer.runtime._agent import Agent, AgentContext, AgentStepError
from overseer.runtime._bus import Interaction, Supervisor, SupervisorChain, Verdict
from overseer.runtime._ledger import Budget, BudgetExceeded, Ledger
from overseer.runtime._run import (
    AgentFailure,
    ReplaceAgentSignal,
    RollbackSignal,
    Run,
    RunResult,
    StopReason,
)
from overseer.runtime._spec import AgentSpec, TeamSpec
from overseer.runtime._tools import Tool
from overseer.runtime._trace import Trace

Verifier = Callable[[str, Run], Awaitable[str]]
# A team made inside the run (e.g. MASFly's planning), so its model calls are booked and traced.
TeamBuilder = Callable[[Run], Awaitable[TeamSpec]]
_PENDING = TeamSpec(agents=(AgentSpec(name="pending"),), name="pending")  # until a builder returns

DECISION_RULES = (
    "You are the final decision-maker of a team. Read the task and your teammates' "
    "answers, find their errors, and give the final answer. Be brief."
)


def last_line(text: str) -> str:
    """Default answer extractor for votes: the last non-empty line, normalised."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1].lower() if lines else ""


class Executor:
    """Runs one query through one team, with an ordered chain of supervisors on the bus."""

    def __init__(
        self,
        model: Model,
        *,
        supervisors: Sequence[Supervisor] = (),
        tools: Mapping[str, Tool] | None = None,
        models: Mapping[str, Model] | None = None,
        concurrency: int = 4,
        budget: Budget | None = None,
        trace_dir: str | Path = "runs",
        verifier: Verifier | None = None,
        max_steps: int = 4,
        max_tokens: int = 512,
        max_rollbacks: int = 2,
        max_replacements: int = 2,
        extract_answer: Callable[[str], str] = last_line,
        seed: int | None = 0,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency: expected >= 1, got {concurrency}")
        self.model = model
        self.chain = SupervisorChain(supervisors)
        self.tools = dict(tools or {})
        self.models = dict(models or {})
        self.concurrency = concurrency
        self.budget = budget or Budget()
        self.trace_dir = Path(trace_dir)
        self.verifier = verifier
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.max_rollbacks = max_rollbacks
        self.max_replacements = max_replacements
        self.extract_answer = extract_answer
        self.seed = seed

    # -- checks ----------------------------------------------------------------------------
    def _check_team(self, team: TeamSpec) -> None:
        for a in team.agents:
            for t in a.tools:
                if t not in self.tools:
                    raise ValueError(
                        f"agent {a.name}: tool {t!r} is not provided; known: {sorted(self.tools)}"
                    )
            if a.model is not None and a.model not in self.models:
                raise ValueError(
                    f"agent {a.name}: model {a.model!r} is not provided; known: "
                    f"{sorted(self.models)}"
                )

    # -- the bus ---------------------------------------------------------------------------
    async def _judge(self, run: Run, i: Interaction, rollbacks: list[int]) -> str:
        run.interactions.append(i)
        run.trace.event("interaction", **_interaction_fields(i))
        v = await self.chain.judge(i, run) if self.chain else Verdict.approve()
        if v.action == "approve":
            return i.observation
        run.verdicts.append(v)
        run.trace.event(
            "verdict",
            agent=i.agent,
            step=i.step,
            round=i.round,
            action=v.action,
            by=v.by,
            reason=v.reason,
            text=v.text,
            note=v.note,
            task=v.task,
        )
        if v.action == "guide":
            return f"{i.observation}\n\n[guidance from {v.by}] {v.text}"
        if v.action == "replace":
            return f"{v.text}\n\n[observation replaced by {v.by}: {v.note}]"
        if v.action == "verify":
            finding = await self._verify(run, v.task)
            run.trace.event("verification", agent=i.agent, by=v.by, task=v.task, finding=finding)
            return f"{i.observation}\n\n[verification requested by {v.by}] {finding}"
        if v.action == "rollback":
            if rollbacks[0] >= self.max_rollbacks:
                run.trace.event("verdict_ignored", by=v.by, reason="rollback cap reached")
                return i.observation
            raise RollbackSignal(v)
        if v.agent_spec is None or v.agent_spec.name != i.agent:
            raise ValueError(f"{v.by}: replace_agent must carry a spec named {i.agent!r}")
        raise ReplaceAgentSignal(v)

    async def _verify(self, run: Run, task: str) -> str:
        if self.verifier is not None:
            return await self.verifier(task, run)
        model = run.metered("verifier", "verifier")
        c = await model.acomplete(
            [
                {"role": "system", "content": "You check one claim or question carefully."},
                {"role": "user", "content": f"Task context:\n{run.query}\n\nCheck: {task}"},
            ],
            max_tokens=self.max_tokens,
            seed=self.seed,
        )
        return c.text.strip()

    # -- one agent, one round --------------------------------------------------------------
    async def _turn(self, run: Run, name: str, r: int, rollbacks: list[int]) -> None:
        for _ in range(self.max_replacements + 1):
            spec = run.team.agent(name)
            ctx = AgentContext(
                global_task=run.query,
                round=r,
                spatial_inputs=run.channel.from_senders(run.team.spatial_preds(name), round=r),
                temporal_inputs=run.channel.from_senders(
                    run.team.temporal_preds(name), round=r - 1
                ),
            )
            agent = Agent(
                spec,
                run.metered(name, "agent", self.models.get(spec.model or "", self.model)),
                [self.tools[t] for t in spec.tools],
                max_steps=self.max_steps,
                max_tokens=self.max_tokens,
                seed=self.seed,
            )
            try:
                text = await agent.run(ctx, lambda i: self._judge(run, i, rollbacks))
            except ReplaceAgentSignal as sig:
                new = sig.verdict.agent_spec
                assert new is not None
                removed = run.channel.purge(name)
                run.team = run.team.with_agent(new)
                run.trace.event(
                    "agent_replaced",
                    agent=name,
                    by=sig.verdict.by,
                    reason=sig.verdict.reason,
                    purged=len(removed),
                    spec=new.model_dump(),
                )
                continue
            except AgentStepError as exc:
                fail = AgentFailure(name, r, exc.reason, exc.detail)  # type: ignore[arg-type]
                run.failures.append(fail)
                run.trace.event(
                    "agent_failure", agent=name, round=r, reason=exc.reason, detail=exc.detail
                )
                return
            msg = run.channel.post(name, text, round=r)
            run.trace.event("message", sender=name, round=r, seq=msg.seq, content=text)
            return
        fail = AgentFailure(name, r, "no_answer", "replaced too many times")
        run.failures.append(fail)
        run.trace.event(
            "agent_failure", agent=name, round=r, reason=fail.reason, detail=fail.detail
        )

    async def _round(self, run: Run, r: int, rollbacks: list[int]) -> None:
        team = run.team
        finished = {n: asyncio.Event() for n in team.names}
        gate = asyncio.Semaphore(self.concurrency)

        async def one(name: str) -> None:
            try:
                for p in team.spatial_preds(name):
                    await finished[p].wait()
                async with gate:
                    await self._turn(run, name, r, rollbacks)
            finally:
                finished[name].set()

        async with asyncio.TaskGroup() as tg:
            for name in team.order():
                tg.create_task(one(name))

    # -- decision --------------------------------------------------------------------------
    async def _decide(self, run: Run) -> str:
        team, last = run.team, run.round
        finals = run.channel.from_senders(team.order(), round=last)
        if not finals:
            return ""
        if team.decision == "last":
            return finals[-1].content
        if team.decision == "vote":
            votes = [(self.extract_answer(m.content), m) for m in finals]
            counts = Counter(v for v, _ in votes if v)
            if not counts:
                return finals[-1].content
            best = max(counts.values())
            winner = next(m for v, m in votes if v and counts[v] == best)
            run.trace.event("vote", counts=dict(counts), winner=winner.sender)
            return winner.content
        model = run.metered("decision", "decision")
        answers = "\n\n".join(f"[{m.sender}] {m.content}" for m in finals)
        c = await model.acomplete(
            [
                {"role": "system", "content": DECISION_RULES},
                {"role": "user", "content": f"Task:\n{run.query}\n\nTeam answers:\n{answers}"},
            ],
            max_tokens=self.max_tokens,
            seed=self.seed,
        )
        run.channel.post("decision", c.text, round=last, kind="decision")
        return c.text

    def _replace_team(self, run: Run, v: Verdict) -> None:
        """A round-end `replace_team` verdict: the next round runs on the verdict's team."""
        if v.team_spec is None:
            raise ValueError(f"{v.by}: replace_team must carry a team spec")
        self._check_team(v.team_spec)
        run.team = v.team_spec
        run.verdicts.append(v)
        team = v.team_spec.model_dump()
        run.trace.event("team_replaced", round=run.round, by=v.by, reason=v.reason, team=team)

    # -- the run ---------------------------------------------------------------------------
    async def run(
        self, team: TeamSpec | TeamBuilder, query: str, *, run_id: str | None = None
    ) -> RunResult:
        """Solve `query` with `team` (or the team a builder makes inside the run); the trace is
        complete up to any failure."""
        builder = None if isinstance(team, TeamSpec) else team
        spec = team if isinstance(team, TeamSpec) else _PENDING
        if builder is None:
            self._check_team(spec)
        rid = run_id or f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
        if (self.trace_dir / f"{rid}.jsonl").exists():  # a rerun never appends to an old trace
            rid = f"{rid}-{uuid.uuid4().hex[:6]}"
        trace = Trace(self.trace_dir / f"{rid}.jsonl", rid)
        run = Run(rid, query, spec, self.model, Ledger(rid, self.budget), trace)
        trace.event(
            "run_start",
            query=query,
            team=spec.model_dump() if builder is None else None,
            model=self.model.name,
            supervisors=[s.name for s in self.chain.supervisors],
        )
        stop: StopReason = "done"
        answer, error = "", None
        rollbacks = [0]
        try:
            if builder is not None:
                spec = await builder(run)
                self._check_team(spec)
                run.team = spec
                trace.event("team", team=spec.model_dump())
            r = 0
            while r < spec.rounds:
                run.round = r
                run.channel.checkpoint()
                trace.event("round_start", round=r)
                try:
                    await self._round(run, r, rollbacks)
                    v = await self.chain.round_end(run) if self.chain else None
                    if v is not None and v.action == "replace_team":
                        self._replace_team(run, v)
                    elif v is not None and v.action == "rollback":
                        if rollbacks[0] < self.max_rollbacks:
                            raise ExceptionGroup("round end", [RollbackSignal(v)])
                        trace.event("verdict_ignored", by=v.by, reason="rollback cap reached")
                except ExceptionGroup as eg:
                    rb, rest = eg.split(RollbackSignal)
                    if rest is not None:
                        raise _unwrap(rest) from None
                    assert rb is not None
                    sig = _unwrap(rb)
                    assert isinstance(sig, RollbackSignal)
                    rollbacks[0] += 1
                    removed = run.channel.rollback()
                    run.verdicts.append(sig.verdict)
                    trace.event(
                        "rollback",
                        round=r,
                        by=sig.verdict.by,
                        reason=sig.verdict.reason,
                        removed=len(removed),
                        count=rollbacks[0],
                    )
                    continue
                run.channel.drop_checkpoint()
                trace.event("round_end", round=r)
                r += 1
            answer = await self._decide(run)
        except BudgetExceeded as exc:
            stop = f"budget_{exc.reason}"  # type: ignore[assignment]
            error = str(exc)
            answer = _best_effort(run)
        except Exception as exc:
            stop, error = "error", f"{type(exc).__name__}: {exc}"
            trace.event("error", error=error, traceback=traceback.format_exc())
            answer = _best_effort(run)
        result = RunResult(
            run_id=rid,
            answer=answer,
            stop_reason=stop,
            usage_by_actor=run.ledger.by_actor(),
            calls_by_actor=run.ledger.calls_by_actor(),
            total=run.ledger.total,
            rounds=run.round + 1,
            trace_path=trace.path,
            failures=tuple(run.failures),
            messages=run.channel.snapshot(),
            error=error,
        )
        try:
            await self.chain.run_end(run, result)
        finally:
            t = result.total
            trace.event(
                "run_end",
                answer=answer,
                stop_reason=stop,
                error=error,
                usage={
                    "input_tokens": t.prompt_tokens,
                    "output_tokens": t.completion_tokens,
                    "cached_input_tokens": t.cached_prompt_tokens,
                },
                by_actor={
                    k: [u.prompt_tokens, u.cached_prompt_tokens, u.completion_tokens]
                    for k, u in result.usage_by_actor.items()
                },
            )
            trace.close()
        return result


def _unwrap(exc: BaseException) -> BaseException:
    """The first leaf of (nested) exception groups: what actually went wrong."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def _best_effort(run: Run) -> str:
    """On a stop, the most recent message of an agent, so the stop is not an empty answer."""
    for m in reversed(run.channel.messages):
        if m.kind in ("message", "decision"):
            return m.content
    return ""


def _interaction_fields(i: Interaction) -> dict[str, object]:
    return {
        "kind": i.kind,
        "agent": i.agent,
        "round": i.round,
        "step": i.step,
        "tool": i.tool,
        "thought": i.thought,
        "input": i.input,
        "observation": i.observation,
        "error": i.error,
        "local_task": i.local_task,
        "gen_ai.usage.input_tokens": i.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": i.usage.completion_tokens,
    }
