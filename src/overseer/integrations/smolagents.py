"""SupervisorAgent for smolagents: a step callback plus hooks before each tool call.

Modes as in `overseer.supervise.modes`: `llm` (the seed: the LLM-free filter, then the
supervisor model), `rules` (the rule tier alone, no model needed), `rules+llm` (rules first,
the model only on what they cannot settle). The rule tier acts where smolagents lets it:
the loop breaker and the step budget before a tool runs (wrapped `execute_tool_call` /
`python_executor`), extractive purification and the supervisor's decision in the step
callback (smolagents calls it before the next prompt is built from memory, so editing
`step.observations` changes what the agent reads next), masking on the agent's older steps.
The supervisor's tokens are added to the step's `token_usage` and, once, to smolagents'
monitor. History, caps, rule counts and usage are per top-level run.

    sup = OverseerSupervisor(mode="rules")  # or OverseerSupervisor(model, mode="rules+llm")
    sup.attach(manager)  # the manager and, recursively, its managed agents
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

try:
    from smolagents.memory import ActionStep
    from smolagents.utils import AgentMaxStepsError
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "overseer.integrations.smolagents needs smolagents: pip install 'overseer[smolagents]'"
    ) from exc

from overseer.integrations._parts import NO_MODEL, OnRefusals, run_sync
from overseer.integrations._smol_hooks import hooked, install
from overseer.integrations._smol_steps import (
    book_tokens,
    mask_memory,
    own_tokens,
    step_from_smolagents,
    unexecuted,
)
from overseer.models import Model, Usage
from overseer.runtime.bus import observation_after
from overseer.runtime.verdicts import Approve, Verify
from overseer.supervise import (
    Review,
    Step,
    SupervisorCore,
    SupervisorSettings,
    preset,
    verdict_of,
)
from overseer.supervise.modes import mode_settings
from overseer.supervise.rules import RuleSettings, ToolRecord

__all__ = [
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


class OverseerSupervisor:
    """A smolagents step callback running the SupervisorAgent (rules and/or LLM) on each step.

    `model`: the supervisor's model (not needed in mode `rules`); `settings`: the filter,
    caps and window (the mode decides `rules` and `llm`); `rules`: the rule tier's switches;
    `filter_preset`: the filter's thresholds by name (e.g. "gaia"); `verifier`: question ->
    answer, else `run_verification` is never offered; `embed`: texts -> vectors for
    extractive purification (None: TF-IDF). Register with `attach(agent)`.

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
    ) -> None:
        if answer_after_refusals < 0 or on_refusals not in ("answer", "stop"):
            raise ValueError(
                "OverseerSupervisor: expected answer_after_refusals >= 0 and on_refusals "
                f"'answer' or 'stop', got {answer_after_refusals!r} and {on_refusals!r}"
            )
        self.answer_after_refusals = answer_after_refusals
        self.on_refusals: OnRefusals = on_refusals
        base = settings or SupervisorSettings()
        if filter_preset:
            base = replace(base, filter=preset(filter_preset))
        self.settings = mode_settings(mode, base=base, rules=rules, verifier=verifier is not None)
        if self.settings.llm and model is None:
            raise ValueError(
                f"OverseerSupervisor mode {mode!r}: expected a supervisor model "
                "(mode 'rules' runs without one)"
            )
        self.mode = mode
        self.model = model
        self.verifier = verifier
        self.embed = embed
        self.runs = 0
        self._lock = threading.RLock()
        self._depth = 0  # nested runs in progress (a managed agent's run inside its manager's)
        self._open = False  # a run's state is in use (reset before the next top-level run)
        self._root: Any = None
        self._runner: asyncio.Runner | None = None  # one event loop per top-level run
        self.reset()

    # -- per-run state -------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the last run: history, caps, rule state, stats, log and usage."""
        with self._lock:
            self.core = SupervisorCore(self.settings, embed=self.embed)
            self.usage = Usage()
            self.log: list[SmolagentsSupervisionLog] = []
            self._done: set[int] = set()  # ids of steps reviewed (a callback registered twice)
            self._blocked: set[tuple[int, int]] = set()  # (agent id, step) with a refused call
            self._originals: dict[int, ToolRecord] = {}  # step id -> its unmasked record
            self._logged = 0  # rule firings already in `log`
            self._refused: Counter[int] = Counter()  # agent id -> refused steps in a row
            self._max_steps: dict[int, int] = {}  # agent id -> its run's step limit
            self.escalations = 0  # refusals in a row acted on (answer or stop)

    def run_started(self, agent: Any, max_steps: int | None) -> None:
        """A hooked agent's `run` began: a new top-level run resets the per-run state."""
        with self._lock:
            if self._depth == 0:
                self.reset()
                self.runs += 1
                self._root, self._open = agent, True
            self._depth += 1
            self._max_steps[id(agent)] = int(max_steps or getattr(agent, "max_steps", 0) or 0)

    def run_ended(self, agent: Any) -> None:
        with self._lock:
            self._depth = max(0, self._depth - 1)
            self._open = self._depth > 0
            if not self._open and self._runner is not None:
                self._runner.close()
                self._runner = None

    def _loop(self) -> asyncio.Runner | None:
        """The run's event loop for reviews (none in a thread that runs one already)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self._runner is None:
                self._runner = asyncio.Runner()
            return self._runner
        return None

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
        run began unhooked, so a state left by an earlier run is dropped here."""
        if self._depth == 0 and not self._open:
            self.reset()
            self.runs += 1
            self._root, self._open = agent, True
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
        rules = self.core.rules
        if rules is None:
            return None
        with self._lock:
            name, _, subtask = self._where(agent)
            step = Step(name, subtask, "tool", tool=tool, args=args, code=code)
            blocked = rules.before_action(step)
            number = int(getattr(agent, "step_number", 0))
            self._log_firings(number)
            if blocked is None:
                return None
            self._blocked.add((id(agent), number))
            return blocked.note

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
        name, local, subtask = self._where(agent)
        n = memory_step.step_number
        step = step_from_smolagents(memory_step, name, subtask)
        self._charge(memory_step, name, subtask)
        refused = (id(agent), n) in self._blocked
        if not refused:
            if unexecuted(memory_step):
                refused = self._count_unexecuted(memory_step, step)
            review = run_sync(
                self.core.review(
                    step,
                    global_task=self._global_task(agent),
                    local_task=local,
                    model=self.model or NO_MODEL,
                ),
                self._loop(),
            )
            self._log_firings(n)
            self._apply(review, memory_step, name, agent)
        if self.core.rules is not None and agent is not None:
            mask_memory(self.core.rules, agent, memory_step, name, subtask, self._originals)
        self._log_firings(n)
        if agent is not None:
            self._escalate(agent, name, n, refused)

    def _escalate(self, agent: Any, name: str, number: int, refused: bool) -> None:
        """Count the agent's refused steps in a row; at `answer_after_refusals` of them, end
        its tool use: its step limit is reached now (smolagents then asks the model for the
        final answer, without tools), or the run is interrupted (`on_refusals="stop"`)."""
        key = id(agent)
        self._refused[key] = self._refused[key] + 1 if refused else 0
        n = self.answer_after_refusals
        if n == 0 or self._refused[key] < n:
            return
        self.escalations += 1
        why = f"{self._refused[key]} refused steps in a row: {self.on_refusals}"
        self.log.append(SmolagentsSupervisionLog(name, number, "rule", why, "refusals"))
        log.info("overseer %s (%s)", why, name)
        if self.on_refusals == "stop":
            agent.interrupt()
        else:
            limit = self._max_steps.get(key) or int(getattr(agent, "max_steps", 0) or 0)
            agent.step_number = max(agent.step_number, limit)

    def _charge(self, memory_step: ActionStep, name: str, subtask: str) -> None:
        """Book the agent's own tokens; the step that spends its budget tells it to answer."""
        rules = self.core.rules
        if rules is None:
            return
        fired = rules.counts["budget"]
        blocked = rules.charge(name, subtask, own_tokens(memory_step))
        if blocked is not None and rules.counts["budget"] > fired:
            memory_step.observations = f"{memory_step.observations or ''}\n\n{blocked.note}".strip()

    def _count_unexecuted(self, memory_step: ActionStep, step: Step) -> bool:
        """A reply smolagents could not parse never reached a tool: the loop breaker counts it
        here, and at the repeat it refuses it tells the agent to write something else (True:
        refused)."""
        rules = self.core.rules
        if rules is None:
            return False
        blocked = rules.before_action(replace(step, observation=""))
        if blocked is not None:
            note = (
                "[overseer] Your last replies were the same and could not be run as a tool "
                "call. Write a different reply: one valid tool call."
            )
            memory_step.observations = f"{memory_step.observations or ''}\n\n{note}".strip()
        return blocked is not None

    def _log_firings(self, step_number: int) -> None:
        rules = self.core.rules
        if rules is None:
            return
        for f in rules.firings[self._logged :]:
            self.log.append(
                SmolagentsSupervisionLog(f.agent, step_number, "rule", f.detail, f.rule)
            )
            log.info("overseer rule %s (%s): %s", f.rule, f.agent, f.detail)
        self._logged = len(rules.firings)

    def _apply(self, r: Review, memory_step: ActionStep, agent: str, agent_obj: Any) -> None:
        if r.trigger is None:
            return
        d = r.decision
        self.log.append(
            SmolagentsSupervisionLog(
                agent=agent,
                step=memory_step.step_number,
                context=r.trigger.context,
                reason=r.trigger.reason,
                action=d.action if d else None,
                note=r.note or (d.fallback if d else ""),
            )
        )
        if d is not None:
            self.usage = self.usage + d.usage
            book_tokens(memory_step, d.usage, agent_obj, self)
        # the review's verdict, as on the bus, in the bus's words
        v = verdict_of(r, "supervisor")
        obs = memory_step.observations or ""
        if isinstance(v, Verify):
            if self.verifier is not None:  # (without one, verification is never offered)
                memory_step.observations = observation_after(v, obs, self.verifier(v.task))
        elif not isinstance(v, Approve):
            memory_step.observations = observation_after(v, obs)

    @property
    def stats(self) -> dict[str, object]:
        """This run's counts: steps seen, triggers by context, decisions by action, skips,
        fallbacks, rule firings by rule, refused rewrites; plus the supervisor's tokens."""
        out = self.core.stats.as_dict()
        out["supervisor_tokens"] = self.usage.prompt_tokens + self.usage.completion_tokens
        out["mode"] = self.mode
        out["escalations"] = self.escalations
        return out
