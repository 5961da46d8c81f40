"""SupervisorAgent for smolagents: a thin adapter over the framework guard.

Modes as in `overseer.supervise.modes`: `llm` (the filter, then the supervisor model), `rules`
(the rule tier alone, no model), `rules+llm`. Each top-level run of an agent is a run of the
guard: its own id, ledger, trace (`trace_dir`), refusal counts and `log`, judged by the bus as
a team's steps are. One supervisor may serve several agents running at once (threads, tasks):
one run each; a managed agent's run inside its manager's is part of the manager's. `stats`,
`log`, `usage` and `run` are the caller's run's (the one started last in this thread or task,
else the last one). A second run of an agent instance while one is under way is refused
(`ConcurrentRunError`): one smolagents agent holds one run's memory.

Hooks (`_smol_hooks`): every model call is booked as the server reported it (the final
answer's, the one at `max_steps` and cached prompt tokens included), at the agent's next step
or its run's end; loop breaker and budgets refuse a call before its tool runs; purification and
the LLM's decision apply in the step callback (before smolagents builds the next prompt from
memory); masking on older steps. The supervisor's tokens go into the step's `token_usage`.

    sup = OverseerSupervisor(mode="rules")  # or OverseerSupervisor(model, mode="rules+llm")
    sup.attach(manager)  # the manager and, recursively, its managed agents
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from contextvars import ContextVar, Token
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from overseer.supervise.purify import Embed

try:
    from smolagents.memory import ActionStep
    from smolagents.monitoring import TokenUsage
    from smolagents.utils import AgentMaxStepsError
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "overseer.integrations.smolagents needs smolagents: "
        "pip install 'overseer-agents[smolagents]'"
    ) from exc

from overseer.integrations._adapter import stop_reason_of
from overseer.integrations._guard import BudgetExceeded, Guard, GuardRun, GuardSettings
from overseer.integrations._parts import OnRefusals
from overseer.integrations._smol_hooks import hooked, install
from overseer.integrations._smol_steps import (
    book_tokens,
    mask_memory,
    step_from_smolagents,
    unexecuted,
)
from overseer.models import Model, TokenLogprob, Usage
from overseer.runtime import Run, Supervisor
from overseer.runtime.steps import Verifier
from overseer.supervise import Step, SupervisorSettings, SupervisorStats, preset
from overseer.supervise.modes import mode_of, mode_settings
from overseer.supervise.rules import RuleSettings, ToolRecord

__all__ = [
    "ConcurrentRunError",
    "OverseerSupervisor",
    "QuestionVerifier",
    "SmolagentsSupervisionLog",
    "step_from_smolagents",
]

log = logging.getLogger(__name__)

#: question -> answer; runs the check a `run_verification` decision asks for.
QuestionVerifier = Callable[[str], str]

#: what an agent reads when its last replies were the same and none could be run
UNPARSED_NOTE = (
    "[overseer] Your last replies were the same and could not be run as a tool call. Write a "
    "different reply: one valid tool call."
)


@dataclass
class SmolagentsSupervisionLog:
    """One thing the supervisor did at a step: a flagged step (its context, decision) or a
    rule firing (context "rule", action = the rule's name)."""

    agent: str
    step: int
    context: str
    reason: str
    action: str | None
    note: str = ""


class ConcurrentRunError(RuntimeError):
    """A second run of an agent began while its first was under way (one memory, one run)."""


def _on_the_bus(verifier: QuestionVerifier | None) -> Verifier | None:
    """A question -> answer verifier as the bus calls one (None: verification not offered)."""
    if verifier is None:
        return None

    async def verify(task: str, run: Run) -> str:
        return verifier(task)

    return verify


def _mode_of(
    mode: str,
    model: Model | None,
    settings: SupervisorSettings | None,
    rules: RuleSettings | None,
    filter_preset: str | None,
    verifier: QuestionVerifier | None,
) -> SupervisorSettings | None:
    """The LLM tier's settings for `mode` (None: the mode has none); it needs a model."""
    base = settings or SupervisorSettings()
    if filter_preset:
        base = replace(base, filter=preset(filter_preset))
    out = mode_settings(mode, base=base, rules=rules, verifier=verifier is not None)
    if out is not None and model is None:
        raise ValueError(
            f"OverseerSupervisor mode {mode!r}: expected a supervisor model "
            "(mode 'rules' runs without one)"
        )
    return out


@dataclass(eq=False)
class _Invocation:
    """One top-level run of an agent (its managed agents' runs inside it): the guard run and
    the adapter's books of it. `late`: begun before its agent was hooked (registered by
    `step_callbacks=[sup]`), so no hooked `run` ends it."""

    run: GuardRun
    root: Any
    late: bool = False
    depth: int = 0  # runs of this invocation in progress (managed agents' nest)
    escalations: int = 0  # refusals in a row acted on (answer or stop)
    log: list[SmolagentsSupervisionLog] = field(default_factory=list)
    events: list[Mapping[str, Any]] = field(default_factory=list)  # rule firings
    logged: int = 0  # rule firings already in `log`
    done: set[int] = field(default_factory=set)  # ids of steps reviewed
    blocked: set[tuple[int, int]] = field(default_factory=set)  # (agent id, step) refused
    originals: dict[int, ToolRecord] = field(default_factory=dict)  # step id -> unmasked
    max_steps: dict[int, int] = field(default_factory=dict)  # agent id -> its step limit
    tokens: dict[int, Token[Any]] = field(default_factory=dict)  # nested agent id -> context
    calls: dict[int, list[tuple[Any, ...]]] = field(default_factory=dict)  # not yet booked
    told: set[str] = field(default_factory=set)  # agents told their budget is spent
    lock: Any = field(default_factory=threading.RLock)

    def event(self, record: Mapping[str, Any]) -> None:  # a trace sink of the rule firings
        if record.get("event") == "rule":
            self.events.append(record)

    def close(self) -> None:
        return None


def _name(agent: Any) -> str:
    return str(getattr(agent, "name", None) or "agent")


class OverseerSupervisor:
    """A smolagents step callback running the SupervisorAgent (rules and/or LLM) on each step.

    `model`: the supervisor's model (not needed in mode `rules`); `settings`: the filter,
    caps and window (the mode decides `rules` and `llm`); `rules`: the rule tier's switches;
    `filter_preset`: the filter's thresholds by name (e.g. "gaia"); `verifier`: question ->
    answer, else `run_verification` is never offered; `embed`: texts -> vectors for
    extractive purification (None: TF-IDF); `trace_dir`: each run's JSONL trace; `plugins`:
    more bus plug-ins after overseer's own (a user's rule). Register with `attach(agent)`.

    After `answer_after_refusals` refused steps of one agent in a row (a refused repeat, or
    the same unparsable reply again), `on_refusals="answer"` moves the agent to smolagents'
    own final-answer call (one model call without tools, as at its step limit), and "stop"
    interrupts the run (smolagents raises `AgentError("Agent interrupted.")`); 0: never.
    """

    def __init__(
        self,
        model: Model | None = None,
        settings: SupervisorSettings | None = None,
        verifier: QuestionVerifier | None = None,
        *,
        mode: str = "llm",
        rules: RuleSettings | None = None,
        filter_preset: str | None = None,
        embed: Embed | None = None,
        answer_after_refusals: int = 2,
        on_refusals: OnRefusals = "answer",
        trace_dir: str | Path | None = None,
        plugins: Sequence[Supervisor] = (),
    ) -> None:
        if answer_after_refusals < 0 or on_refusals not in ("answer", "stop"):
            raise ValueError(
                "OverseerSupervisor: expected answer_after_refusals >= 0 and on_refusals "
                f"'answer' or 'stop', got {answer_after_refusals!r} and {on_refusals!r}"
            )
        #: the LLM tier's settings (None: mode `rules`, no LLM tier)
        self.settings = _mode_of(mode, model, settings, rules, filter_preset, verifier)
        self.mode = mode
        self.model = model
        self.verifier = verifier
        with_rules = mode_of(mode).rule_tier
        self.guard = Guard(
            GuardSettings(
                rules=rules or RuleSettings(),
                answer_after_refusals=answer_after_refusals,
                on_refusals=on_refusals,
                builtin=with_rules,
                plugins=tuple(plugins),
            ),
            supervisor_model=model if self.settings is not None else None,
            trace_dir=trace_dir,
            plugin_settings=self.settings,
            verifier=_on_the_bus(verifier),
            embed=embed,
        )
        self.runs = 0  # top-level runs started
        self.last: _Invocation | None = None  # the run started last
        self._lock = threading.RLock()
        self._busy: dict[int, _Invocation] = {}  # agent id -> the invocation it runs in
        self._here: ContextVar[tuple[_Invocation, Any] | None] = ContextVar(
            f"overseer_smolagents_{id(self)}", default=None
        )

    # -- runs ----------------------------------------------------------------------------
    def _open(self, task: str, root: Any, *, late: bool = False) -> _Invocation:
        inv = _Invocation(self.guard.open(task), root, late=late)
        inv.run.trace.add_sink(inv)
        self.last = inv
        return inv

    def _current(self) -> _Invocation:
        """The caller's run: the one started last in this context, else the last one (opened
        here when there is none yet)."""
        here = self._here.get()
        if here is not None:
            return here[0]
        with self._lock:
            return self.last or self._open("", None)

    def _of(self, agent: Any) -> _Invocation:
        """The run `agent` is running in. An agent registered by `step_callbacks=[sup]` is
        hooked at its first step: its run began unhooked, so no hooked `run` ends it (`late`)."""
        with self._lock:
            inv = self._busy.get(id(agent)) if agent is not None else None
            if inv is not None or agent is None or hooked(agent, self):
                return inv or self._current()
            self._adopt(agent)
            self.run_started(agent, None, str(getattr(agent, "task", "") or ""))
            inv = self._busy[id(agent)]
            inv.depth -= 1
            inv.late = inv.root is agent
            if not inv.late:
                del self._busy[id(agent)]
            return inv

    def _supersede(self, here: tuple[_Invocation, Any] | None) -> None:
        """End a run that no hooked `run` will end (`late`), as a new one starts."""
        if here is not None and here[0].late and not here[0].run.ended:
            self._busy.pop(id(here[0].root), None)
            self.guard.end_run(stop_reason="superseded", run=here[0].run)

    def run_started(self, agent: Any, max_steps: int | None, task: str = "") -> None:
        """A hooked agent's `run` began: inside a run in progress in this context it nests
        (a managed agent), else a new run opens; an agent already running is refused."""
        with self._lock:
            busy = self._busy.get(id(agent))
            if busy is not None and not (busy.late and busy.root is agent):
                raise ConcurrentRunError(
                    f"OverseerSupervisor: agent {_name(agent)!r} is already running (one "
                    "smolagents agent holds one run's memory); run another instance of it"
                )
            here = self._here.get()
            inv = here[0] if here is not None else None
            if inv is None or inv.depth == 0 or inv.run.ended:  # a CodeAgent's code: a thread
                inv = self._busy.get(id(getattr(agent, "_overseer_manager", None)))
            if inv is not None and inv.depth > 0 and not inv.run.ended:
                inv.tokens[id(agent)] = self._here.set((inv, agent))
            else:
                self._supersede(here if busy is None else (busy, agent))
                self.runs += 1
                inv = self._open(task or str(getattr(agent, "task", "") or ""), agent)
                self._here.set((inv, agent))  # kept after the run: its books stay readable
            inv.depth += 1
            self._busy[id(agent)] = inv
            inv.max_steps[id(agent)] = int(max_steps or getattr(agent, "max_steps", 0) or 0)

    def run_ended(
        self, agent: Any, error: BaseException | None = None, answer: object = None
    ) -> None:
        """A hooked agent's `run` ended; the top-level one closes its guard run (`run_end`
        with the final answer, or the error's stop reason)."""
        with self._lock:
            inv = self._busy.pop(id(agent), None)
            if inv is None:
                return
            inv.depth -= 1
            token = inv.tokens.pop(id(agent), None)
            if token is not None:
                with suppress(ValueError):  # reset from another context: nothing to undo
                    self._here.reset(token)
            with inv.lock:
                self._charge(inv, agent)  # its last call: an answer no step callback booked
            if inv.depth > 0:
                return
        why = "done" if error is None else stop_reason_of(error)
        text = "" if answer is None else str(getattr(answer, "output", answer))
        err = None if error is None else str(error)
        self.guard.end_run(text, stop_reason=why, error=err, run=inv.run)

    # -- registration --------------------------------------------------------------------
    def attach(self, agent: Any) -> Any:
        """Register on `agent` and, recursively, its managed agents (each once), and hook their
        model, tool calls and runs."""
        with self._lock:
            self._adopt(agent)
        return agent

    def _adopt(self, agent: Any) -> None:
        callbacks = getattr(agent.step_callbacks, "_callbacks", {}).get(ActionStep, [])
        if not any(cb is self for cb in callbacks):
            agent.step_callbacks.register(ActionStep, self)
        install(agent, self)
        for sub in (getattr(agent, "managed_agents", None) or {}).values():
            sub._overseer_manager = agent  # for a run a CodeAgent's code thread starts
            self._adopt(sub)

    # -- model calls and tools -------------------------------------------------------------
    def metered(
        self,
        used: TokenUsage | None,
        cached: int,
        seconds: float,
        model: str,
        text: str,
        logprobs: tuple[TokenLogprob, ...] = (),
    ) -> None:
        """One model call of the agent running in this context, as it was reported (with its
        token logprobs when the model asked for them); booked at the agent's next step (after
        its tools ran, as a step's budget is counted) or run end."""
        here = self._here.get()
        if here is None or here[0].run.ended:
            return  # a call outside any supervised run
        call = (used, cached, seconds, model, text, logprobs)
        with here[0].lock:
            here[0].calls.setdefault(id(here[1]), []).append(call)

    def gate(self, agent: Any, tool: str, args: str, code: str) -> str | None:
        """The rule tier's refusal of a call (a repeat, a spent budget), before it runs."""
        if not self.guard.settings.rule_tier:
            return None
        inv = self._of(agent)
        with inv.lock:
            number = int(getattr(agent, "step_number", 0))
            note = inv.run.before_tool(_name(agent), tool, args or code)
            self._log_firings(inv, number)
            if note is not None:
                inv.blocked.add((id(agent), number))
            return note

    def reask(self, agent: Any, answer: str) -> str | None:
        """The turn asking the agent again when its final answer only repeats overseer's
        words (once per run and agent); None: the answer stands."""
        if not self.guard.settings.rule_tier:
            return None
        return self._of(agent).run.reask(_name(agent), answer)

    def settle(self, agent: Any, answer: str) -> str | None:
        """The final answer that stands instead of `answer` (an unsupported value after
        overseer closed the agent's tools, `GuardRun.settle`); None: it stands."""
        if not self.guard.settings.rule_tier:
            return None
        return self._of(agent).run.settle(_name(agent), answer)

    # -- after a step --------------------------------------------------------------------
    def __call__(self, memory_step: ActionStep, agent: Any = None) -> None:
        """The callback smolagents calls after each step (other memory steps are ignored).

        The final answer and the step smolagents adds when `max_steps` is reached are not
        reviewed: nothing reads a decision about them (their model calls are booked).
        """
        if not isinstance(memory_step, ActionStep):
            return
        inv = self._of(agent)
        with inv.lock:
            if id(memory_step) in inv.done:
                return
            inv.done.add(id(memory_step))
            if memory_step.is_final_answer or isinstance(memory_step.error, AgentMaxStepsError):
                self._charge(inv, agent)
            else:
                self._step(inv, memory_step, agent)

    def _step(self, inv: _Invocation, memory_step: ActionStep, agent: Any) -> None:
        name, n = _name(agent), memory_step.step_number
        local = str(getattr(agent, "task", "") or "")
        step = step_from_smolagents(memory_step, name, local)
        self._charge(inv, agent, memory_step)
        refused = (id(agent), n) in inv.blocked
        if not refused and unexecuted(memory_step):
            refused = self._count_unexecuted(inv, memory_step, step)
        if not refused:  # a refused step is on the bus already (its refusal)
            self._judge(inv, memory_step, step, agent)
        self._tell_spent(inv, name, memory_step)  # after the judge, which may replace the text
        if self.guard.settings.rule_tier and agent is not None:
            mask_memory(inv.run.model_input, agent, memory_step, name, inv.originals)
        self._log_firings(inv, n)
        if agent is not None and refused:
            self._escalate(inv, agent, n)

    def _judge(self, inv: _Invocation, memory_step: ActionStep, step: Step, agent: Any) -> None:
        """The step through the run's bus: what the agent reads next is what the bus leaves."""
        run = inv.run
        spent = run.ledger.by_kind().get("supervisor", Usage())
        shown = run.after_tool(
            step.agent,
            step.tool,
            step.args or step.code,
            step.observation,
            error=step.error,
            thought=step.thought,
            local_task=step.subtask,
        )
        if shown != step.observation:
            memory_step.observations = shown
        used = run.ledger.by_kind().get("supervisor", Usage())
        used = Usage(used.prompt_tokens - spent.prompt_tokens,
                     used.completion_tokens - spent.completion_tokens)  # fmt: skip
        book_tokens(memory_step, used, agent, self)
        plugin = self.guard.llm  # the SupervisorAgent: its public review of the step
        review = plugin.last_review(run.run) if plugin is not None else None
        if review is not None and review.trigger is not None:
            d, t, n = review.decision, review.trigger, memory_step.step_number
            note = review.note or (d.fallback if d else "")
            action = d.action if d else None
            inv.log.append(
                SmolagentsSupervisionLog(step.agent, n, t.context, t.reason, action, note)
            )

    def _escalate(self, inv: _Invocation, agent: Any, number: int) -> None:
        """At `answer_after_refusals` refused steps of the agent in a row (the run's one turn
        policy), end its tool use: its step limit is reached now (smolagents then asks the
        model for the final answer, without tools), or the run is interrupted ("stop")."""
        name = _name(agent)
        act = inv.run.refusals_acted(name)
        if act is None:
            return
        inv.escalations += 1
        why = f"{inv.run.bus.refused[name]} refused steps in a row: {act}"
        inv.log.append(SmolagentsSupervisionLog(name, number, "rule", why, "refusals"))
        log.info("overseer %s (%s)", why, name)
        if act == "stop":
            agent.interrupt()
        else:
            limit = inv.max_steps.get(id(agent)) or int(getattr(agent, "max_steps", 0) or 0)
            agent.step_number = max(agent.step_number, limit)

    def _charge(self, inv: _Invocation, agent: Any, step: ActionStep | None = None) -> None:
        """Book the agent's model calls since its last step (`step`'s usage when none was
        metered: its model was hooked after the call)."""
        name = _name(agent)
        calls = inv.calls.pop(id(agent), [])
        if not calls and step is not None:
            calls = [(step.token_usage, 0, 0.0, "", "", ())]
        for used, cached, seconds, model, text, logprobs in calls:
            with suppress(BudgetExceeded):
                inv.run.book(
                    name,
                    prompt_tokens=used.input_tokens if used else 0,
                    completion_tokens=used.output_tokens if used else 0,
                    cached_tokens=cached,
                    model=model,
                    latency_s=seconds,
                    output=text,
                    reported=used is not None,
                    logprobs=logprobs,
                )

    @staticmethod
    def _tell_spent(inv: _Invocation, name: str, step: ActionStep) -> None:
        """Tell the agent, once, at `step` that its rule-tier token budget is spent."""
        if name in inv.run.spent and name not in inv.told:
            inv.told.add(name)
            step.observations = f"{step.observations or ''}\n\n{inv.run.spent[name]}".strip()

    def _count_unexecuted(self, inv: _Invocation, memory_step: ActionStep, step: Step) -> bool:
        """A reply smolagents could not parse never reached a tool: the loop breaker counts it
        here, and at the repeat it refuses it tells the agent to write something else (True:
        refused)."""
        if not self.guard.settings.rule_tier:
            return False
        blocked = inv.run.before_tool(step.agent, None, step.code or step.args or "")
        if blocked is not None:  # refused and counted on the bus; this note says why here
            obs = memory_step.observations or ""
            memory_step.observations = f"{obs}\n\n{UNPARSED_NOTE}".strip()
            inv.run.told(step.agent, UNPARSED_NOTE)  # an answer copying it is asked again
        return blocked is not None

    def _log_firings(self, inv: _Invocation, step_number: int) -> None:
        """The plug-ins' rule events written since the last step, into the run's `log`."""
        fired = inv.events[inv.logged :]
        for f in fired:
            agent, rule, detail = str(f.get("agent")), str(f.get("rule")), str(f.get("detail"))
            inv.log.append(SmolagentsSupervisionLog(agent, step_number, "rule", detail, rule))
            log.info("overseer rule %s (%s): %s", rule, agent, detail)
        inv.logged += len(fired)

    # -- the caller's run's books ------------------------------------------------------------
    run = property(lambda self: self._current().run, doc="The caller's run's guard run.")
    log = property(lambda self: self._current().log, doc="Its flagged steps, rule firings.")

    @property
    def usage(self) -> Usage:
        """The supervisor's own tokens in the caller's run."""
        return self.run.ledger.by_kind().get("supervisor", Usage())

    escalations = property(lambda self: self._current().escalations)
    _depth = property(lambda self: self._current().depth)  # its runs in progress

    @property
    def stats(self) -> dict[str, object]:
        """The caller's run's counts: steps seen, triggers by context, decisions by action,
        skips, fallbacks, rule firings by rule, refused rewrites; the supervisor's tokens."""
        inv = self._current()
        plugin = self.guard.llm
        got = inv.run.bus.stats().get(plugin.name, {}) if plugin is not None else {}
        out: dict[str, object] = dict(got) or SupervisorStats().as_dict()
        out["rules"] = inv.run.stats["rules"]  # every rule plug-in's firings, by rule
        out["supervisor_tokens"] = self.usage.total_tokens
        out["mode"] = self.mode
        out["escalations"] = inv.escalations
        out["run"] = inv.run.id
        out["reasked"] = inv.run.counts["reasked"]  # answers copying a note, asked again
        return out
