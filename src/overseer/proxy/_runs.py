"""Runs as the proxy sees them: who sent a request, and the framework guard applied to it.

A request belongs to a run and an agent, read in this order: the `X-Overseer-Run` and
`X-Overseer-Agent` headers; the request's `metadata` (`overseer_run`, `overseer_agent`) and
`user` (the run); else fingerprints: the run of the system prompt and the first user message,
the agent of the system prompt and, from its second request on, its first model reply (two
copies of one agent running at once stay apart once their first replies differ; copies whose
first replies are identical too are one agent).

Each run is one `GuardRun` of the proxy's `Guard` (`overseer.integrations.guard`), the engine
every framework adapter uses: the runtime's bus with the SupervisorAgent plug-in (the rule tier,
and the LLM tier with a supervisor model), a ledger with the run's budget, and a trace in the
runtime's schema (`overseer trace list/show` and `report` read it). A tool result is judged
once per run, the first time a request carries it (keyed by agent, call id and content; in a
thread, cut to `max_output_chars` first: `_judge`): a repeated action past the loop limit is
refused AS THE TOOL RESULT (its content becomes the refusal note), an over-long output is
purified; every request then shows the same texts, older outputs masked.

Run state lives in a `RunStore`: in memory for one worker; in Redis for several (`_redis`),
where every worker keeps a replica of each run and catches up, under the run's lock, on the
operations the others logged (judged tool results, masking, booked calls), so a run spread
over workers has one ledger and one loop memory. The run's first worker writes its trace.
A run ends after `idle_s` without requests, or at shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from overseer.integrations.guard import Guard, GuardRun, GuardSettings, RunStopped, ToolRecord
from overseer.models import Model, TokenLogprob, Usage
from overseer.proxy._gateway import park
from overseer.proxy._judge import Judges, cut
from overseer.proxy._transcripts import rewrite, text_of, tool_results
from overseer.runtime.books import BudgetExceeded, TraceSink, trace_sinks

__all__ = [
    "BudgetExceeded",
    "MemoryStore",
    "ProxyRun",
    "ProxySettings",
    "RunStopped",
    "RunStore",
    "Runs",
    "Who",
    "identify",
    "text_of",
    "usage_of",
]


@dataclass(frozen=True)
class Who:
    """A request's run and agent, and where they were read from (header, body, fingerprint)."""

    run: str
    agent: str
    source: str


def _fingerprint(*texts: str) -> str:
    return hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:12]


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
    agent = agent or meta.get("overseer_agent") or _agent_print(system, messages)
    return Who(str(run or f"run-{_fingerprint(system, first)}"), str(agent), source)


def _agent_print(system: str, messages: list[Mapping[str, Any]]) -> str:
    """An unnamed agent: its system prompt, and once it has one, its first model reply (text
    and tool calls, ids included), so two copies of one agent running at once are two agents
    as soon as their first replies differ (`docs/proxy.md`, "Runs and agents")."""
    name = f"agent-{_fingerprint(system)[:8]}"
    said = next((m for m in messages if m.get("role") == "assistant"), None)
    if said is None:
        return name
    calls = json.dumps(said.get("tool_calls"), sort_keys=True, default=str)
    return f"{name}-{_fingerprint(text_of(said.get('content')), calls)[:6]}"


def usage_of(reply: Mapping[str, Any]) -> Usage | None:
    """The usage a reply (or the last chunk of a stream) reports, None when it has none."""
    u = reply.get("usage")
    if not isinstance(u, Mapping):
        return None
    details = u.get("prompt_tokens_details") or {}
    prompt = int(u.get("prompt_tokens") or 0)
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, Mapping) else 0
    return Usage(prompt, int(u.get("completion_tokens") or 0), min(cached, prompt))


#: what the proxy enforces per run: the one settings object (`GuardSettings`) every adapter
#: and the CLI take too; its `rules` None relays and books only
ProxySettings = GuardSettings


class RunStore(Protocol):
    """Where the runs' shared state lives: a lock per run, its log of operations, its owner
    (the worker that writes its trace) and the time of its last request."""

    def lock(self, run: str) -> contextlib.AbstractAsyncContextManager[Any]: ...
    async def claim(self, run: str) -> bool: ...
    async def since(self, run: str, n: int) -> list[dict[str, Any]]: ...
    async def append(self, run: str, ops: list[dict[str, Any]]) -> None: ...
    async def last(self, run: str) -> float | None: ...
    async def forget(self, run: str) -> None: ...
    async def ping(self) -> str: ...
    async def close(self) -> None: ...


class MemoryStore:
    """One worker's runs: this process is every run's only writer (nothing to replay)."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    def lock(self, run: str) -> asyncio.Lock:
        return self._locks.setdefault(run, asyncio.Lock())

    async def claim(self, run: str) -> bool:
        return True

    async def since(self, run: str, n: int) -> list[dict[str, Any]]:
        return []

    async def append(self, run: str, ops: list[dict[str, Any]]) -> None:
        return None

    async def last(self, run: str) -> float | None:
        return None

    async def forget(self, run: str) -> None:
        self._locks.pop(run, None)

    async def ping(self) -> str:
        return "memory"

    async def close(self) -> None:
        return None


class ProxyRun:
    """One run of the proxy: its `GuardRun` (this worker's replica of it), the tool results
    already judged, and how many of the run's logged operations the replica has applied."""

    def __init__(
        self, name: str, run: GuardRun, store: RunStore, *, owner: bool, judges: Judges, cap: int
    ) -> None:
        self.name = name
        self.run = run
        self.store = store
        self.owner = owner  # writes the run's trace
        self.judges = judges
        self.cap = cap
        # (agent, call id, content) key -> the text judged for it (None: the output unchanged)
        self.shown: dict[str, str | None] = {}
        # (agent, tool, args) -> calls let run at the source whose results are still to come
        self.cleared: Counter[tuple[str, str, str]] = Counter()
        self.applied = 0
        self.seen = time.monotonic()

    @property
    def id(self) -> str:
        """The run's trace id (`overseer trace show ID`)."""
        return self.run.id

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[list[dict[str, Any]]]:
        """Hold the run's lock, caught up with the operations other workers logged; the
        operations appended to the yielded list are logged at the end."""
        async with self.store.lock(self.name):
            for op in await self.store.since(self.name, self.applied):
                await self._do(op)
                self.applied += 1
            mine: list[dict[str, Any]] = []
            try:
                yield mine
            finally:
                if mine:
                    await self.store.append(self.name, mine)
                    self.applied += len(mine)
                    self.run.trace.flush()  # appended, the file closed again (`park`)
        self.seen = time.monotonic()

    async def _do(self, op: dict[str, Any]) -> Any:
        """Apply one operation to the replica (live or replayed: the same code)."""
        kind, agent = op["op"], op["agent"]
        if kind == "judge":
            return await self._judge(op)
        if kind == "source":
            return self._at_source(agent, op["calls"])
        if kind == "view":
            return self.run.model_input(agent, [ToolRecord(*r) for r in op["records"]])
        if kind == "reask":
            return self.run.reask(agent, op["answer"])
        if kind == "settle":
            return self.run.settle(agent, op["answer"])
        if kind == "book":
            call = dict(op["call"])  # logprobs travel as JSON lists (the log is JSON)
            call["logprobs"] = tuple(
                TokenLogprob(tok, lp, tuple((a, b) for a, b in top))
                for tok, lp, top in call.get("logprobs") or ()
            )
            with contextlib.suppress(BudgetExceeded):  # booked; the next call is refused
                self.run.book(agent, **call)
            return None
        raise ValueError(f"proxy run {self.name}: unknown operation {kind!r}")

    async def _judge(self, op: dict[str, Any]) -> str | None:
        """A tool output's verdict (`_judge_all`)."""
        return (await self._judge_all([op]))[0]

    async def _judge_all(self, ops: list[dict[str, Any]]) -> list[str | None]:
        """The verdicts of tool outputs, in order: each refused (a loop), else judged by the
        bus; by the rule tier all in one thread (one hand-off per request, not one per
        output), by the LLM tier, when there is one, on the event loop (it awaits its
        model)."""
        if self.run.guard.supervisor_model is None:
            size = sum(len(op["output"]) for op in ops)
            notes = await self.judges.call(size, self._rule_notes, ops)
        else:
            notes = [await self._supervised(op) for op in ops]
        for op, note in zip(ops, notes, strict=True):
            self.shown[op["id"]] = None if note == op["output"] else note
        return notes

    def _refusal(self, op: dict[str, Any]) -> str | None:
        """The loop breaker's note for the call that gave `op`'s output (None: it may run)."""
        agent, tool, args = op["agent"], op["tool"], op["args"]
        if self.cleared[agent, tool, args] > 0:  # let run at the source: counted there
            self.cleared[agent, tool, args] -= 1
            return None
        return self.run.before_tool(agent, tool, args)

    def _rule_notes(self, ops: list[dict[str, Any]]) -> list[str | None]:
        """Each output's verdict by the rule tier, one after another (in a judge thread)."""
        out: list[str | None] = []
        for op in ops:
            note = self._refusal(op)
            if note is None:
                note = self.run.after_tool(op["agent"], op["tool"], op["args"], op["output"])
            out.append(note)
        return out

    async def _supervised(self, op: dict[str, Any]) -> str | None:
        """One output's verdict when an LLM supervisor judges (awaited on the event loop)."""
        note = self._refusal(op)
        if note is None:
            note = await self.run.aafter_tool(op["agent"], op["tool"], op["args"], op["output"])
        return note

    def _at_source(self, agent: str, calls: list[Any]) -> list[str | None]:
        notes = []
        for tool, args in calls:
            note = self.run.before_tool(agent, tool, args)
            if note is None:
                self.cleared[agent, tool, args] += 1
            notes.append(note)
        return notes

    async def source(self, agent: str, calls: list[tuple[str, str]]) -> list[str | None]:
        """The loop breaker's word on each tool call of a reply before the client sees it:
        None (let it run; not counted again when its result comes) or the refusal note."""
        op = {"op": "source", "agent": agent, "calls": [list(c) for c in calls]}
        async with self._turn() as log:
            notes = await self._do(op)
            log.append(op)
        return list(notes)

    async def check(self, agent: str) -> None:
        """Raise BudgetExceeded or RunStopped when `agent` may not make another call."""
        async with self._turn():
            self.run.check_budget(agent)

    async def apply(self, agent: str, messages: list[Any]) -> tuple[list[Any], bool]:
        """The messages as the model should read them (each tool result judged once: refused
        when its action loops, purified when over-long; older outputs masked), and whether
        the agent's refusals in a row ask for an answer without tools. Tool results are found
        in OpenAI's shape and in smolagents' text shape (`_transcripts`)."""
        results = tool_results(messages)
        if not results:
            return messages, False
        keys = [await self.judges.key(agent, r.key, r.output) for r in results]
        async with self._turn() as log:
            new: dict[str, dict[str, Any]] = {}  # judged once, on its first request
            for r, key in zip(results, keys, strict=True):
                if key not in self.shown and key not in new:
                    op = dict(op="judge", agent=agent, id=key, tool=r.tool, args=r.args)
                    op["output"] = cut(r.output, self.cap)  # the cut part
                    new[key] = op
            if new:
                await self._judge_all(list(new.values()))
                log.extend(new.values())
            records = []
            for r, key in zip(results, keys, strict=True):
                judged = self.shown[key]
                records.append((r.tool, r.args, r.output if judged is None else judged))
            view = {"op": "view", "agent": agent, "records": records}
            texts = await self._do(view)
            log.append(view)
            answer = self.run.refusals_acted(agent) == "answer"
        return rewrite(messages, results, texts), answer

    async def reask(self, agent: str, answer: str) -> str | None:
        """The user turn asking `agent` again when `answer` only repeats overseer's words
        (once per run and agent, for every worker); None: the answer stands."""
        op = {"op": "reask", "agent": agent, "answer": answer}
        async with self._turn() as log:
            turn = await self._do(op)
            log.append(op)
        return turn if isinstance(turn, str) else None

    async def settle(self, agent: str, answer: str) -> str | None:
        """The answer that stands instead of `agent`'s `answer` (`GuardRun.settle`, for every
        worker); None: it stands."""
        op = {"op": "settle", "agent": agent, "answer": answer}
        async with self._turn() as log:
            instead = await self._do(op)
            log.append(op)
        return instead if isinstance(instead, str) else None

    async def book(
        self,
        agent: str,
        model: str,
        usage: Usage,
        latency_s: float,
        messages: Any,
        output: str,
        logprobs: Sequence[TokenLogprob] = (),
    ) -> None:
        """Book one model call the proxy relayed (the trace gets it with its messages; its
        token logprobs, when the upstream gave them, go to the run for a monitor)."""
        call = {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cached_tokens": usage.cached_prompt_tokens,
            "model": model,
            "latency_s": latency_s,
            "messages": messages,
            "output": output,
            "reported": not usage.estimated,
            "logprobs": [[t.token, t.logprob, [list(a) for a in t.top]] for t in logprobs],
        }
        op = {"op": "book", "agent": agent, "call": call}
        async with self._turn() as log:
            await self._do(op)
            log.append(op)

    async def end(self) -> None:
        """Catch up, then end the run (its trace's `run_end`, when this worker writes it)."""
        async with self._turn():
            self.run.guard.end_run(run=self.run)
        if self.owner:
            await self.store.forget(self.name)


class Runs:
    """The runs this worker serves, found by name, opened on their first request."""

    def __init__(
        self,
        settings: ProxySettings,
        *,
        supervisor_model: Model | None = None,
        store: RunStore | None = None,
        spans: Callable[[str], TraceSink] | None = None,
        judges: Judges | None = None,
    ) -> None:
        self.settings = settings
        self.store: RunStore = store or MemoryStore()
        self.guard = Guard(settings, supervisor_model=supervisor_model)
        # a replica of a run another worker traces writes no trace of its own
        untraced = replace(settings, trace_dir=None)
        self.replica = Guard(untraced, supervisor_model=supervisor_model)
        self.spans = spans
        self.judges = judges or Judges()
        self._runs: dict[str, ProxyRun] = {}

    async def get(self, who: Who, body: Mapping[str, Any]) -> ProxyRun:
        """The run `who` names, opened here on its first request (task: its first user
        message)."""
        found = self._runs.get(who.run)
        if found is not None:
            return found
        owner = await self.store.claim(who.run)
        found = self._runs.get(who.run)  # opened while the claim was on its way
        if found is not None:
            return found
        messages = [m for m in body.get("messages") or () if isinstance(m, Mapping)]
        task = next((text_of(m.get("content")) for m in messages if m.get("role") == "user"), "")
        model = str(body.get("model") or "")
        guard = self.guard if owner else self.replica
        if owner and self.spans is not None:
            with trace_sinks(self.spans):
                run = guard.open(task, model=model)
        else:
            run = guard.open(task, model=model)
        cap = self.settings.max_output_chars
        park(run.trace)  # no file held open between requests
        state = ProxyRun(who.run, run, self.store, owner=owner, judges=self.judges, cap=cap)
        self._runs[who.run] = state
        return state

    async def sweep(self) -> int:
        """End the runs idle for `idle_s` (on every worker); how many ended here."""
        now, ended = time.monotonic(), 0
        for name, state in list(self._runs.items()):
            if now - state.seen < self.settings.idle_s:
                continue
            last = await self.store.last(name)
            if last is not None and time.time() - last < self.settings.idle_s:
                continue  # another worker served it lately
            self._runs.pop(name, None)
            await state.end()
            ended += 1
        return ended

    async def close(self) -> None:
        """End every run (their traces' `run_end`, totals included), then the store."""
        while self._runs:
            _, state = self._runs.popitem()
            await state.end()
        await self.store.close()
