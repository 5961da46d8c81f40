"""Runs as the proxy sees them: who sent a request, and the rule tier applied to its messages.

A request belongs to a run and an agent, read in this order: the `X-Overseer-Run` and
`X-Overseer-Agent` headers; the request's `metadata` (`overseer_run`, `overseer_agent`) and
`user` (the run); else fingerprints: the run of the system prompt and the first user message,
the agent of the system prompt. Each run has the rule tier's memory (loops, repeats), a ledger
with the run's budget and a trace in the runtime's schema (`open_run`), so `overseer trace
list/show` and `report` read it. A tool result is judged once, the first time a request
carries it: a repeated action past the loop limit is refused AS THE TOOL RESULT (its content
becomes the refusal note), an over-long output is purified; every request then shows the same
texts, older outputs masked.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from overseer.models import Completion, Model, Request, Usage
from overseer.runtime import Budget, Run, TeamSpec
from overseer.runtime.books import open_run
from overseer.supervise import Step
from overseer.supervise.rules import RuleFiring, RuleSettings, RuleTier, ToolRecord


class _Upstream(Model):
    """The run's model as the books name it: the upstream's, never called from here."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _complete(self, request: Request) -> Completion:
        raise NotImplementedError("the proxy's upstream is called over HTTP")


@dataclass(frozen=True)
class Who:
    """A request's run and agent, and where they were read from (header, body, fingerprint)."""

    run: str
    agent: str
    source: str


def _fingerprint(*texts: str) -> str:
    return hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:12]


def text_of(content: Any) -> str:
    """A message's content as text (the text parts of a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return "" if content is None else str(content)


def identify(headers: Mapping[str, str], body: Mapping[str, Any]) -> Who:
    """The run and agent of one request (see the module's docstring for the order)."""
    meta = body.get("metadata") if isinstance(body.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    messages = [m for m in body.get("messages") or () if isinstance(m, Mapping)]
    system = next((text_of(m.get("content")) for m in messages if m.get("role") == "system"), "")
    first = next((text_of(m.get("content")) for m in messages if m.get("role") == "user"), "")
    run, agent = headers.get("x-overseer-run"), headers.get("x-overseer-agent")
    source = "header" if run else ""
    if not run:
        run = meta.get("overseer_run") or body.get("user")
        source = "body" if run else "fingerprint"
    agent = agent or meta.get("overseer_agent") or f"agent-{_fingerprint(system)[:8]}"
    return Who(str(run or f"run-{_fingerprint(system, first)}"), str(agent), source)


@dataclass
class ProxyRun:
    """One run's rule tier, ledger and trace, and the tool results already judged."""

    run: Run
    rules: RuleTier
    task: str
    shown: dict[str, str] = field(default_factory=dict)  # tool_call_id -> text judged
    counts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def subtask(self) -> str:
        return self.task[:200]

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def _fired(self, firing: RuleFiring | None) -> None:
        if firing is not None:
            self.run.trace.event("rule", by="proxy", **asdict(firing))

    def apply(self, agent: str, messages: list[Any]) -> list[Any]:
        """The messages as the model should read them: each tool result judged once (refused
        when its action loops, purified when over-long), older outputs masked."""
        calls: dict[str, tuple[str, str]] = {}
        for m in messages:
            for c in (m.get("tool_calls") or []) if isinstance(m, Mapping) else ():
                fn = c.get("function") or {} if isinstance(c, Mapping) else {}
                calls[str(c.get("id"))] = (str(fn.get("name", "")), str(fn.get("arguments", "")))
        tools = [
            i for i, m in enumerate(messages) if isinstance(m, Mapping) and m.get("role") == "tool"
        ]
        if not tools:
            return messages
        out = list(messages)
        records: list[ToolRecord] = []
        with self.lock:
            for i in tools:
                m = messages[i]
                key = str(m.get("tool_call_id") or f"#{i}")
                name, args = calls.get(key, ("", ""))
                if key not in self.shown:
                    self.shown[key] = self._judge(agent, name, args, text_of(m.get("content")))
                records.append(ToolRecord(name, args, self.shown[key]))
            seen = len(self.rules.firings)
            texts = self.rules.mask(records, agent=agent, subtask=self.subtask)
            for firing in self.rules.firings[seen:]:
                self._count("masked")
                self._fired(firing)
        for i, text in zip(tools, texts, strict=True):
            if text != text_of(messages[i].get("content")):
                out[i] = dict(messages[i], content=text)
        return out

    def _judge(self, agent: str, tool: str, args: str, output: str) -> str:
        step = Step(agent, self.subtask, "tool", tool=tool, args=args)
        blocked = self.rules.before_action(step)
        if blocked is not None:
            self._count("refused")
            self._fired(blocked.firing)
            return blocked.note
        done = Step(agent, self.subtask, "tool", tool=tool, args=args, observation=output)
        text, firing = self.rules.after_observation(done, local_task=self.task)
        if firing is not None:
            self._count("purified")
        self._fired(firing)
        return text

    def book(
        self, agent: str, model: str, usage: Usage, latency_s: float, messages: Any, output: str
    ) -> None:
        """Book one model call the proxy relayed, and trace it."""
        with self.lock:
            self.run.ledger.book(agent, "agent", model, usage, latency_s)
            done = Completion(output, usage, latency_s, model=model, finish_reason="stop")
            self.run.trace.model_call(agent, "agent", model, messages, done)


@dataclass(frozen=True)
class ProxySettings:
    """What the proxy enforces per run: the rule tier (None: relay only) and budgets."""

    rules: RuleSettings | None = field(default_factory=RuleSettings)
    budget_tokens: int | None = None
    budget_calls: int | None = None
    trace_dir: str | Path | None = "runs"


class Runs:
    """The runs of one proxy process, in memory (one worker)."""

    def __init__(self, settings: ProxySettings) -> None:
        self.settings = settings
        self._runs: dict[str, ProxyRun] = {}
        self._lock = threading.Lock()

    def get(self, who: Who, body: Mapping[str, Any]) -> ProxyRun:
        """The run `who` names, opened on its first request (task: its first user message)."""
        with self._lock:
            if who.run in self._runs:
                return self._runs[who.run]
            messages = [m for m in body.get("messages") or () if isinstance(m, Mapping)]
            task = next(
                (text_of(m.get("content")) for m in messages if m.get("role") == "user"), ""
            )
            s = self.settings
            budget = Budget(max_tokens=s.budget_tokens, max_calls=s.budget_calls)
            model = _Upstream(str(body.get("model") or ""))
            run = open_run(
                task,
                TeamSpec.placeholder(),
                model,
                run_id=who.run,
                trace_dir=s.trace_dir,
                budget=budget,
            )
            run.trace.event(
                "run_start",
                query=task,
                team={"agents": []},
                model=model.name,
                supervisors=["rules"] if s.rules is not None else [],
            )
            state = ProxyRun(run, RuleTier(s.rules or RuleSettings()), task)
            self._runs[who.run] = state
            return state

    def close(self) -> None:
        """End every run's trace (its totals in `run_end`)."""
        with self._lock:
            for state in self._runs.values():
                ledger = state.run.ledger
                state.run.trace.run_end("", "done", None, ledger.total, ledger.by_actor())
                state.run.trace.close()
            self._runs.clear()


def usage_of(reply: Mapping[str, Any]) -> Usage | None:
    """The usage a reply (or the last chunk of a stream) reports, None when it has none."""
    u = reply.get("usage")
    if not isinstance(u, Mapping):
        return None
    details = u.get("prompt_tokens_details") or {}
    prompt = int(u.get("prompt_tokens") or 0)
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, Mapping) else 0
    return Usage(prompt, int(u.get("completion_tokens") or 0), min(cached, prompt))


def args_json(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, sort_keys=True)
