"""The framework-neutral guard under every framework adapter: rules, supervisor, ledger, budget.

An adapter (LangGraph middleware, OpenAI Agents SDK filter, pydantic-ai history processor)
translates its framework's hooks into five calls: `before_tool` (loop breaker, step budget),
`after_tool` (purify an over-long output; the LLM supervisor where configured),
`model_input` (mask older tool outputs), `check_budget` and `book` (each model call the
framework makes, with the tokens it reports, cached ones included), and asks
`refusals_acted` before a model call (close the tools, or stop, after refusals in a row).
The engine is the runtime plug-in's: the rule tier of `overseer.supervise.rules` and
`SupervisorCore`; each run is the runtime's (`open_run`: its id, ledger and trace, its steps
traced as interactions). No framework is imported here.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from overseer.integrations._parts import (
    CLOSED_NOTE,
    NO_MODEL,
    OnRefusals,
    RunStopped,
    StepBook,
    args_text,
    model_label,
    run_sync,
)
from overseer.models import Completion, Model, Usage
from overseer.runtime import Budget, Interaction, Ledger, Run, TeamSpec
from overseer.runtime.books import (
    BudgetExceeded,
    MeteredModel,
    Trace,
    interaction_fields,
    open_run,
)
from overseer.runtime.bus import Bus, UnsupportedVerdictError
from overseer.runtime.verdicts import Approve, Replace, ReplaceAgent, ReplaceTeam, Rollback
from overseer.supervise import Review, Step, SupervisorCore, SupervisorSettings, verdict_of
from overseer.supervise.rules import RuleFiring, RuleSettings, RuleTier, ToolRecord

__all__ = [
    "CLOSED_NOTE",
    "NO_MODEL",
    "BudgetExceeded",
    "Guard",
    "GuardSettings",
    "OnRefusals",
    "RunStopped",
    "ToolRecord",
    "args_text",
    "model_label",
    "run_sync",
]

Args = str | Mapping[str, Any]  # a tool call's arguments: JSON text or a mapping


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
    #: refused tool calls of one agent in a row after which `on_refusals` acts (0: never)
    answer_after_refusals: int = 2
    on_refusals: OnRefusals = "answer"

    def __post_init__(self) -> None:
        for name in ("budget_tokens", "budget_calls"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"guard {name}: expected an integer >= 1 or None, got {value!r}")
        n = self.answer_after_refusals
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"guard answer_after_refusals: expected an integer >= 0, got {n!r}")
        if self.on_refusals not in ("answer", "stop"):
            raise ValueError(
                f"guard on_refusals: expected 'answer' or 'stop', got {self.on_refusals!r}"
            )


class Guard:
    """overseer's engine for one agent team inside another framework (one run at a time).

    Thread-safe: frameworks run tool calls in parallel threads. Each run is opened by the
    runtime's `open_run` (a unique id across processes; its ledger and trace: the trace file
    in `trace_dir`, else nowhere but the OpenTelemetry sinks). `ledger` is the current run's,
    `stats` sums up what acted. The LLM supervisor's verdicts are applied by a bus of the run
    (`bus`), with the guard as its host: a guard honours guide, replace and verify (a
    framework's own loop cannot be rolled back or re-staffed from here). Each tool call is
    traced as an `interaction` (and an agent's last model call as its answer), so a run's
    spans have the runtime's tree: `invoke_agent` steps holding `chat` and `execute_tool`.
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
        self.run_name = run_name  # the agent a single-agent adapter guards (trace `team`)
        self.trace_dir = Path(trace_dir) if trace_dir is not None else None
        self.run: Run | None = None
        self.trace: Trace | None = None
        self.task = ""
        self.runs = 0
        self.counts: Counter[str] = Counter()
        self.spent: dict[str, str] = {}  # agent -> why its own token budget is spent
        self.stop_reason: str | None = None  # set when the guard ended the run itself
        self._lock = threading.RLock()
        self._sup_lock = threading.Lock()
        self._steps = StepBook()
        self.ledger = Ledger("", self._budget())
        self.bus: Bus | None = None  # the current run's, when there is an LLM supervisor

    # -- run lifecycle -------------------------------------------------------------------
    def _budget(self) -> Budget:
        return Budget(max_tokens=self.settings.budget_tokens, max_calls=self.settings.budget_calls)

    def start_run(self, task: str, *, model: str = "") -> None:
        """Forget the previous run (rule tier, supervisor history, counts) and open a new one
        with `open_run`: a new id, ledger and trace. `model`: the agents' model, when known."""
        with self._lock:
            if self.trace is not None:
                self.end_run(stop_reason="superseded")
            self.runs += 1
            self.task = task
            self.rules.reset()
            self.counts = Counter()
            self.spent = {}
            self.stop_reason = None
            self._steps = StepBook()
            self.core = SupervisorCore(self.supervisor_settings) if self.supervisor_model else None
            team = TeamSpec.placeholder()
            run = open_run(
                task,
                team,
                self.supervisor_model or NO_MODEL,
                trace_dir=self.trace_dir,
                budget=self._budget(),
            )
            self.run, self.ledger, self.trace = run, run.ledger, run.trace
            agents = [{"name": self.run_name}] if self.run_name else []
            supervisors = ["rules", *(["supervisor"] if self.core else [])]
            run.trace.event(
                "run_start",
                query=task,
                team={"agents": agents},  # a framework's agents are not known up front
                model=model_label(model),
                supervisors=supervisors,
            )
            self.bus = Bus(run, host=self, verifier=_no_verifier) if self.core else None

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
        """Close the run: each agent's last model call not followed by a tool call is traced
        as its answer, then `run_end` with the usage (the guard's own stop reason, when it
        ended the run, replaces `done`). No-op when no run is open."""
        with self._lock:
            if self.trace is None:
                return
            for agent in self._steps.open_agents():
                out = self._steps.last_output.get(agent, "")
                self._step_event(agent, "message", None, out, out, None)
            if stop_reason == "done" and self.stop_reason is not None:
                stop_reason = self.stop_reason
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

    def _step_event(
        self, agent: str, kind: str, tool: str | None, args: str, shown: str, error: str | None
    ) -> int:
        """Trace one step of `agent` as the runtime does (an `interaction`): the usage of the
        model calls since its last step, its tool call (or answer) and what it read. Its
        step number (-1: the run has ended, a shared guard's late call)."""
        if self.trace is None:
            return -1
        i = Interaction(
            kind=kind,  # type: ignore[arg-type]
            agent=agent,
            global_task=self.task,
            local_task=self.task,
            round=0,
            step=self._steps.next(agent),
            input=args,
            observation=shown,
            error=error,
            tool=tool,
            usage=self._steps.take_usage(agent),
        )
        self.trace.event("interaction", **interaction_fields(i))
        return i.step

    # -- tools ---------------------------------------------------------------------------
    def before_tool(self, agent: str, tool: str, args: Args) -> str | None:
        """None: let the tool run; a text: return it to the model INSTEAD of running the tool
        (the loop breaker, or a spent step budget). Counts the action, and the refusals in a
        row that close the agent's tools (`tools_closed`) or end the run."""
        with self._lock:
            self._ensure_run()
            self.counts["actions"] += 1
            text = args_text(args)
            blocked = self.rules.before_action(
                Step(agent, self.subtask, "tool", tool=tool, args=text)
            )
            if blocked is None:
                self._steps.refused[agent] = 0
                return None
            self.counts["blocked"] += 1
            self._steps.refused[agent] += 1
            self._fired(blocked.firing)
            step = self._step_event(agent, "tool", tool, text, blocked.note, None)
            if self.trace is not None:  # the refusal as the runtime's bus records it
                f = blocked.firing
                v = Replace(blocked.note, f.rule, by="rules", reason=f.detail)
                self.trace.event("verdict", agent=agent, round=0, step=step, **v.trace_fields())
            return blocked.note

    def refusals_acted(self, agent: str) -> OnRefusals | None:
        """What `agent`'s refused calls in a row ask for before its next model call: "answer"
        (call the model without tools, `CLOSED_NOTE` after the last output), "stop" (end the
        run: `check_budget` raises RunStopped), or None (go on as usual)."""
        n = self.settings.answer_after_refusals
        with self._lock:
            if n == 0 or self._steps.refused[agent] < n:
                return None
            return self.settings.on_refusals

    def after_tool(
        self, agent: str, tool: str, args: Args, output: str, *, error: str | None = None
    ) -> str:
        """The tool output the model should read: purified by the rules when over-long, then
        what the LLM supervisor decided where one is configured."""
        text, step = self._rule_output(agent, tool, args, output, error)
        if self.core is not None:
            text = run_sync(self._supervise(step, text))
        return self._tool_done(step, text)

    async def aafter_tool(
        self, agent: str, tool: str, args: Args, output: str, *, error: str | None = None
    ) -> str:
        """`after_tool` for async frameworks (the supervisor's model call is awaited)."""
        text, step = self._rule_output(agent, tool, args, output, error)
        if self.core is not None:
            text = await self._supervise(step, text)
        return self._tool_done(step, text)

    def _tool_done(self, step: Step, shown: str) -> str:
        with self._lock:
            self._step_event(step.agent, "tool", step.tool, step.args, shown, step.error)
            return shown

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
        not make another model call, and RunStopped when `agent`'s refusals in a row end the
        run (`on_refusals="stop"`)."""
        with self._lock:
            if agent is not None and agent in self.spent:
                raise BudgetExceeded("tokens", self.spent[agent])
            self.ledger.check()
            why = self.stop_for_refusals(agent) if agent is not None else None
            if why is not None:
                raise RunStopped("refusals", why)

    def stop_for_refusals(self, agent: str) -> str | None:
        """Why the run ends now (`on_refusals="stop"` and `agent`'s refusals in a row reached
        the limit; the run's stop reason becomes `refusals`), else None."""
        with self._lock:
            if self.refusals_acted(agent) != "stop":
                return None
            self.stop_reason = "refusals"
            return f"{agent}: {self._steps.refused[agent]} tool calls in a row were refused"

    def book(
        self,
        agent: str,
        *,
        prompt_tokens: int,
        completion_tokens: int,
        cached_tokens: int = 0,
        model: str = "",
        latency_s: float = 0.0,
        messages: Sequence[Mapping[str, Any]] = (),
        output: str = "",
        reported: bool = True,
    ) -> None:
        """Book one framework model call of `agent` (`cached_tokens`: its prompt tokens the
        server read from its prefix cache; `reported=False`: the framework gave no usage);
        raises BudgetExceeded once the team's token budget is overspent or the agent's
        rule-tier token budget is spent (and `check_budget` keeps raising for the rest)."""
        with self._lock:
            self._ensure_run()
            usage = Usage(prompt_tokens, completion_tokens, min(cached_tokens, prompt_tokens))
            model = model_label(model)
            self.ledger.book(agent, "agent", model, usage, latency_s)
            self.counts["unreported_usage"] += not reported
            self._steps.booked(agent, usage, output)
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
