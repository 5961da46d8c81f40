"""The framework-neutral guard under every framework adapter: one attachment, one run per
invocation.

An adapter (LangGraph middleware, OpenAI Agents SDK `Overseer`, pydantic-ai capability,
smolagents supervisor) holds one `Guard` and opens a `GuardRun` for each invocation of the
framework's agent (`start_run`), so one attached overseer serves concurrent invocations, each
with its own run id, ledger, trace, refusal counts and question. The guard's chain is the rule
tier's plug-ins (`overseer.supervise.rules.rule_plugins`), the SupervisorAgent's LLM tier
when a supervisor model is given, then the user's plug-ins; the run's `Bus` applies their
verdicts and writes them, as for a team. No framework is imported here.

Which run a hook belongs to: the handle the adapter passes (`run=`: a LangGraph state key,
...), else the run started in the caller's context (`start_run` sets it in a context variable
of this guard, which asyncio tasks and framework threads copy), else the only live run. With
several live runs and no handle the hook is refused (`AmbiguousRunError`), never merged.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from overseer.integrations._guard_run import Args, GuardRun
from overseer.integrations._parts import (
    CLOSED_NOTE,
    NO_MODEL,
    OnRefusals,
    RunStopped,
    args_text,
    model_label,
    run_sync,
)
from overseer.integrations._settings_file import read_settings
from overseer.models import Model
from overseer.runtime import Ledger, Supervisor
from overseer.runtime.books import BudgetExceeded, Trace
from overseer.runtime.bus import Host, SupervisorChain
from overseer.runtime.steps import TurnPolicy, Verifier
from overseer.supervise import SupervisorAgent, SupervisorSettings
from overseer.supervise.purify import Embed
from overseer.supervise.rules import RuleSettings, ToolRecord, rule_plugins

__all__ = [
    "CLOSED_NOTE",
    "NO_MODEL",
    "AmbiguousRunError",
    "BudgetExceeded",
    "Guard",
    "GuardRun",
    "GuardSettings",
    "OnRefusals",
    "RunStopped",
    "ToolRecord",
    "args_text",
    "model_label",
    "run_sync",
]


class AmbiguousRunError(RuntimeError):
    """A hook of a guard with several live runs came with no handle naming its run."""


#: the proxy's default cap: a tool output longer than this is cut to it before it is judged
MAX_OUTPUT_CHARS = 1_000_000


@dataclass(frozen=True)
class GuardSettings:
    """overseer's one settings object, taken by every framework adapter, the proxy
    (`ProxySettings` is this class) and the CLI (`--settings FILE`, `from_file`): the rule tier
    (None: none), the LLM supervisor (None: no LLM tier), a hard budget over the whole team
    (all agents, the supervisor's calls included), where traces go, and the proxy's own."""

    rules: RuleSettings | None = field(default_factory=RuleSettings)
    supervisor: SupervisorSettings | None = None
    budget_tokens: int | None = None
    budget_calls: int | None = None
    #: refused tool calls of one agent in a row after which `on_refusals` acts (0: never)
    answer_after_refusals: int = 2
    on_refusals: OnRefusals = "answer"
    #: run overseer's own plug-ins (the rule tier); False: only `plugins`
    builtin: bool = True
    #: more bus plug-ins, asked after overseer's own in this order (a user's rule, a
    #: monitor): the same objects the Executor takes, on every host
    plugins: tuple[Supervisor, ...] = ()
    #: one JSONL trace per run here (None: none); an adapter's own `trace_dir=` wins
    trace_dir: str | Path | None = None
    #: the proxy's: a run ends after this many seconds without requests
    idle_s: float = 300.0
    #: the proxy's: a tool output longer than this (characters) is cut to it before it is judged
    max_output_chars: int = MAX_OUTPUT_CHARS
    #: the proxy's: refused tool calls taken out of the model's reply, the model asked again
    refuse_at_source: bool = False

    def __post_init__(self) -> None:
        if not self.idle_s > 0:
            raise ValueError(f"guard idle_s: expected seconds > 0, got {self.idle_s!r}")
        cap = self.max_output_chars
        if not isinstance(cap, int) or cap < 1:
            raise ValueError(f"guard max_output_chars: expected an integer >= 1, got {cap!r}")
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

    @property
    def turns(self) -> TurnPolicy:
        """The run's turn policy (the one every host uses): refusals in a row, re-asks."""
        return TurnPolicy(self.answer_after_refusals, self.on_refusals)

    @classmethod
    def from_file(cls, path: str | Path, **overrides: Any) -> GuardSettings:
        """The settings a TOML or JSON file writes (`_settings_file`), then `overrides`; a
        bad file or key is one ValueError naming it."""
        return cls(**{**read_settings(Path(path)), **overrides})

    @property
    def rule_tier(self) -> bool:
        """Whether the rule tier's plug-ins run (`builtin` and rules not None)."""
        return self.builtin and self.rules is not None

    def llm_settings(self) -> SupervisorSettings:
        """The SupervisorAgent's settings (the LLM tier), knowing the rule tier before it."""
        rules = self.rules if self.rule_tier else None
        return replace(self.supervisor or SupervisorSettings(), rules=rules, verify=True)


class Guard:
    """overseer attached once to a framework's agent (see the module docstring)."""

    def __init__(
        self,
        settings: GuardSettings | None = None,
        *,
        supervisor_model: Model | None = None,
        trace_dir: str | Path | None = None,
        run_name: str = "",
        plugin_settings: SupervisorSettings | None = None,
        verifier: Verifier | None = None,
        embed: Embed | None = None,
    ) -> None:
        """`plugin_settings`: the LLM tier's own (a mode's, as smolagents takes them),
        instead of those `settings` imply; `verifier`: what answers a verify verdict (None:
        the agent is told to check it itself); `embed`: vectors for purification. The chain:
        the rule tier's plug-ins (`settings.builtin`), the LLM tier (with a supervisor model),
        then `settings.plugins` in their order."""
        self.settings = settings or GuardSettings()
        if self.settings.supervisor is not None and supervisor_model is None:
            raise ValueError("guard supervisor: settings given but no supervisor_model")
        self.supervisor_model = supervisor_model
        self.verifier = verifier
        own: list[Supervisor] = []
        if self.settings.rule_tier:
            own.extend(rule_plugins(self.settings.rules, embed=embed))
        #: the LLM tier, when a supervisor model is given
        self.llm: SupervisorAgent | None = None
        if supervisor_model is not None:
            llm = plugin_settings or self.settings.llm_settings()
            self.llm = SupervisorAgent(supervisor_model, llm, name="supervisor", embed=embed)
            own.append(self.llm)
        self.chain = SupervisorChain([*own, *self.settings.plugins])
        # a plug-in that would roll back is refused here, not at the first run (the check
        # reads only the class's `label` and `honours`)
        self.chain.check_host(cast("Host", GuardRun))
        self.run_name = run_name  # the agent a single-agent adapter guards (trace `team`)
        trace_dir = trace_dir if trace_dir is not None else self.settings.trace_dir
        self.trace_dir = Path(trace_dir) if trace_dir is not None else None
        self.runs = 0  # runs started
        self.last: GuardRun | None = None  # the run started last
        self._live: dict[str, GuardRun] = {}
        self._lock = threading.RLock()
        self._current: ContextVar[GuardRun | None] = ContextVar(
            f"overseer_guard_{id(self)}", default=None
        )

    # -- runs ------------------------------------------------------------------------------
    def open(self, task: str, *, model: str = "", run_id: str | None = None) -> GuardRun:
        """A new run for one invocation (its own id, ledger, trace), not bound to a context:
        the adapter passes it (or its id, `run=`) to the hooks. `run_id`: the id to use (made
        safe for a file name; a taken one gets a suffix), e.g. a proxy's run header."""
        with self._lock:
            r = GuardRun(self, task, model=model, run_id=run_id)
            self._live[r.id] = r
            self.runs += 1
            self.last = r
            return r

    def start_run(self, task: str, *, model: str = "") -> GuardRun:
        """Open a run and make it the current one of the caller's context (asyncio tasks and
        threads started from here see it). A run still open in this same context is ended
        first, with stop reason `superseded`; runs of other contexts are left alone."""
        old = self._current.get()
        if old is not None and not old.ended:
            self.end_run(stop_reason="superseded", run=old)
        r = self.open(task, model=model)
        self._current.set(r)
        return r

    def get(self, run: GuardRun | str | None = None) -> GuardRun:
        """The run a hook belongs to (the module docstring says how it is found); with no
        run at all, one is started (a framework run that began before overseer could see it)."""
        if isinstance(run, GuardRun):
            return run
        with self._lock:
            if run is not None and run in self._live:
                return self._live[run]
            cur = self._current.get()
            if cur is not None and not cur.ended:
                return cur
            live = list(self._live.values())
            if len(live) == 1:
                return live[0]
            if live:
                raise AmbiguousRunError(
                    f"guard: {len(live)} invocations are running and this hook names none of "
                    "them; start each with start_run (or open) in its own task or thread"
                )
        return self.start_run("")

    def end_run(
        self,
        answer: str = "",
        *,
        stop_reason: str = "done",
        error: str | None = None,
        run: GuardRun | str | None = None,
    ) -> None:
        """Close a run (the caller's current one by default; no-op when none is open)."""
        with self._lock:
            r = run if isinstance(run, GuardRun) else self._live.get(run or "")
            if r is None:
                cur = self._current.get()
                r = cur if cur is not None and not cur.ended else None
            if r is None and run is None and len(self._live) == 1:
                r = next(iter(self._live.values()))
            if r is None:
                return
            self._live.pop(r.id, None)
        r.end(answer, stop_reason=stop_reason, error=error)

    # -- the current run's hooks (see GuardRun) ----------------------------------------------
    def before_tool(self, agent: str, tool: str, args: Args) -> str | None:
        return self.get().before_tool(agent, tool, args)

    def after_tool(
        self, agent: str, tool: str, args: Args, output: str, *, error: str | None = None
    ) -> str:
        return self.get().after_tool(agent, tool, args, output, error=error)

    async def aafter_tool(
        self, agent: str, tool: str, args: Args, output: str, *, error: str | None = None
    ) -> str:
        return await self.get().aafter_tool(agent, tool, args, output, error=error)

    def model_input(self, agent: str, records: list[ToolRecord]) -> list[str]:
        return self.get().model_input(agent, records)

    def refusals_acted(self, agent: str) -> OnRefusals | None:
        return self.get().refusals_acted(agent)

    def check_budget(self, agent: str | None = None) -> None:
        self.get().check_budget(agent)

    def reask(self, agent: str, answer: str) -> str | None:
        return self.get().reask(agent, answer)

    def settle(self, agent: str, answer: str) -> str | None:
        return self.get().settle(agent, answer)

    def stop_for_refusals(self, agent: str) -> str | None:
        return self.get().stop_for_refusals(agent)

    def book(self, agent: str, **call: Any) -> None:
        """Book one model call of `agent` in the current run (see `GuardRun.book`)."""
        self.get().book(agent, **call)

    # -- the last run's books, for a single-invocation caller ---------------------------------
    def _latest(self) -> GuardRun | None:
        cur = self._current.get()
        return cur if cur is not None else self.last

    @property
    def ledger(self) -> Ledger:
        r = self._latest()
        return r.ledger if r is not None else Ledger("")

    @property
    def trace(self) -> Trace | None:
        r = self._latest()
        return r.trace if r is not None and not r.ended else None

    @property
    def stats(self) -> dict[str, Any]:
        """The stats of the caller's current run, else of the run started last."""
        r = self._latest()
        return r.stats if r is not None else {"rules": {}, "actions": 0, "blocked": 0}
