"""The framework-neutral guard under every framework adapter: rules, supervisor, ledger, budget.

An adapter (LangGraph middleware, OpenAI Agents SDK filter, pydantic-ai history processor)
translates its framework's hooks into five calls: `before_tool` (loop breaker, step budget),
`after_tool` (purify an over-long output; the LLM supervisor where configured),
`model_input` (mask older tool outputs), `check_budget` and `book` (each model call the
framework makes, with the tokens it reports). The engine is the runtime plug-in's: the rule
tier of `overseer.supervise.rules` and `SupervisorCore`. No framework is imported here.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections import Counter
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from overseer.models import Completion, Model, Usage
from overseer.runtime import Budget, Interaction, Ledger, Run, TeamSpec
from overseer.runtime.books import BudgetExceeded, MeteredModel, Trace
from overseer.runtime.bus import Bus, UnsupportedVerdictError
from overseer.runtime.verdicts import Approve, ReplaceAgent, ReplaceTeam, Rollback
from overseer.supervise import Review, Step, SupervisorCore, SupervisorSettings, verdict_of
from overseer.supervise.rules import RuleFiring, RuleSettings, RuleTier, ToolRecord

__all__ = ["BudgetExceeded", "Guard", "GuardSettings", "ToolRecord", "args_text"]

T = TypeVar("T")
Args = str | Mapping[str, Any]  # a tool call's arguments: JSON text or a mapping


def args_text(args: object) -> str:
    """Tool arguments as the rules compare them: JSON text with sorted keys (a string is kept
    as given; what JSON cannot hold, as its text). The one writer for every adapter."""
    if args is None:
        return ""
    if isinstance(args, str):
        return args
    if isinstance(args, Mapping):
        args = dict(args)
    try:
        return json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(args)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from sync code, also when the caller already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def _no_verifier(task: str, run: Run) -> str:
    """A guard runs no verifier: the agent is asked to check it itself."""
    return f"no verifier ran here: check this yourself before going on ({task})"


@dataclass(frozen=True)
class GuardSettings:
    """What a guard enforces: the rule tier, the LLM supervisor (None: no LLM tier) and a hard
    budget over the whole team (all agents, the supervisor's calls included)."""

    rules: RuleSettings = field(default_factory=RuleSettings)
    supervisor: SupervisorSettings | None = None
    budget_tokens: int | None = None
    budget_calls: int | None = None

    def __post_init__(self) -> None:
        for name in ("budget_tokens", "budget_calls"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"guard {name}: expected an integer >= 1 or None, got {value!r}")


class Guard:
    """overseer's engine for one agent team inside another framework (one run at a time).

    Thread-safe: frameworks run tool calls in parallel threads. `ledger` is the current run's
    (a new one per `start_run`), `stats` sums up what acted. The LLM supervisor's verdicts are
    applied by a bus of the run (`bus`), with the guard as its host: a guard honours guide,
    replace and verify (a framework's own loop cannot be rolled back or re-staffed from here).
    """

    label = "guard"
    honours: frozenset[str] = frozenset({"guide", "replace", "verify"})

    def __init__(
        self,
        settings: GuardSettings | None = None,
        *,
        supervisor_model: Model | None = None,
        trace_dir: str | Path | None = None,
        run_name: str = "",
    ) -> None:
        self.settings = settings or GuardSettings()
        if self.settings.supervisor is not None and supervisor_model is None:
            raise ValueError("guard supervisor: settings given but no supervisor_model")
        self.supervisor_model = supervisor_model
        self.supervisor_settings = self.settings.supervisor or SupervisorSettings()
        self.rules = RuleTier(self.settings.rules)
        self.core: SupervisorCore | None = None
        self.run_name = run_name or "guard"
        self.trace_dir = Path(trace_dir) if trace_dir is not None else None
        self.trace: Trace | None = None
        self.task = ""
        self.runs = 0
        self.counts: Counter[str] = Counter()
        self.spent: dict[str, str] = {}  # agent -> why its own token budget is spent
        self._lock = threading.RLock()
        self._sup_lock = threading.Lock()
        self.ledger = self._new_ledger()
        self.bus: Bus | None = None  # the current run's, when there is an LLM supervisor

    # -- run lifecycle -------------------------------------------------------------------
    def _new_ledger(self) -> Ledger:
        budget = Budget(
            max_tokens=self.settings.budget_tokens, max_calls=self.settings.budget_calls
        )
        return Ledger(f"{self.run_name}-{self.runs}", budget)

    def start_run(self, task: str) -> None:
        """Forget the previous run: rule tier, supervisor history, counts; a new ledger."""
        with self._lock:
            if self.trace is not None:
                self.end_run(stop_reason="superseded")
            self.runs += 1
            self.task = task
            self.rules.reset()
            self.counts = Counter()
            self.spent = {}
            self.core = SupervisorCore(self.supervisor_settings) if self.supervisor_model else None
            self.ledger = self._new_ledger()
            if self.trace_dir is not None:
                self.trace = Trace(self.trace_dir / f"{self.ledger.run}.jsonl", self.ledger.run)
                self.trace.event(
                    "run_start",
                    query=task,
                    team={"agents": []},  # the framework's agents are not known up front
                    model="",
                    supervisors=["rules", *(["supervisor"] if self.core else [])],
                )
            self.bus = self._new_bus(task) if self.supervisor_model is not None else None

    def _new_bus(self, task: str) -> Bus:
        """The bus that applies the supervisor's verdicts in this run (its books: the run's)."""
        assert self.supervisor_model is not None
        rid = self.ledger.run
        trace = self.trace or Trace(Path(os.devnull), rid)
        run = Run(rid, task, TeamSpec.placeholder(), self.supervisor_model, self.ledger, trace)
        return Bus(run, host=self, verifier=_no_verifier)

    # -- the bus's host: nothing to roll back or re-staff in another framework's loop ------
    def roll_back(self, v: Rollback) -> None:
        raise UnsupportedVerdictError(f"{v.by}: a guard cannot roll a framework's run back")

    def replace_agent(self, v: ReplaceAgent) -> None:
        raise UnsupportedVerdictError(f"{v.by}: a guard cannot replace a framework's agent")

    def replace_team(self, v: ReplaceTeam) -> None:
        raise UnsupportedVerdictError(f"{v.by}: a guard cannot replace a framework's team")

    def end_run(
        self, answer: str = "", *, stop_reason: str = "done", error: str | None = None
    ) -> None:
        """Close the run's trace with its usage (no-op without a trace)."""
        with self._lock:
            if self.trace is None:
                return
            ledger = self.ledger
            self.trace.run_end(answer, stop_reason, error, ledger.total, ledger.by_actor())
            self.trace.close()
            self.trace = None

    @property
    def subtask(self) -> str:
        return self.task[:200]

    def _ensure_run(self) -> None:
        if self.runs == 0:
            self.start_run(self.task)

    def _fired(self, firing: RuleFiring | None) -> None:
        if firing is None:
            return
        if self.trace is not None:
            self.trace.event("rule", by="guard", **asdict(firing))

    # -- tools ---------------------------------------------------------------------------
    def before_tool(self, agent: str, tool: str, args: Args) -> str | None:
        """None: let the tool run; a text: return it to the model INSTEAD of running the tool
        (the loop breaker, or a spent step budget). Counts the action."""
        with self._lock:
            self._ensure_run()
            self.counts["actions"] += 1
            step = Step(agent, self.subtask, "tool", tool=tool, args=args_text(args))
            blocked = self.rules.before_action(step)
            if blocked is None:
                return None
            self.counts["blocked"] += 1
            self._fired(blocked.firing)
            return blocked.note

    def after_tool(
        self, agent: str, tool: str, args: Args, output: str, *, error: str | None = None
    ) -> str:
        """The tool output the model should read: purified by the rules when over-long, then
        what the LLM supervisor decided where one is configured."""
        text, step = self._rule_output(agent, tool, args, output, error)
        if self.core is None:
            return text
        return run_sync(self._supervise(step, text))

    async def aafter_tool(
        self, agent: str, tool: str, args: Args, output: str, *, error: str | None = None
    ) -> str:
        """`after_tool` for async frameworks (the supervisor's model call is awaited)."""
        text, step = self._rule_output(agent, tool, args, output, error)
        return text if self.core is None else await self._supervise(step, text)

    def _rule_output(
        self, agent: str, tool: str, args: Args, output: str, error: str | None
    ) -> tuple[str, Step]:
        with self._lock:
            self._ensure_run()
            step = Step(
                agent,
                self.subtask,
                "tool",
                tool=tool,
                args=args_text(args),
                observation=output,
                error=error,
            )
            text, firing = self.rules.after_observation(step, local_task=self.task)
            if firing is not None:
                self.counts["purified"] += 1
            self._fired(firing)
            return text, replace(step, observation=text)

    async def _supervise(self, step: Step, text: str) -> str:
        """Ask the LLM supervisor about what the rules left (errors, loops, long reports)."""
        assert self.core is not None and self.supervisor_model is not None
        model = MeteredModel(
            self.supervisor_model, self.ledger, "supervisor", "supervisor", self.trace
        )
        with self._sup_lock:
            review = await self.core.review(
                step, global_task=self.task, local_task=self.task, model=model
            )
            return await self._apply(review, step, text)

    async def _apply(self, review: Review, step: Step, text: str) -> str:
        """The review's verdict (`verdict_of`, as everywhere) applied by the run's bus."""
        d = review.decision
        if review.trigger is None:
            return text
        if self.trace is not None:
            self.trace.event(
                "supervision",
                agent=step.agent,
                context=review.trigger.context,
                reason=review.trigger.reason,
                action=d.action if d else None,
                note=review.note,
            )
        v = verdict_of(review, "supervisor")
        if isinstance(v, Approve):
            return text
        self.counts[f"supervisor_{v.action}"] += 1
        assert self.bus is not None
        i = Interaction(
            kind="tool",
            agent=step.agent,
            global_task=self.task,
            local_task=self.task,
            round=0,
            step=0,
            input=step.args,
            observation=text,
            error=step.error,
            tool=step.tool,
        )
        return (await self.bus.apply(v, i)).observation

    # -- model calls ---------------------------------------------------------------------
    def model_input(self, agent: str, records: Sequence[ToolRecord]) -> list[str]:
        """The texts to show for one agent's tool outputs (oldest first): older ones masked."""
        with self._lock:
            self._ensure_run()
            seen = len(self.rules.firings)
            shown = self.rules.mask(records, agent=agent, subtask=self.subtask)
            for firing in self.rules.firings[seen:]:
                self.counts["masked"] += 1
                self._fired(firing)
            return shown

    def check_budget(self, agent: str | None = None) -> None:
        """Raise BudgetExceeded when the team (or `agent`, by its rule-tier token budget) may
        not make another model call."""
        with self._lock:
            if agent is not None and agent in self.spent:
                raise BudgetExceeded("tokens", self.spent[agent])
            self.ledger.check()

    def book(
        self,
        agent: str,
        *,
        prompt_tokens: int,
        completion_tokens: int,
        model: str = "",
        latency_s: float = 0.0,
        messages: Sequence[Mapping[str, Any]] = (),
        output: str = "",
        reported: bool = True,
    ) -> None:
        """Book one framework model call of `agent` (`reported=False`: the framework gave no
        usage); raises BudgetExceeded once the team's token budget is overspent or the agent's
        rule-tier token budget is spent (and `check_budget` keeps raising for the rest)."""
        with self._lock:
            self._ensure_run()
            usage = Usage(prompt_tokens, completion_tokens)
            self.ledger.book(agent, "agent", model, usage, latency_s)
            self.counts["unreported_usage"] += not reported
            if self.trace is not None:
                done = Completion(output, usage, latency_s, model=model, finish_reason="stop")
                self.trace.model_call(agent, "agent", model, messages, done)
            blocked = self.rules.charge(agent, self.subtask, usage.total_tokens)
            if blocked is not None:
                self._fired(blocked.firing)
                self.spent[agent] = blocked.note
                raise BudgetExceeded("tokens", blocked.note)
            cap = self.settings.budget_tokens
            if cap is not None and self.ledger.total.total_tokens > cap:
                raise BudgetExceeded(
                    "tokens", f"{self.ledger.total.total_tokens} tokens of {cap} (team)"
                )

    @property
    def stats(self) -> dict[str, Any]:
        """Rule firings, supervisor triggers/actions, tool actions, tokens and calls per agent."""
        with self._lock:
            tokens = {k: u.total_tokens for k, u in self.ledger.by_actor().items()}
            return {
                "rules": dict(self.rules.counts),
                "supervisor": self.core.stats.as_dict() if self.core else None,
                "actions": self.counts["actions"],
                "blocked": self.counts["blocked"],
                "unreported_usage": self.counts["unreported_usage"],
                "tokens": tokens,
                "calls": self.ledger.calls_by_actor(),
            }
