"""One framework invocation under overseer: its run, bus, ledger, trace and refusal counts.

A `Guard` (one per attachment: a middleware, an `Overseer`, a capability, a smolagents
supervisor) opens one `GuardRun` per invocation of the framework's agent, so concurrent
invocations never share books, notes or questions. The run's steps go through the runtime's
`Bus` with the guard's plug-in (the SupervisorAgent: the rule tier, and the LLM tier when a
supervisor model is given), so refusals, purifications and the supervisor's verdicts are
recorded and applied where a team's are. The GuardRun is the bus's host: a framework's own
loop cannot be rolled back or re-staffed from here, so it honours guide, replace and verify.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from overseer.integrations._parts import (
    NO_MODEL,
    OnRefusals,
    RunStopped,
    StepBook,
    args_text,
    model_label,
    run_sync,
)
from overseer.models import Completion, TokenLogprob, Usage
from overseer.runtime import Budget, Interaction, TeamSpec
from overseer.runtime.books import BudgetExceeded, open_run
from overseer.runtime.bus import Bus, UnsupportedVerdictError
from overseer.runtime.steps import supported_numbers
from overseer.runtime.verdicts import ReplaceAgent, ReplaceTeam, Rollback
from overseer.supervise.filters import Step, normalize_action
from overseer.supervise.rules import ToolRecord

if TYPE_CHECKING:
    from overseer.integrations._guard import Guard
    from overseer.runtime import Run

T = TypeVar("T")
Args = str | Mapping[str, Any]  # a tool call's arguments: JSON text or a mapping

#: what the model reads for a call identical to one before it in the same reply: the calls of
#: one reply are one action (8 identical calls were 7 refusals, each quoting the page)
SAME_REPLY_NOTE = (
    "[overseer] Not run: the same call as the one before it in this reply; its output is "
    "the observation of that call."
)


def now(coro: Coroutine[Any, Any, T]) -> T:
    """The value of a coroutine that finishes without waiting (the rule tier's hooks): run
    from sync framework hooks without an event loop; one that waits is an error."""
    try:
        coro.send(None)
    except StopIteration as done:
        return cast("T", done.value)
    coro.close()
    raise RuntimeError("a guard hook waited where only the rule tier may run")


async def _no_verifier(task: str, run: Run) -> str:
    """A guard runs no verifier: the agent is asked to check it itself."""
    return f"no verifier ran here: check this yourself before going on ({task})"


#: tool outputs up to this long are kept per agent (a trap's text is short; pages are not)
_SHORT_OUTPUT = 300


class GuardRun:
    """The books and bus of one invocation (see the module docstring). Thread-safe:
    frameworks run tool calls in parallel threads."""

    label = "guard"
    honours: frozenset[str] = frozenset({"guide", "replace", "verify"})

    def __init__(
        self, guard: Guard, task: str, *, model: str = "", run_id: str | None = None
    ) -> None:
        s = guard.settings
        self.guard = guard
        self.task = task
        self.budget = Budget(max_tokens=s.budget_tokens, max_calls=s.budget_calls)
        self.run = open_run(
            task,
            TeamSpec.placeholder(),
            guard.supervisor_model or NO_MODEL,
            run_id=run_id,
            trace_dir=guard.trace_dir,
            budget=self.budget,
        )
        self.id, self.ledger, self.trace = self.run.id, self.run.ledger, self.run.trace
        self.bus = Bus(self.run, guard.chain, host=self, verifier=guard.verifier or _no_verifier)
        self.counts: Counter[str] = Counter()
        self.spent: dict[str, str] = {}  # agent -> why its own token budget is spent
        self.stop_reason: str | None = None  # set when the guard ended the run itself
        self.ended = False
        self._lock = threading.RLock()
        self._steps = StepBook()
        self._reply: dict[str, set[str]] = {}  # agent -> actions called since its last reply
        self._notes: dict[str, list[str]] = {}  # agent -> the refusals it was given to read
        self._reasked: set[str] = set()  # agents asked again after copying a note
        self._outputs: dict[str, list[str]] = {}  # agent -> its short tool outputs, in order
        self._read: dict[str, list[str]] = {}  # agent -> its tool results (and errors)
        self._seen: dict[str, tuple[int, set[str]]] = {}  # agent -> (results read, values)
        self._closed: set[str] = set()  # agents whose tools overseer closed
        self._hidden: dict[str, int] = {}  # agent -> tool outputs its last view did not show whole
        agents = [{"name": guard.run_name}] if guard.run_name else []
        self.bus.start({"agents": agents}, model=model_label(model))

    # -- the bus's host: nothing to roll back or re-staff in another framework's loop ------
    def roll_back(self, v: Rollback) -> None:
        raise UnsupportedVerdictError(f"{v.by}: a guard cannot roll a framework's run back")

    def replace_agent(self, v: ReplaceAgent) -> None:
        raise UnsupportedVerdictError(f"{v.by}: a guard cannot replace a framework's agent")

    def replace_team(self, v: ReplaceTeam) -> None:
        raise UnsupportedVerdictError(f"{v.by}: a guard cannot replace a framework's team")

    def _interaction(
        self,
        agent: str,
        tool: str | None,
        args: str,
        observation: str,
        error: str | None,
        *,
        thought: str = "",
        local_task: str | None = None,
    ) -> Interaction:
        """A step of `agent` as the runtime's bus sees it, with the usage of its model calls
        since its last step (a short tool output is kept: an answer repeating one is asked
        again)."""
        if tool is not None and len(observation) <= _SHORT_OUTPUT:
            self._outputs.setdefault(agent, []).append(observation)
        if tool is not None:
            self._read.setdefault(agent, []).append(f"{observation}\n{error or ''}")
        return Interaction(
            kind="tool" if tool is not None else "message",
            agent=agent,
            global_task=self.task,
            local_task=self.task if local_task is None else local_task,
            thought=thought,
            round=0,
            step=self._steps.next(agent),
            input=args,
            observation=observation,
            error=error,
            tool=tool,
            usage=self._steps.take_usage(agent),
            logprobs=(self._steps.logprobs.pop(agent, ()) or None) if tool is None else None,
        )

    # -- tools ---------------------------------------------------------------------------
    def before_tool(self, agent: str, tool: str | None, args: Args) -> str | None:
        """None: let the tool run; a text: return it to the model INSTEAD of running the tool
        (the loop breaker, a spent step budget, or a call repeated within one reply). `tool`
        None: a reply no tool call could be read from (`args` its text), counted the same."""
        kind: Literal["tool", "message"] = "tool" if tool is not None else "message"
        with self._lock:
            text = args_text(args)
            action = normalize_action(Step(agent, self.task, kind, tool=tool, args=text))
            seen = self._reply.setdefault(agent, set())
            if action in seen:
                self.counts["same_reply"] += 1
                self._notes.setdefault(agent, []).append(SAME_REPLY_NOTE)
                return SAME_REPLY_NOTE
            seen.add(action)
            self.counts["actions"] += 1
            i = Interaction(  # the call before it runs: its step and usage come with its output
                kind=kind,
                agent=agent,
                global_task=self.task,
                local_task=self.task,
                round=0,
                step=self._steps.count[agent],
                input=text,
                observation="",
                tool=tool,
            )
            note = now(self.bus.before_tool(i))
            if note is None:
                return None
            self._steps.next(agent)
            self.counts["blocked"] += 1
            self._notes.setdefault(agent, []).append(note)
            return note

    def told(self, agent: str, note: str) -> None:
        """A note a host showed `agent` in words of its own (smolagents' note on a reply it
        could not run): a final answer that copies it is no answer, as for a refusal."""
        with self._lock:
            self._notes.setdefault(agent, []).append(note)

    def reask(self, agent: str, answer: str) -> str | None:
        """The user turn asking `agent` once more when its answer only repeats overseer's
        words (a refusal it read, the closing turn) or a tool output it was shown twice or more
        (a trap's text): such a reply is no answer (issue 39). None: keep the answer (it is
        not a copy, or this run asked again already)."""
        with self._lock:
            if agent in self._reasked:
                return None
            notes, outputs = self._notes.get(agent, []), self._outputs.get(agent, [])
            seen = self._supported(agent) if agent in self._closed else None
            again = self.guard.settings.turns.reask(answer, notes, outputs, self.task, seen=seen)
            if again is not None:
                self._reasked.add(agent)
                self.counts["reasked"] += 1
            return again

    def _supported(self, agent: str) -> set[str]:
        """The values `agent`'s tool results support as an answer to the task, computed when
        an answer is checked (never on the tool-output path), once per result read."""
        read = self._read.get(agent, [])
        done, seen = self._seen.get(agent, (0, set()))
        for text in read[done:]:
            seen = seen | supported_numbers(text, self.task)
        self._seen[agent] = (len(read), seen)
        return seen

    def settle(self, agent: str, answer: str) -> str | None:
        """The answer that stands instead of `agent`'s final `answer` (after any re-ask): once
        overseer closed its tools, an answer stating a value no tool result supports becomes
        "could not find it" (`TurnPolicy.settle`); None: the answer stands. Every host calls
        it on the answer it keeps."""
        with self._lock:
            if agent not in self._closed:
                return None
            seen = self._supported(agent)
            instead = self.guard.settings.turns.settle(answer, self.task, seen)
            if instead is not None:
                self.counts["unsupported"] += 1
            return instead

    def new_reply(self, agent: str) -> None:
        """`agent`'s next tool calls belong to a new model reply (a host that books no model
        call per reply, e.g. smolagents' step callback, says so here)."""
        with self._lock:
            self._reply[agent] = set()

    def refusals_acted(self, agent: str) -> OnRefusals | None:
        """What `agent`'s refused calls in a row ask for before its next model call: "answer"
        (its tools closed), "stop" (the run ends), or None (go on as usual)."""
        with self._lock:
            acts = self.guard.settings.turns.after_refusals(self.bus.refused[agent])
            if acts == "answer":
                self._closed.add(agent)  # its answer now comes from what it was shown
            return acts

    def after_tool(
        self,
        agent: str,
        tool: str | None,
        args: Args,
        output: str,
        *,
        error: str | None = None,
        **step: str,
    ) -> str:
        """The tool output the model should read, as the bus leaves it (purified by the rule
        tier when over-long; the LLM supervisor's verdict where one is configured). `step`:
        the step's `thought` and `local_task`, where the framework has them."""
        with self._lock:
            i = self._interaction(agent, tool, args_text(args), output, error, **step)
            if self.guard.supervisor_model is None:
                return now(self.bus.judge(i)).observation
        return run_sync(self.bus.judge(i)).observation

    async def aafter_tool(
        self, agent: str, tool: str, args: Args, output: str, *, error: str | None = None
    ) -> str:
        """`after_tool` for async frameworks (the supervisor's model call is awaited)."""
        with self._lock:
            i = self._interaction(agent, tool, args_text(args), output, error)
        return (await self.bus.judge(i)).observation

    # -- model calls ---------------------------------------------------------------------
    def model_input(self, agent: str, records: Sequence[ToolRecord]) -> list[str]:
        """The texts to show for one agent's tool outputs (oldest first): older ones masked."""
        with self._lock:
            shown = self.bus.view(agent, records)
            hidden = sum(s != r.text for s, r in zip(shown, records, strict=True))
            self.counts["masked"] += max(0, hidden - self._hidden.get(agent, 0))
            self._hidden[agent] = hidden
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
            return f"{agent}: {self.bus.refused[agent]} tool calls in a row were refused"

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
        logprobs: Sequence[TokenLogprob] = (),
    ) -> None:
        """Book one framework model call of `agent` (`cached_tokens`: its prompt tokens read
        from the server's prefix cache; `reported=False`: the framework gave no usage;
        `logprobs`: its tokens' logprobs when the server gave them, for a monitor plug-in
        judging the agent's answer); raises BudgetExceeded once the team's budget or the
        agent's rule-tier token budget is spent."""
        with self._lock:
            usage = Usage(prompt_tokens, completion_tokens, min(cached_tokens, prompt_tokens))
            model = model_label(model)
            self.ledger.book(agent, "agent", model, usage, latency_s)
            self.counts["unreported_usage"] += not reported
            self._steps.booked(agent, usage, output, logprobs)
            self._reply[agent] = set()  # a new reply: its calls are new actions
            done = Completion(
                output, usage, latency_s, model=model, finish_reason="stop",
                logprobs=tuple(logprobs) or None,
            )  # fmt: skip
            self.trace.model_call(agent, "agent", model, messages, done)
            blocked = now(self.bus.model_call(agent, usage))  # budgets are plug-ins' verdicts
            if blocked is not None:
                self.spent[agent] = blocked
                raise BudgetExceeded("tokens", blocked)
            cap = self.guard.settings.budget_tokens
            if cap is not None and self.ledger.total.total_tokens > cap:
                raise BudgetExceeded(
                    "tokens", f"{self.ledger.total.total_tokens} tokens of {cap} (team)"
                )

    # -- the end -------------------------------------------------------------------------
    def end(self, answer: str = "", *, stop_reason: str = "done", error: str | None = None) -> None:
        """Close the run once: each agent's last model call not followed by a tool call is
        recorded as its answer, then the bus writes `run_end` (the guard's own stop reason,
        when it ended the run, replaces `done`) and closes the trace."""
        with self._lock:
            if self.ended:
                return
            self.ended = True
            for agent in self._steps.open_agents():
                out = self._steps.last_output.get(agent, "")
                now(self.bus.judge(self._interaction(agent, None, out, out, None), ask=False))
            if stop_reason == "done" and self.stop_reason is not None:
                stop_reason = self.stop_reason
            now(self.bus.finish(cast("Any", stop_reason), answer, error))

    @property
    def stats(self) -> dict[str, Any]:
        """Rule firings, supervisor triggers/actions, tool actions, tokens and calls per agent."""
        with self._lock:
            tokens = {k: u.total_tokens for k, u in self.ledger.by_actor().items()}
            plugins = self.bus.stats()
            rules: Counter[str] = Counter()
            for got in plugins.values():  # each plug-in's rule firings, by rule
                rules.update(cast("dict[str, int]", got.get("rules") or {}))
            sup = plugins.get(self.guard.llm.name) if self.guard.llm is not None else None
            return {
                "run": self.id,
                "rules": dict(rules),
                "plugins": plugins,
                "supervisor": (sup or {}) if self.guard.supervisor_model else None,
                "actions": self.counts["actions"],
                "blocked": self.counts["blocked"],
                "same_reply": self.counts["same_reply"],
                "reasked": self.counts["reasked"],
                "unsupported": self.counts["unsupported"],
                "unreported_usage": self.counts["unreported_usage"],
                "tokens": tokens,
                "calls": self.ledger.calls_by_actor(),
            }
