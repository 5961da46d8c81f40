"""The Executor owns the loop: rounds of agents on the spatial DAG, the bus, the decision.

Within a round an agent starts as soon as its spatial predecessors are done (not layer by
layer), up to `concurrency` at once; temporal inputs come from the previous round. Every
step goes through the run's `Bus`, which applies the plug-ins' verdicts.
"""

from __future__ import annotations

import asyncio
import traceback
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from overseer.models import Model
from overseer.models.errors import ContextWindowError
from overseer.runtime._agent import (
    COMMON_RULES,
    Agent,
    AgentContext,
    AgentStepError,
    team_context,
    team_roster,
)
from overseer.runtime._bus import Bus, SupervisorChain, Verifier
from overseer.runtime._interaction import (
    ALL_ACTIONS,
    ReplaceAgent,
    ReplaceTeam,
    Rollback,
    Supervisor,
)
from overseer.runtime._ledger import Budget, BudgetExceeded
from overseer.runtime._run import AgentFailure, Run, RunResult, StopReason, open_run
from overseer.runtime._spec import TeamSpec
from overseer.runtime._tools import Tool

TeamBuilder = Callable[[Run], Awaitable[TeamSpec]]

DECISION_RULES = (
    "Now you are the final decision-maker of this team, not one of its agents: do not use "
    "the thought/action format. Read the task and your teammates' answers above, find their "
    "errors, and give the final answer. Be brief."
)


CLOSED = (
    ' Reply with one JSON object: {"reasoning": "<a few short sentences>", "answer": <the '
    "final answer alone>}."
)


def last_line(text: str) -> str:
    """Default answer extractor for votes: the last non-empty line, normalised."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1].lower() if lines else ""


class Executor:
    """Runs one query through one team, with an ordered chain of supervisors on the bus.

    `top_logprobs` > 0 makes every agent step ask for that many top-k alternatives per
    token, carried on each Interaction (the uncertainty monitor needs them). `roster` heads
    every prompt with the team list, so a tool-less agent's own part is only its name and
    role and a server's prefix cache serves more of each prompt (benchmarks/prefix_cache.py).
    """

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
        top_logprobs: int = 0,
        answer_schema: Mapping[str, Any] | None = None,
        roster: bool = False,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency: expected >= 1, got {concurrency}")
        if not 0 <= top_logprobs <= 20:
            raise ValueError(f"top_logprobs: expected 0..20, got {top_logprobs}")
        self.model = model
        self.supervisors = list(supervisors)
        self._chain = SupervisorChain(self.supervisors)  # checked once, shared by the runs
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
        self.top_logprobs = top_logprobs
        self.answer_schema = answer_schema  # the decision's closed answer format, if any
        self.roster = roster
        self._last_graph: tuple[TeamSpec | None, _Graph] = (
            None,
            _Graph([], {}, {}, {}, {}, {}, ""),
        )

    def check_team(self, team: TeamSpec) -> None:
        """Every tool and model the team names is provided, or a ValueError naming it."""
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

    def chain(self) -> SupervisorChain:
        """The supervisors as the runs' buses ask them: built and checked once, again only
        when `supervisors` was changed."""
        got = self._chain.supervisors
        now = self.supervisors
        if len(got) != len(now) or any(a is not b for a, b in zip(got, now, strict=True)):
            self._chain = SupervisorChain(now)
        return self._chain

    # -- one agent, one round --------------------------------------------------------------
    def _agent(self, run: Run, name: str) -> Agent:
        spec = run.team.agent(name)
        return Agent(
            spec,
            run.metered(name, "agent", self.models.get(spec.model or "", self.model)),
            [self.tools[t] for t in spec.tools],
            max_steps=self.max_steps,
            max_tokens=self.max_tokens,
            seed=self.seed,
            top_logprobs=self.top_logprobs,
        )

    async def _turn(self, host: _TeamRun, name: str, r: int) -> None:
        """One agent's turn: its message on the channel, or a failure; a replaced agent's turn
        starts again with the new spec; a rolled-back turn ends without a message."""
        run, bus = host.run, host.bus
        for _ in range(self.max_replacements + 1):
            g = host.graph()  # a replaced agent's turn reads the new team's
            ctx = AgentContext(
                global_task=run.query,
                round=r,
                spatial_inputs=run.channel.from_senders(g.spatial[name], round=r),
                temporal_inputs=run.channel.from_senders(g.temporal[name], round=r - 1),
                roster=self._roster(host),
            )
            try:
                text = await host.agent(name).run(
                    ctx, bus.judge, before=bus.before_tool, view=bus.view, refused=bus.refused
                )
            except AgentStepError as exc:
                if isinstance(exc.__cause__, ContextWindowError):  # would fail for every agent
                    raise exc.__cause__ from None
                self._fail(run, AgentFailure(name, r, exc.reason, exc.detail))  # type: ignore[arg-type]
                return
            if text is not None:
                msg = run.channel.post(name, text, round=r)
                run.trace.record(
                    "message", {"sender": name, "round": r, "seq": msg.seq, "content": text}
                )
                return
            if host.replay:  # rolled back: the round is played again
                return
        self._fail(run, AgentFailure(name, r, "no_answer", "replaced too many times"))

    @staticmethod
    def _fail(run: Run, fail: AgentFailure) -> None:
        run.failures.append(fail)
        run.trace.event(
            "agent_failure",
            agent=fail.agent,
            round=fail.round,
            reason=fail.reason,
            detail=fail.detail,
        )

    async def _round(self, host: _TeamRun, r: int) -> None:
        """One round: a turn starts once its spatial predecessors' turns ended, up to
        `concurrency` at once. The only turn that can run (in a chain, a complete DAG) runs
        inline, without a task. A rollback ends the round (`_TeamRun.roll_back` cancelled
        the other turns before anyone else called the model); a turn's error (budget,
        context window) cancels the others and is raised."""
        g = host.graph()
        left = {n: len(g.preds[n]) for n in g.order}  # predecessors whose turn has not ended
        ready = deque(n for n in g.order if not left[n])
        running: dict[asyncio.Task[None], str] = {}
        try:
            while ready or running:
                if not running and (len(ready) == 1 or self.concurrency == 1):
                    ended = [ready.popleft()]
                    await self._turn(host, ended[0], r)
                else:
                    while ready and len(running) < self.concurrency:
                        name = ready.popleft()
                        running[asyncio.create_task(self._turn(host, name, r))] = name
                    host.turns = list(running)
                    ended = await _first_ended(running, g.order)
                if host.replay:  # rolled back: the round is played again
                    return
                for name in ended:
                    for s in g.succ[name]:
                        left[s] -= 1
                        if not left[s]:
                            ready.append(s)
        finally:
            host.turns = []
            for t in running:
                t.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    async def _rounds(self, host: _TeamRun) -> None:
        """Play the rounds; a rollback (mid-round or at a round's end) replays the round."""
        run, r = host.run, 0
        while r < run.team.rounds:
            run.round = r
            run.channel.checkpoint()
            run.trace.event("round_start", round=r)
            host.replay = False
            await self._round(host, r)
            if host.replay or await host.bus.round_end(r):
                continue
            run.channel.drop_checkpoint()
            run.trace.event("round_end", round=r)
            r += 1

    def _roster(self, host: _TeamRun) -> str:
        """The team list heading the team's prompts, or "" when the Executor lists no team."""
        return host.graph().roster if self.roster else ""

    # -- decision --------------------------------------------------------------------------
    async def _decide(self, host: _TeamRun) -> str:
        run = host.run
        team, last = run.team, run.round
        finals = run.channel.from_senders(host.graph().order, round=last)
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
        # the agents' rules, the task and the answers first, as the last agent's prompt began
        # (a server's prefix cache serves them); the decision's own instructions last
        rules = DECISION_RULES + (CLOSED * bool(self.answer_schema))
        c = await run.metered("decision", "decision").acomplete(
            [
                {"role": "system", "content": COMMON_RULES},
                {
                    "role": "user",
                    "content": team_context(run.query, (), finals, self._roster(host)) + rules,
                },
            ],
            max_tokens=self.max_tokens,
            seed=self.seed,
            schema=self.answer_schema,
        )
        run.channel.post("decision", c.text, round=last, kind="decision")
        return c.text

    # -- the run ---------------------------------------------------------------------------
    async def run(
        self, team: TeamSpec | TeamBuilder, query: str, *, run_id: str | None = None
    ) -> RunResult:
        """Solve `query` with `team` (or with the team a builder makes inside the run, its
        calls booked and traced); the trace is complete up to any failure."""
        spec = team if isinstance(team, TeamSpec) else TeamSpec.placeholder()
        if isinstance(team, TeamSpec):
            self.check_team(team)
        run = open_run(
            query, spec, self.model, run_id=run_id, trace_dir=self.trace_dir, budget=self.budget
        )
        host = _TeamRun(self, run)
        host.bus.start(host.graph().dump)
        stop, answer, error = await self._solve(host, team)
        return await host.bus.finish(stop, answer, error)

    async def _solve(
        self, host: _TeamRun, team: TeamSpec | TeamBuilder
    ) -> tuple[StopReason, str, str | None]:
        run = host.run
        try:
            if not isinstance(team, TeamSpec):
                run.team = await team(run)
                self.check_team(run.team)
                run.trace.event("team", team=run.team.model_dump())
            await self._rounds(host)
            answer = await self._decide(host)
            return ("done" if answer.strip() else "empty_answer"), answer, None
        except BudgetExceeded as exc:
            return f"budget_{exc.reason}", _best_effort(run), str(exc)  # type: ignore[return-value]
        except ContextWindowError as exc:
            return "context_window", _best_effort(run), str(exc)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            run.trace.event("error", error=error, traceback=traceback.format_exc())
            return "error", _best_effort(run), error


@dataclass(frozen=True)
class _Graph:
    """A team's topological order and each agent's spatial and temporal predecessors."""

    order: list[str]
    spatial: dict[str, list[str]]
    temporal: dict[str, list[str]]
    preds: dict[str, set[str]]  # distinct spatial predecessors
    succ: dict[str, list[str]]  # distinct spatial successors, in team order
    dump: dict[str, Any]  # the team as the trace's run_start event writes it
    roster: str  # the team list that heads the prompts when the Executor lists the team

    @staticmethod
    def of(team: TeamSpec) -> _Graph:
        order = team.order()
        preds = {n: set(team.spatial_preds(n)) for n in order}
        return _Graph(
            order,
            {n: team.spatial_preds(n) for n in order},
            {n: team.temporal_preds(n) for n in order},
            preds,
            {n: [s for s in order if n in preds[s]] for n in order},
            team.model_dump(),
            team_roster(team.agents),
        )


class _TeamRun:
    """One run of a team: the bus's host. It stops a round's other turns when the bus rolls
    back (the round is then played again) and checks that a new agent or team can run with
    the Executor's tools and models."""

    label = "team"
    honours: frozenset[str] = ALL_ACTIONS

    def __init__(self, executor: Executor, run: Run) -> None:
        self.executor = executor
        self.run = run
        self.replay = False  # the current round was rolled back
        self.turns: list[asyncio.Task[None]] = []  # the current round's turns
        #: each agent with the team it was last found in: built once per spec (a replaced
        #: one is rebuilt), its spec looked up again only when the team changed
        self._agents: dict[str, tuple[Agent, TeamSpec]] = {}
        self._graph: tuple[TeamSpec | None, _Graph] = (None, _Graph([], {}, {}, {}, {}, {}, ""))
        self.bus = Bus(
            run,
            executor.chain(),
            host=self,
            verifier=executor.verifier,
            max_rollbacks=executor.max_rollbacks,
            verify_tokens=executor.max_tokens,
            seed=executor.seed,
        )

    def graph(self) -> _Graph:
        """The current team's order and edges by agent, computed once per team (not per turn;
        the Executor keeps the last team's, for the next run of the same team)."""
        team = self.run.team
        if self._graph[0] is not team:
            last = self.executor._last_graph
            self._graph = last if last[0] is team else (team, _Graph.of(team))
            self.executor._last_graph = self._graph
        return self._graph[1]

    def agent(self, name: str) -> Agent:
        """This run's agent `name` for its current spec (built at its first turn)."""
        team = self.run.team
        got = self._agents.get(name)
        if got is not None and got[1] is team:  # a TeamSpec is frozen: the same spec
            return got[0]
        if got is None or got[0].spec is not team.agent(name):
            agent = self.executor._agent(self.run, name)
        else:
            agent = got[0]
        self._agents[name] = (agent, team)
        return agent

    def roll_back(self, v: Rollback) -> None:
        self.replay = True
        me = asyncio.current_task()
        for t in self.turns:
            if t is not me:
                t.cancel()

    def replace_agent(self, v: ReplaceAgent) -> None:
        self.executor.check_team(self.run.team.with_agent(v.spec))

    def replace_team(self, v: ReplaceTeam) -> None:
        self.executor.check_team(v.spec)


async def _first_ended(running: dict[asyncio.Task[None], str], order: list[str]) -> list[str]:
    """Wait for one or more of the `running` turns to end and take them out, in team order;
    a turn that failed raises its error (the caller cancels the others)."""
    done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
    ended = sorted(done, key=lambda t: order.index(running[t]))
    for t in ended:
        if not t.cancelled() and t.exception() is not None:
            raise t.exception()  # type: ignore[misc]
    return [running.pop(t) for t in ended]


def _best_effort(run: Run) -> str:
    """On a stop, the most recent message of an agent, so the stop is not an empty answer."""
    for m in reversed(run.channel.messages):
        if m.kind in ("message", "decision"):
            return m.content
    return ""
