"""Real framework agents on generated page-and-loop tasks, without and with overseer.

Issue 39 items 5-6 and issue 40 item 5. For each framework (LangGraph, OpenAI Agents SDK,
pydantic-ai, smolagents) and each task of `overseer.tasks.pageloop` (a fact on a long noisy
page, a `next_page` trap, a same-snippet search, a failing tool), the framework's own agent runs
against an OpenAI-compatible server in four arms:

- `without`: the plain agent;
- `with`: overseer attached in process as documented (rule tier, default settings);
- `nomask`: as `with`, masking off (`RuleSettings(masking=False)`; issue 39 item 6);
- `proxy`: the plain agent with only its base URL changed, to an `overseer proxy --upstream`
  this script starts for the run (rule tier, default settings).

A counting relay in front of the server (behind the proxy) reads every reply: `usage`
(prompt tokens, the server's own count), and the prompt tokens llama.cpp evaluated
(`timings.prompt_n`, else prompt minus `prompt_tokens_details.cached_tokens`). With `--serve`
each run gets a fresh `overseer serve`, so no run reads another's cached prefix (on one
server, a short request with another prompt between runs did not stop that: llama.cpp restored
an earlier run's prompt); with `--base-url` one server serves all runs. Each run is a row of a
SQLite store (a rerun skips the rows it has); a table per framework pairs each arm with
`without` on the same tasks; `--page` writes the evidence page from the store.

    taskset -c 0 python benchmarks/framework_tasks.py --n 1 --max-calls 6 \
        --serve 'qwen2.5-coder-0.5b --threads 1 --n-ctx 32768' \
        --store results/frameworks.sqlite --page docs/evidence/frameworks.md
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shlex
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from overseer.supervise.rules import RuleSettings
from overseer.tasks.pageloop import DEV_SEED, PageTask, PageTools, make_tasks
from overseer.tasks.pageloop import score_answer as score_page

FRAMEWORKS = ("langgraph", "openai-agents", "pydantic-ai", "smolagents")
ARMS = ("without", "with", "nomask", "proxy")
RULES: dict[str, RuleSettings | None] = {
    "without": None,
    "with": RuleSettings(),
    "nomask": RuleSettings(masking=False),
    "proxy": None,  # the proxy's own defaults
}


# -- the counting relay -------------------------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One chat completion as the server answered it."""

    prompt: int
    completion: int
    evaluated: int
    source: str  # where `evaluated` came from: timings | cached | none
    fetched: int  # fetch_page calls that had run when the request arrived


def read_usage(reply: dict[str, Any]) -> tuple[int, int, int, str]:
    """(prompt, completion, evaluated, source) of one reply (or a stream's last chunks)."""
    u = reply.get("usage") or {}
    prompt, completion = int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0)
    t = reply.get("timings")
    if isinstance(t, dict) and t.get("prompt_n") is not None:
        return prompt, completion, int(t["prompt_n"]), "timings"
    details = u.get("prompt_tokens_details")
    if isinstance(details, dict) and details.get("cached_tokens") is not None:
        return prompt, completion, prompt - int(details["cached_tokens"]), "cached"
    return prompt, completion, prompt, "none"


class Meter:
    """A relay on 127.0.0.1 in front of `target` (an OpenAI base URL) that records each chat
    completion's usage; `probe()` says how many pages the run had fetched at each request."""

    def __init__(self, target: str, probe: Callable[[], int]) -> None:
        self.target, self.probe = urlsplit(target), probe
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{self.target.path}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def book(self, body: bytes, streamed: bool, fetched: int) -> None:
        """Record one reply (a stream: the last chunk with usage, and timings if any)."""
        reply: dict[str, Any] = {}
        if streamed:
            for line in body.decode("utf-8", "replace").splitlines():
                if line.startswith("data: {"):
                    chunk = json.loads(line[6:])
                    reply.update({k: chunk[k] for k in ("usage", "timings") if chunk.get(k)})
        else:
            reply = json.loads(body or b"{}")
        with self._lock:
            self.exchanges.append(Exchange(*read_usage(reply), fetched))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        meter = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                self._relay(None)

            def do_POST(self) -> None:
                self._relay(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _relay(self, data: bytes | None) -> None:
                fetched, t = meter.probe(), meter.target
                conn = http.client.HTTPConnection(t.hostname or "127.0.0.1", t.port, timeout=1800)
                skip = {"host", "content-length", "connection", "accept-encoding"}
                headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
                conn.request(self.command, t.path.removesuffix("/v1") + self.path, data, headers)
                resp = conn.getresponse()
                body, ctype = resp.read(), resp.getheader("Content-Type") or "application/json"
                conn.close()
                if self.path.endswith("/chat/completions") and resp.status == 200:
                    meter.book(body, ctype.startswith("text/event-stream"), fetched)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(resp.status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

        return Handler


# -- the proxy ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def overseer(*args: str, health: str, wait_s: float = 60.0) -> Iterator[str]:
    """`overseer ARGS --port P` on a free port while the block runs: its base URL (/v1)."""
    exe = shutil.which("overseer", path=os.path.dirname(sys.executable)) or "overseer"
    port, url = _free_port(), ""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([exe, *args, "--port", str(port)], stdout=err, stderr=err)
        try:
            deadline = time.monotonic() + wait_s
            while not url:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err.seek(0)
                    said = err.read().decode(errors="replace").strip().splitlines()[-1:]
                    raise RuntimeError(f"overseer {args[0]}: not up on port {port}: {said}")
                with contextlib.suppress(OSError):
                    urllib.request.urlopen(f"http://127.0.0.1:{port}{health}", timeout=2).close()
                    url = f"http://127.0.0.1:{port}/v1"
                time.sleep(0.1)
            yield url
        finally:
            proc.terminate()  # both drain on SIGTERM; the proxy ends every run's trace
            proc.wait(timeout=120)


@contextlib.contextmanager
def overseer_proxy(upstream: str) -> Iterator[tuple[str, Counter[str]]]:
    """`overseer proxy --upstream URL` for one run: its base URL, and the rules that acted
    (filled from its trace once it stopped)."""
    acted = Counter[str]()
    with tempfile.TemporaryDirectory() as traces:
        args = ("proxy", "--upstream", upstream, "--trace-dir", traces)
        with overseer(*args, health="/overseer/health") as url:
            yield url, acted
        for path in Path(traces).glob("**/*.jsonl"):
            for line in path.read_text(encoding="utf-8").splitlines():
                event = json.loads(line)
                if event.get("event") == "rule":
                    acted[str(event.get("rule"))] += 1


# -- the four frameworks --------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One agent run: where the model is, the tools, the question, overseer's rules (None:
    not attached), the caps."""

    url: str
    model: str
    tools: PageTools
    prompt: str
    rules: RuleSettings | None
    max_calls: int
    max_tokens: int
    attached: list[Any] = field(default_factory=list)  # overseer's adapter, once attached


def _acted(stats: dict[str, Any]) -> dict[str, int]:
    out = {k: int(v) for k, v in (stats.get("rules") or {}).items() if v}
    return out | ({"refused": int(stats["blocked"])} if stats.get("blocked") else {})


def langgraph(j: Job) -> str | None:
    """LangChain v1 `create_agent` on ChatOpenAI; overseer: `OverseerMiddleware`."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import ModelCallLimitMiddleware
    from langchain_core.tools import ToolException, tool
    from langchain_openai import ChatOpenAI

    from overseer.integrations.langgraph import GuardSettings, OverseerMiddleware

    chat = ChatOpenAI(
        model=j.model, base_url=j.url, api_key="none", max_tokens=j.max_tokens, temperature=0,
        max_retries=0, timeout=1800,
    )  # fmt: skip
    j.tools.failure = ToolException  # the failing tool's error as LangChain reports one
    lc_tools = [tool(f) for f in j.tools.functions()]
    for t in lc_tools:
        t.handle_tool_error = True  # a ToolException becomes the tool's message
    mw: list[Any] = [OverseerMiddleware(GuardSettings(rules=j.rules))] if j.rules else []
    j.attached.extend(mw)
    cap = ModelCallLimitMiddleware(run_limit=j.max_calls, exit_behavior="error")  # both arms
    agent = create_agent(chat, lc_tools, middleware=[*mw, cap])
    question: Any = {"messages": [{"role": "user", "content": j.prompt}]}
    state = agent.invoke(question, {"recursion_limit": 4 * j.max_calls + 10})  # never binds
    return str(state["messages"][-1].content)


def openai_agents(j: Job) -> str | None:
    """The Agents SDK on OpenAIChatCompletionsModel; overseer: `Overseer().run_sync`."""
    import agents as sdk
    from openai import AsyncOpenAI

    from overseer.integrations.openai_agents import GuardSettings, Overseer

    client = AsyncOpenAI(base_url=j.url, api_key="none", max_retries=0, timeout=1800)
    agent = sdk.Agent(
        name="researcher",
        model=sdk.OpenAIChatCompletionsModel(j.model, client),
        tools=[sdk.function_tool(f) for f in j.tools.functions()],  # it reports tool errors
        model_settings=sdk.ModelSettings(max_tokens=j.max_tokens, temperature=0.0),
    )
    cfg = sdk.RunConfig(tracing_disabled=True)  # no traces posted to api.openai.com
    ov = Overseer(GuardSettings(rules=j.rules)) if j.rules else None
    run = ov.run_sync if ov else sdk.Runner.run_sync
    j.attached.extend([ov] if ov else [])
    return str(run(agent, j.prompt, max_turns=j.max_calls, run_config=cfg).final_output)


def pydantic_ai(j: Job) -> str | None:
    """pydantic-ai on OpenAIChatModel; overseer: `capabilities=[OverseerCapability()]`."""
    from pydantic_ai import Agent, ModelRetry, UsageLimits
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from overseer.integrations.pydantic_ai import GuardSettings, OverseerCapability

    j.tools.failure = ModelRetry  # the failing tool's error as pydantic-ai reports one
    agent = Agent(
        OpenAIChatModel(j.model, provider=OpenAIProvider(base_url=j.url, api_key="none")),
        name="researcher",
        tools=j.tools.functions(),
        retries=j.max_calls,  # the failing tool may be retried until the request limit
        model_settings={"max_tokens": j.max_tokens, "temperature": 0.0, "timeout": 1800},
    )
    cap = [OverseerCapability(GuardSettings(rules=j.rules))] if j.rules else []
    j.attached.extend(cap)
    limits = UsageLimits(request_limit=j.max_calls)
    return str(agent.run_sync(j.prompt, capabilities=cap, usage_limits=limits).output)


def smolagents(j: Job) -> str | None:
    """A smolagents ToolCallingAgent on OpenAIServerModel; overseer: `OverseerSupervisor`."""
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    from overseer.integrations.smolagents import OverseerSupervisor

    model = OpenAIServerModel(
        model_id=j.model, api_base=j.url, api_key="none", max_tokens=j.max_tokens, temperature=0.0
    )
    steps = max(1, j.max_calls - 1)  # at max_steps smolagents asks once more for an answer
    tools = [tool(f) for f in j.tools.functions()]  # it reports a tool's error itself
    agent = ToolCallingAgent(tools=tools, model=model, max_steps=steps, verbosity_level=-1)
    sup = OverseerSupervisor(mode="rules", rules=j.rules) if j.rules else None
    j.attached.extend([sup] if sup else [])
    answer = (sup.attach(agent) if sup else agent).run(j.prompt)
    return None if answer is None else str(answer)


RUNNERS: dict[str, Callable[[Job], str | None]] = {
    "langgraph": langgraph,
    "openai-agents": openai_agents,
    "pydantic-ai": pydantic_ai,
    "smolagents": smolagents,
}


# -- one run, the store ---------------------------------------------------------------------


@dataclass
class Row:
    """One run of one framework on one task in one arm, as stored."""

    model: str
    framework: str
    arm: str
    seed: int
    task: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    evaluated_tokens: int = 0
    evaluated_from: str = "none"
    page_tokens: int = 0  # prompt tokens of the first request that carries the fetched page
    answer: str | None = None
    right: bool = False
    error: str | None = None
    acted: dict[str, int] = field(default_factory=dict)
    tools: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    commit: str = ""  # the code the run used (`+dirty`: src/ differed from it)


def run_one(framework: str, arm: str, task: PageTask, a: Any) -> Row:
    """Run `framework`'s agent on `task` in `arm` against `a.base_url` (or a fresh `overseer
    serve A.SERVE` of its own); the row it gives."""
    tools, row = PageTools(task), Row(a.model, framework, arm, task.seed, task.id)
    start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        base = a.base_url
        if a.serve:
            serve = ("serve", *shlex.split(a.serve))
            base = stack.enter_context(overseer(*serve, health="/health", wait_s=600))
        meter = Meter(base, lambda: tools.ran["fetch_page"])
        stack.callback(meter.close)
        url, acted = meter.base_url, Counter[str]()
        if arm == "proxy":
            url, acted = stack.enter_context(overseer_proxy(meter.base_url))
        job = Job(url, a.model, tools, task.prompt, RULES[arm], a.max_calls, a.max_tokens)
        try:
            row.answer = RUNNERS[framework](job)
        except Exception as exc:  # the framework's own stop (a cap) or a server error
            row.error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        row.acted = _acted(job.attached[0].stats) if job.attached else {}
    row.acted = row.acted or dict(acted)
    ex = meter.exchanges
    row.seconds = round(time.perf_counter() - start, 2)
    row.calls, row.tools = len(ex), dict(tools.ran)
    row.prompt_tokens = sum(e.prompt for e in ex)
    row.completion_tokens = sum(e.completion for e in ex)
    row.evaluated_tokens = sum(e.evaluated for e in ex)
    row.evaluated_from = ",".join(sorted({e.source for e in ex})) or "none"
    row.page_tokens = next((e.prompt for e in ex if e.fetched), 0)
    row.right = row.error is None and score_page(task, row.answer).correct
    row.commit = _commit()
    return row


class Store:
    """Rows in SQLite, keyed by (model, framework, arm, seed, task): a rerun skips them."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS runs (model, framework, arm, seed, task, row TEXT, "
            "PRIMARY KEY (model, framework, arm, seed, task))"
        )
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")

    def has(self, *key: object) -> bool:
        """Whether the run (model, framework, arm, seed, task) is stored."""
        sql = "SELECT 1 FROM runs WHERE (model, framework, arm, seed, task) = (?, ?, ?, ?, ?)"
        return self.db.execute(sql, key).fetchone() is not None

    def put(self, r: Row) -> None:
        key = (r.model, r.framework, r.arm, r.seed, r.task)
        self.db.execute(
            "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?)", (*key, json.dumps(asdict(r)))
        )
        self.db.commit()

    def rows(self) -> list[Row]:
        return [Row(**json.loads(v)) for (v,) in self.db.execute("SELECT row FROM runs")]

    def note(self, key: str, value: str | None = None) -> str | None:
        """Read (or, with a value, write) one line of the run's provenance."""
        if value is not None:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
            self.db.commit()
        found = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if found is None else str(found[0])


# -- paired summaries, tables, the page -----------------------------------------------------

Ratio = tuple[float, float, float]  # sum(arm) / sum(base), paired bootstrap 95% interval


@dataclass(frozen=True)
class Pairing:
    """One arm of one framework against `base` on the tasks both ran."""

    arm: str
    base: str
    runs: list[tuple[Row, Row]]  # (base, arm) per common task

    def ratio(self, pick: Callable[[Row], int], where: Callable[[Row], bool] = bool) -> Ratio:
        from overseer.bench.stats import bootstrap_ratio

        sel = [(pick(b), pick(a)) for b, a in self.runs if where(a)]
        return bootstrap_ratio([s[0] for s in sel], [s[1] for s in sel], seed=0)

    def cells(self) -> list[str]:
        """One table row (the base's own row has no comparison)."""
        from overseer.stats import mcnemar_exact

        arm, n, own = [a for _, a in self.runs], len(self.runs), self.arm == self.base
        wins = sum(a.right and not b.right for b, a in self.runs)
        losses = sum(b.right and not a.right for b, a in self.runs)
        pages = [r.page_tokens for r in arm if r.page_tokens]
        tok, ev = (lambda r: r.prompt_tokens), (lambda r: r.evaluated_tokens)
        acted, quiet = (
            self.ratio(tok, lambda r: bool(r.acted)),
            self.ratio(tok, lambda r: not r.acted),
        )
        paired = [f"{wins}/{losses}", f"{mcnemar_exact(wins, losses):.2f}"]
        return [
            self.arm if own else f"{self.arm} vs {self.base}", str(n),
            f"{sum(r.answer is not None and r.error is None for r in arm)}/{n}",
            f"{sum(r.right for r in arm)}/{n}", *(["", ""] if own else paired),
            f"{sum(map(tok, arm)):,}", "" if own else _x(self.ratio(tok)),
            f"{sum(map(ev, arm)):,}", "" if own else _x(self.ratio(ev)),
            f"{sum(bool(r.acted) for r in arm)}/{n}", "" if own else _x(acted, False),
            "" if own else _x(quiet, False), f"{sum(pages) / max(1, len(pages)):,.0f}",
        ]  # fmt: skip


def _x(r: Ratio, interval: bool = True) -> str:
    if r[0] != r[0]:
        return "-"
    return f"{r[0]:.2f}x ({r[1]:.2f}-{r[2]:.2f})" if interval else f"{r[0]:.2f}x"


def pair(rows: Sequence[Row], framework: str, arm: str, base: str = "without") -> Pairing | None:
    """`arm` against `base` for `framework` on their common (model, seed, task) runs."""

    def of(name: str) -> dict[tuple[str, int, str], Row]:
        mine = (r for r in rows if (r.framework, r.arm) == (framework, name))
        return {(r.model, r.seed, r.task): r for r in mine}

    b, a = of(base), of(arm)
    keys = sorted(b.keys() & a.keys())
    return Pairing(arm, base, [(b[k], a[k]) for k in keys]) if keys else None


COLUMNS = (
    "arm", "n", "answered", "right", "W/L vs base", "McNemar p", "prompt tokens",
    "x base [95%]", "evaluated", "x base [95%] ", "acted on", "x where acted",
    "x where none", "page request",
)  # fmt: skip


def pairings(rows: Sequence[Row], framework: str) -> list[Pairing]:
    """Every arm against `without`, then masking off against masking on (issue 39 item 6)."""
    found = [pair(rows, framework, arm) for arm in ARMS]
    found.append(pair(rows, framework, "nomask", base="with"))
    return [p for p in found if p is not None]


def print_tables(rows: Sequence[Row]) -> None:
    """A rich table per framework."""
    from rich.console import Console
    from rich.table import Table

    for fw in FRAMEWORKS:
        t = Table(title=f"{fw}: server-side prompt tokens and answers, paired on the same tasks")
        for col in COLUMNS:
            t.add_column(col, justify="left" if col == "arm" else "right")
        for p in pairings(rows, fw):
            t.add_row(*p.cells())
        if t.row_count:
            Console(width=200).print(t)


def markdown(rows: Sequence[Row]) -> list[str]:
    """The tables of the page, one block per framework."""
    out = []
    for fw in FRAMEWORKS:
        if ps := pairings(rows, fw):
            out += [f"**{fw}**", "", "| " + " | ".join(c.strip() for c in COLUMNS) + " |"]
            out += [
                "|" + "---|" * len(COLUMNS),
                *("| " + " | ".join(p.cells()) + " |" for p in ps),
                "",
            ]
    return out


def pooled(rows: Sequence[Row], arm: str) -> tuple[float, int, int, int]:
    """Over all frameworks: `arm`'s prompt tokens over `without`'s, right (arm, without), n."""
    runs = [x for fw in FRAMEWORKS if (p := pair(rows, fw, arm)) for x in p.runs]
    base = sum(b.prompt_tokens for b, _ in runs)
    ratio = sum(a.prompt_tokens for _, a in runs) / base if base else float("nan")
    return ratio, sum(a.right for _, a in runs), sum(b.right for b, _ in runs), len(runs)


def criteria(rows: Sequence[Row]) -> list[str]:
    """Issue 39 item 5's three conditions, read from the `with` pairing of each framework."""
    out = []
    for fw in FRAMEWORKS:
        if (p := pair(rows, fw, "with")) is None:
            continue
        right = [sum(r.right for r in side) for side in zip(*p.runs, strict=True)]
        acted = p.ratio(lambda r: r.prompt_tokens, lambda r: bool(r.acted))[0]
        quiet = p.ratio(lambda r: r.prompt_tokens, lambda r: not r.acted)[0]
        marks = [right[1] >= right[0], not acted > 0.5, quiet != quiet or abs(quiet - 1) < 0.01]
        said = [f"right {right[1]} vs {right[0]}", f"{_x((acted,) * 3, False)} where acted",
                f"{_x((quiet,) * 3, False)} where none acted" if quiet == quiet
                else "no run where none acted"]  # fmt: skip
        out.append(
            f"- {fw}: "
            + "; ".join(
                f"{t} ({'met' if m else 'missed'})" for t, m in zip(said, marks, strict=True)
            )
        )
    return out


def masking(rows: Sequence[Row]) -> str:
    """Issue 39 item 6: masking on (`with`) against off (`nomask`), pooled over frameworks."""
    runs = [x for fw in FRAMEWORKS if (p := pair(rows, fw, "nomask", "with")) for x in p.runs]
    on = [sum(r.prompt_tokens for r, _ in runs), sum(r.evaluated_tokens for r, _ in runs)]
    off = [sum(r.prompt_tokens for _, r in runs), sum(r.evaluated_tokens for _, r in runs)]
    if not runs or not all(off):
        return "Masking on against off (issue 39 item 6): not run."
    return (
        f"Masking on against off (issue 39 item 6), {len(runs)} paired runs: prompt tokens "
        f"{on[0]:,} on vs {off[0]:,} off ({on[0] / off[0]:.2f}x); prompt tokens llama.cpp "
        f"evaluated {on[1]:,} on vs {off[1]:,} off ({on[1] / off[1]:.2f}x)."
    )


PAGE_HEAD = """# Real framework agents on generated page-and-loop tasks — with overseer {w} prompt \
tokens (proxy {p}), right {right} vs {base} of {n} runs

Issue 39 items 5-6 and issue 40 item 5: the four frameworks' own agents on tasks of
`src/overseer/tasks/pageloop.py`, written by `benchmarks/framework_tasks.py` (its docstring says
what the arms are and how tokens are counted). Code: {commit}; {date}, {minutes} minutes of runs:

    {server}
    {command}

Task seed {seeds} (29 is the development seed; the held-out seeds named in the module, and seeds
nobody has seen, are the reviewers'), {tasks} tasks, {runs} runs. Evaluated tokens read from:
{sources}; the server's prompt cache {cache}. `x base`: the arm's tokens over its base's on the
same tasks (paired bootstrap 95% interval); `x where acted` / `x where none`: prompt tokens on
the runs where a rule of the arm acted / did not; `page request`: mean prompt tokens of the first
request after fetch_page ran; W/L: right where the base was wrong / the reverse (exact McNemar p).
"""


def write_page(path: Path, rows: Sequence[Row], store: Store) -> None:
    """The evidence page from the stored rows and the run's provenance."""
    w, p = pooled(rows, "with"), pooled(rows, "proxy")
    keys, commits = ("command", "date", "server", "cache"), [r.commit for r in rows]
    head = PAGE_HEAD.format(
        w=_x((w[0],) * 3, False), p=_x((p[0],) * 3, False), right=w[1], base=w[2], n=w[3],
        seeds=", ".join(str(s) for s in sorted({r.seed for r in rows})),
        tasks=len({r.task for r in rows}), runs=len(rows),
        sources=", ".join(sorted({s for r in rows for s in r.evaluated_from.split(",")})),
        minutes=round(sum(r.seconds for r in rows) / 60),
        commit=", ".join(f"{c or '?'} ({n} runs)" for c, n in Counter(commits).most_common()),
        **{k: store.note(k) or "?" for k in keys},
    )  # fmt: skip
    acted = {arm: Counter[str]() for arm in ARMS[1:] if any(r.arm == arm for r in rows)}
    for r in rows:
        if r.arm in acted:
            acted[r.arm].update(r.acted)
    errors = Counter(r.error.split(":")[0] for r in rows if r.error)
    lines = [
        head, *markdown(rows), "What acted (summed over the arm's runs):", "",
        *(f"- `{arm}`: " + (", ".join(f"{k} {v}" for k, v in sorted(c.items())) or "nothing")
          for arm, c in acted.items()), "",
        "Runs ended by an error or a framework cap (no answer): "
        + (", ".join(f"{k} {v}" for k, v in errors.most_common()) or "none") + ".", "",
        "Issue 39 item 5, per framework (`with` vs `without`): answers right with >= without; "
        "prompt tokens <= 0.5x where a rule acted; equal where none did:", "",
        *criteria(rows), "", masking(rows), "", "Each run:", "", *answers(rows), "",
    ]  # fmt: skip
    path.write_text("\n".join(lines), encoding="utf-8")


# -- the command ----------------------------------------------------------------------------


def options(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--base-url", help="an OpenAI-compatible server to run every arm against")
    ap.add_argument(
        "--serve",
        help="instead: `overseer serve SERVE` afresh for each run, e.g. "
        "'qwen2.5-coder-0.5b --threads 1 --n-ctx 32768' (no cache shared by runs)",
    )
    ap.add_argument("--model", default="qwen2.5-coder-0.5b", help="model name to ask for")
    ap.add_argument("--n", type=int, default=6, help="tasks (the first n of the seed's set)")
    ap.add_argument("--seed", type=int, default=DEV_SEED, help="task seed (29: development)")
    ap.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--max-calls", type=int, default=6, help="model calls per run, at most")
    ap.add_argument("--max-tokens", type=int, default=128, help="completion tokens per call")
    ap.add_argument("--store", type=Path, default=Path("results/frameworks.sqlite"))
    ap.add_argument("--page", type=Path, help="write the evidence page here")
    a = ap.parse_args(argv)
    for name, allowed in (("frameworks", FRAMEWORKS), ("arms", ARMS)):
        picked = [x for x in getattr(a, name).split(",") if x]
        if not picked or set(picked) - set(allowed):
            ap.error(f"--{name}: expected some of {','.join(allowed)}, got {getattr(a, name)!r}")
        setattr(a, name, picked)
    if a.max_calls < 2:
        ap.error(f"--max-calls: expected an integer >= 2, got {a.max_calls}")
    return a


def command() -> str:
    """This invocation as typed, with the cores it was pinned to (`taskset`)."""
    cores = sorted(os.sched_getaffinity(0))
    pin = f"taskset -c {','.join(map(str, cores))} " if len(cores) < (os.cpu_count() or 1) else ""
    return pin + shlex.join(["python", "benchmarks/framework_tasks.py", *sys.argv[1:]])


def answers(rows: Sequence[Row]) -> list[str]:
    """Each run in one line: the answer, right or wrong, calls, tools run and what acted."""
    out = ["| framework | arm | task | answer | right | calls | tools run | what acted |"]
    out.append("|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (FRAMEWORKS.index(r.framework), ARMS.index(r.arm), r.task)):
        said = " ".join((r.answer or f"none ({(r.error or '').split(':')[0]})").split())[:70]
        said = said.replace("|", "/").replace("`", "'")
        tools = ", ".join(f"{k} {v}" for k, v in sorted(r.tools.items()))
        acted = ", ".join(f"{k} {v}" for k, v in sorted(r.acted.items())) or "-"
        right = "yes" if r.right else "no"
        out.append(f"| {r.framework} | {r.arm} | {r.task} | `{said}` | {right} | {r.calls} "
                   f"| {tools} | {acted} |")  # fmt: skip
    return out


def _commit() -> str:
    git = ["git", "-C", str(Path(__file__).resolve().parents[1])]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "diff", "--quiet", "HEAD", "--", "src"], capture_output=True)
    return head.stdout.strip() + ("+dirty" if dirty.returncode else "")


def main(argv: Sequence[str] | None = None) -> int:
    a = options(argv)
    try:
        tasks = make_tasks(a.n, a.seed)
    except ValueError as exc:
        print(f"framework_tasks: {exc}", file=sys.stderr)
        return 2
    store = Store(a.store)
    todo = [(fw, arm, t) for t in tasks for fw in a.frameworks for arm in a.arms]
    todo = [x for x in todo if not store.has(a.model, x[0], x[1], a.seed, x[2].id)]
    if todo and not (a.base_url or a.serve):
        print(
            "framework_tasks: --base-url or --serve: expected a server for the runs left",
            file=sys.stderr,
        )
        return 2
    if todo:  # the run's provenance, kept however the run ends
        store.note("command", command())
        store.note("date", datetime.now(UTC).strftime("%Y-%m-%d"))
        fresh = f"overseer serve {a.serve} --port FREE  # a fresh server for each run"
        store.note("server", fresh if a.serve else f"(a server at {a.base_url})")
        shared = "shared by all runs (one server: a run may read an earlier run's prefixes)"
        store.note("cache", "new for each run (a fresh server)" if a.serve else shared)
    for i, (fw, arm, task) in enumerate(todo, 1):
        row = run_one(fw, arm, task, a)
        store.put(row)
        print(f"[{i}/{len(todo)}] {fw} {arm} {task.id}: {row.calls} calls, {row.prompt_tokens:,} "
              f"prompt tokens, {'right' if row.right else 'wrong'}, {row.seconds:.0f} s"
              + (f"; {row.error[:80]}" if row.error else ""), flush=True)  # fmt: skip
    rows = [r for r in store.rows() if r.model == a.model and r.seed == a.seed]
    print_tables(rows)
    if a.page:
        write_page(a.page, rows, store)
        print(f"wrote {a.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
