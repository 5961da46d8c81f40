"""SupervisorAgent for smolagents: a thin adapter over the framework guard.

Modes as in `overseer.supervise.modes`: `llm` (the seed: the LLM-free filter, then the
supervisor model), `rules` (the rule tier alone, no model needed), `rules+llm` (rules first,
the model only on what they cannot settle). Each top-level run of the agent is a run of the
guard (`overseer.integrations.guard`): its own id, ledger, trace (`trace_dir`) and
OpenTelemetry spans, its steps judged by the runtime's bus with the SupervisorAgent plug-in,
as for a team. Where smolagents lets it act: the loop breaker and the step budget before a
tool runs (wrapped `execute_tool_call` / `python_executor`), purification and the
supervisor's decision in the step callback (smolagents calls it before the next prompt is
built from memory, so editing `step.observations` changes what the agent reads next),
masking on the agent's older steps. The supervisor's tokens are added to the step's
`token_usage` and, once, to smolagents' monitor. A smolagents agent holds one run's memory,
so a second run of the same agent started while one is under way is refused
(`ConcurrentRunError`), never merged: attach one supervisor per agent instance.

Noisy observations in a row (issue 43, row 12): each over-long output is purified, until a
tool's last `progress_limit` outputs are the same with changing arguments; then the loop breaker's
progress-free rule refuses the next call of that tool (another call makes no progress), and
after `answer_after_refusals` refusals the agent is sent to answer. So 30 identical noisy
pages give `progress_limit` (2) purifications, 2 refusals and an answer, not 30 purifications:
the loop breaker decides, by design (`RuleSettings(loop_breaker=False)` purifies each one).

    sup = OverseerSupervisor(mode="rules")  # or OverseerSupervisor(model, mode="rules+llm")
    sup.attach(manager)  # the manager and, recursively, its managed agents
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

try:
    from smolagents.memory import ActionStep
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
from overseer.models import Model, Usage
from overseer.runtime import Run, Supervisor
from overseer.runtime.steps import Verifier
from overseer.supervise import Step, SupervisorSettings, SupervisorStats, preset
from overseer.supervise.modes import mode_settings
from overseer.supervise.rules import RuleSettings

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


def _on_the_bus(verifier: QuestionVerifier | None) -> Verifier | None:
    """A question -> answer verifier as the bus calls one (None: verification not offered)."""
    if verifier is None:
        return None

    async def verify(task: str, run: Run) -> str:
        return verifier(task)

    return verify


class ConcurrentRunError(RuntimeError):
    """A second run of an agent began while its first was under way (one memory, one run)."""


def _mode_of(
    mode: str,
    model: Model | None,
    settings: SupervisorSettings | None,
    rules: RuleSettings | None,
    filter_preset: str | None,
    verifier: QuestionVerifier | None,
) -> SupervisorSettings:
    """The SupervisorAgent's settings for `mode`; a mode with the LLM tier needs a model."""
    base = settings or SupervisorSettings()
    if filter_preset:
        base = replace(base, filter=preset(filter_preset))
    out = mode_settings(mode, base=base, rules=rules, verifier=verifier is not None)
    if out.llm and model is None:
        raise ValueError(
            f"OverseerSupervisor mode {mode!r}: expected a supervisor model "
            "(mode 'rules' runs without one)"
        )
    return out


class _Events:
    """A trace sink keeping the events of one kind a run writes (the plug-ins' rule firings,
    which the adapter's `log` reports)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.events: list[Mapping[str, Any]] = []

    def event(self, record: Mapping[str, Any]) -> None:
        if record.get("event") == self.kind:
            self.events.append(record)

    def close(self) -> None:
        return None


class OverseerSupervisor:
    """A smolagents step callback running the SupervisorAgent (rules and/or LLM) on each step.

    `model`: the supervisor's model (not needed in mode `rules`); `settings`: the filter,
    caps and window (the mode decides `rules` and `llm`); `rules`: the rule tier's switches;
    `filter_preset`: the filter's thresholds by name (e.g. "gaia"); `verifier`: question ->
    answer, else `run_verification` is never offered; `embed`: texts -> vectors for
    extractive purification (None: TF-IDF); `trace_dir`: each run's JSONL trace. Register
    with `attach(agent)`.

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
        embed: Callable[[list[str]], np.ndarray] | None = None,
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
        self.answer_after_refusals = answer_after_refusals
        self.on_refusals: OnRefusals = on_refusals
        self.settings = _mode_of(mode, model, settings, rules, filter_preset, verifier)
        self.mode = mode
        self.model = model
        self.verifier = verifier
        self.guard = Guard(
            GuardSettings(
                rules=self.settings.rules or RuleSettings(),
                answer_after_refusals=0,
                plugins=tuple(plugins),
            ),
            supervisor_model=model if self.settings.llm else None,
            trace_dir=trace_dir,
            plugin_settings=self.settings,
            verifier=_on_the_bus(verifier),
            embed=embed,
        )
        self.runs = 0
        self._lock = threading.RLock()
        self._depth = 0  # nested runs in progress (a managed agent's run inside its manager's)
        self._root: Any = None
        self._run: GuardRun | None = None
        self.reset()

    # -- per-run state -------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the last run (its guard run is closed): log, usage and step books."""
        with self._lock:
            if self._run is not None and not self._run.ended:
                self._run.end(stop_reason="superseded")
            self._run = None
            self.usage = Usage()
            self.log: list[SmolagentsSupervisionLog] = []
            self._done: set[int] = set()  # ids of steps reviewed (a callback registered twice)
            self._blocked: set[tuple[int, int]] = set()  # (agent id, step) with a refused call
            self._originals: dict[int, Any] = {}  # step id -> its unmasked record
            self._logged = 0  # rule firings already in `log`
            self._firings = _Events("rule")
            self._max_steps: dict[int, int] = {}  # agent id -> its run's step limit
            self._steps_seen: dict[int, int] = {}  # agent id -> step number of its last call
            self.escalations = 0  # refusals in a row acted on (answer or stop)

    def _open(self, task: str) -> GuardRun:
        """A new guard run for `task`, its rule events kept for `log`."""
        self._run = run = self.guard.open(task)
        self._firings, self._logged = _Events("rule"), 0
        run.trace.add_sink(self._firings)
        return run

    @property
    def run(self) -> GuardRun:
        """The guard run of the current top-level run (opened at its first use)."""
        with self._lock:
            run = self._run
            return run if run is not None else self._open(self._global_task(self._root))

    def run_started(self, agent: Any, max_steps: int | None, task: str = "") -> None:
        """A hooked agent's `run` began: a new top-level run opens a new guard run; the same
        agent started again while its run is under way is refused."""
        with self._lock:
            if self._depth and agent is self._root:
                raise ConcurrentRunError(
                    f"OverseerSupervisor: agent {getattr(agent, 'name', None) or 'agent'!r} "
                    "is already running under this supervisor (one smolagents agent holds one "
                    "run's memory); attach a supervisor to each agent instance that runs at once"
                )
            if self._depth == 0:
                self.reset()
                self.runs += 1
                self._root = agent
                self._open(task or self._global_task(agent))
            self._depth += 1
            self._max_steps[id(agent)] = int(max_steps or getattr(agent, "max_steps", 0) or 0)

    def run_ended(
        self, agent: Any, error: BaseException | None = None, answer: object = None
    ) -> None:
        """A hooked agent's `run` ended; the top-level one closes its guard run (`run_end`
        with the final answer, or the error's stop reason)."""
        with self._lock:
            self._depth = max(0, self._depth - 1)
            if self._depth or self._run is None:
                return
            why = "done" if error is None else stop_reason_of(error)
            text = "" if answer is None else str(getattr(answer, "output", answer))
            self._run.end(text, stop_reason=why, error=None if error is None else str(error))

    # -- registration --------------------------------------------------------------------
    def attach(self, agent: Any) -> Any:
        """Register on `agent` and, recursively, its managed agents (each once), and hook their
        tool calls and runs; `agent`'s task is the global task."""
        with self._lock:
            self._root = agent
            self._adopt(agent)
        return agent

    def _adopt(self, agent: Any) -> None:
        callbacks = getattr(agent.step_callbacks, "_callbacks", {}).get(ActionStep, [])
        if not any(cb is self for cb in callbacks):
            agent.step_callbacks.register(ActionStep, self)
        install(agent, self)
        for sub in (getattr(agent, "managed_agents", None) or {}).values():
            self._adopt(sub)

    def _adopt_late(self, agent: Any) -> None:
        """An agent registered through `step_callbacks=[sup]`: hook it from now on. Its first
        run began unhooked: it is this run (its depth counted once, ended by nothing)."""
        if self._depth == 0:
            self.reset()
            self.runs += 1
            self._root = agent
        self._adopt(agent)

    @staticmethod
    def _where(agent: Any) -> tuple[str, str, str]:
        name = str(getattr(agent, "name", None) or "agent")
        local = str(getattr(agent, "task", "") or "")
        return name, local, local[:200]

    def _global_task(self, agent: Any) -> str:
        task = getattr(self._root, "task", None) if self._root is not None else None
        return str(task or getattr(agent, "task", "") or "")

    # -- before a tool runs --------------------------------------------------------------
    def gate(self, agent: Any, tool: str, args: str, code: str) -> str | None:
        """The rule tier's refusal of a call (a repeat, a spent budget), before it runs."""
        if self.settings.rules is None:
            return None
        with self._lock:
            name = self._where(agent)[0]
            run = self.run
            number = int(getattr(agent, "step_number", 0))
            if self._steps_seen.get(id(agent)) != number:  # a new step: a new model reply
                self._steps_seen[id(agent)] = number
                run.new_reply(name)
            note = run.before_tool(name, tool, args or code)
            self._log_firings(number)
            if note is None:
                return None
            self._blocked.add((id(agent), number))
            return note

    def reask(self, agent: Any, answer: str) -> str | None:
        """The turn asking the agent again when its final answer only repeats overseer's
        words (once per run and agent); None: the answer stands."""
        if self.settings.rules is None:
            return None
        with self._lock:
            return self.run.reask(self._where(agent)[0], answer)

    # -- after a step --------------------------------------------------------------------
    def __call__(self, memory_step: ActionStep, agent: Any = None) -> None:
        """The callback smolagents calls after each step (other memory steps are ignored).

        The final answer and the step smolagents adds when `max_steps` is reached are not
        reviewed: nothing reads a decision about them.
        """
        if not isinstance(memory_step, ActionStep) or memory_step.is_final_answer:
            return
        if isinstance(memory_step.error, AgentMaxStepsError):
            return
        with self._lock:
            if agent is not None and not hooked(agent, self):
                self._adopt_late(agent)
            if id(memory_step) in self._done:
                return
            self._done.add(id(memory_step))
            self._step(memory_step, agent)

    def _step(self, memory_step: ActionStep, agent: Any) -> None:
        name, local, _ = self._where(agent)
        n = memory_step.step_number
        step = step_from_smolagents(memory_step, name, local)
        self._charge(memory_step, name)
        refused = (id(agent), n) in self._blocked
        if not refused and unexecuted(memory_step):
            refused = self._count_unexecuted(memory_step, step)
        if not refused:  # a refused step is on the bus already (its refusal)
            self._judge(memory_step, step, name, agent)
        if self.settings.rules is not None and agent is not None:
            mask_memory(self.run.model_input, agent, memory_step, name, self._originals)
        self._log_firings(n)
        if agent is not None:
            self._escalate(agent, name, n, refused)

    def _judge(self, memory_step: ActionStep, step: Step, name: str, agent: Any) -> None:
        """The step through the run's bus: what the agent reads next is what the bus leaves."""
        run = self.run
        spent = run.ledger.by_kind().get("supervisor", Usage())
        shown = run.after_tool(
            name,
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
        self.usage = self.usage + used
        book_tokens(memory_step, used, agent, self)
        plugin = self.guard.plugin  # the SupervisorAgent: its public review of the step
        review = plugin.last_review(run.run) if plugin is not None else None
        if review is not None and review.trigger is not None:
            d = review.decision
            self.log.append(
                SmolagentsSupervisionLog(
                    agent=name,
                    step=memory_step.step_number,
                    context=review.trigger.context,
                    reason=review.trigger.reason,
                    action=d.action if d else None,
                    note=review.note or (d.fallback if d else ""),
                )
            )

    def _escalate(self, agent: Any, name: str, number: int, refused: bool) -> None:
        """Count the agent's refused steps in a row; at `answer_after_refusals` of them, end
        its tool use: its step limit is reached now (smolagents then asks the model for the
        final answer, without tools), or the run is interrupted (`on_refusals="stop"`)."""
        in_a_row = self.run.bus.refused[name]  # the one refusal counter: the bus's
        n = self.answer_after_refusals
        if not refused or n == 0 or in_a_row < n:
            return
        self.escalations += 1
        why = f"{in_a_row} refused steps in a row: {self.on_refusals}"
        self.log.append(SmolagentsSupervisionLog(name, number, "rule", why, "refusals"))
        log.info("overseer %s (%s)", why, name)
        if self.on_refusals == "stop":
            agent.interrupt()
        else:
            limit = self._max_steps.get(id(agent)) or int(getattr(agent, "max_steps", 0) or 0)
            agent.step_number = max(agent.step_number, limit)

    def _charge(self, memory_step: ActionStep, name: str) -> None:
        """Book the agent's own tokens in the run's ledger; the step that spends its rule-tier
        budget tells it to answer."""
        u = memory_step.token_usage
        told = name in self.run.spent
        try:
            self.run.book(
                name,
                prompt_tokens=u.input_tokens if u else 0,
                completion_tokens=u.output_tokens if u else 0,
                reported=u is not None,
            )
        except BudgetExceeded:
            if not told and name in self.run.spent:  # spent by this step: tell it once
                obs = memory_step.observations or ""
                memory_step.observations = f"{obs}\n\n{self.run.spent.get(name, '')}".strip()

    def _count_unexecuted(self, memory_step: ActionStep, step: Step) -> bool:
        """A reply smolagents could not parse never reached a tool: the loop breaker counts it
        here, and at the repeat it refuses it tells the agent to write something else (True:
        refused)."""
        if self.settings.rules is None:
            return False
        self.run.new_reply(step.agent)  # one step, one model reply
        blocked = self.run.before_tool(step.agent, None, step.code or step.args or "")
        if blocked is not None:  # refused and counted on the bus; this note says why here
            note = (
                "[overseer] Your last replies were the same and could not be run as a tool "
                "call. Write a different reply: one valid tool call."
            )
            memory_step.observations = f"{memory_step.observations or ''}\n\n{note}".strip()
        return blocked is not None

    def _log_firings(self, step_number: int) -> None:
        """The plug-ins' rule events written since the last step, into `log`."""
        fired = self._firings.events[self._logged :]
        for f in fired:
            agent, rule, detail = str(f.get("agent")), str(f.get("rule")), str(f.get("detail"))
            self.log.append(SmolagentsSupervisionLog(agent, step_number, "rule", detail, rule))
            log.info("overseer rule %s (%s): %s", rule, agent, detail)
        self._logged += len(fired)

    @property
    def stats(self) -> dict[str, object]:
        """This run's counts: steps seen, triggers by context, decisions by action, skips,
        fallbacks, rule firings by rule, refused rewrites; plus the supervisor's tokens."""
        plugin = self.guard.plugin
        got = self.run.bus.stats().get(plugin.name, {}) if plugin is not None else {}
        out: dict[str, object] = dict(got) or SupervisorStats().as_dict()
        out["supervisor_tokens"] = self.usage.prompt_tokens + self.usage.completion_tokens
        out["mode"] = self.mode
        out["escalations"] = self.escalations
        out["run"] = self.run.id
        out["reasked"] = self.run.counts["reasked"]  # answers copying a note, asked again
        return out
