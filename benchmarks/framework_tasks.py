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

A counting relay in front of the server (behind the proxy; `overseer.proxy.UsageMeter`) reads
every reply: `usage` (prompt tokens, the server's own count), and the prompt tokens llama.cpp
evaluated (`timings.prompt_n`, else prompt minus `prompt_tokens_details.cached_tokens`). With
`--serve` each run gets a fresh `overseer serve`, so no run reads another's cached prefix (on
one server, a short request with another prompt between runs did not stop that: llama.cpp
restored an earlier run's prompt); with `--base-url` one server serves all runs. Each run is a
row of a SQLite store (a rerun skips the rows it has); a table per framework pairs each arm with
`without` on the same tasks; `--page` writes the evidence page from the store.

    taskset -c 0 python benchmarks/framework_tasks.py --n 1 --max-calls 6 \
        --serve 'qwen2.5-coder-0.5b --threads 1 --n-ctx 32768' \
        --store results/frameworks.sqlite --page docs/evidence/frameworks.md

The flow: `main` reads the options and runs each (framework, arm, task) left in the store
through `run_one` (this file); the agents, the arms' rules and the overseer processes are in
`_frameworks_runners.py`; the store, the paired tables and the page in `_frameworks_report.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from overseer.proxy import UsageMeter
from overseer.tasks.pageloop import (
    DEV_SEED,
    KINDS,
    PAGE_CHARS,
    UNANSWERABLE,
    PageTask,
    PageTools,
    invents,
    make_tasks,
    says_not_found,
)
from overseer.tasks.pageloop import score_answer as score_page

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the sibling modules, also when loaded by path (the tests)
    sys.path.insert(0, str(HERE))

import _peers_report as peers  # noqa: E402
from _frameworks_report import Row, Store, print_tables, write_page  # noqa: E402
from _frameworks_runners import (  # noqa: E402
    ARMS,
    FRAMEWORKS,
    RULES,
    RUNNERS,
    Job,
    acted_of,
    applies,
    overseer,
    overseer_proxy,
    peer_acted,
)

# -- the tasks: generated page-and-loop ones, AgentDojo's user tasks ------------------------


@dataclass(frozen=True)
class Case:
    """One task of any family as a run needs it: its tools (fresh per run), how an answer
    is scored (with the run's tools: AgentDojo's checks read the environment after the calls),
    and whether an answer states a value the task cannot have."""

    id: str
    seed: int
    prompt: str
    kind: str
    tools: Callable[[], Any]
    score: Callable[[str | None, Any], bool]
    invents: Callable[[str | None], bool]


def rescored(rows: list[Row]) -> list[Row]:
    """The stored rows with each unanswerable pageloop task scored again from its stored
    answer by today's `says_not_found` (a fix to the scorer reaches every arm's stored runs
    alike: "the page does not hold the answer" was once scored wrong); the rest as stored."""
    for r in rows:
        if r.kind in UNANSWERABLE and r.task.startswith("pageloop"):
            r.right = r.error is None and not r.invented and says_not_found(r.answer)
    return rows


def page_case(t: PageTask) -> Case:
    """A pageloop task as a case."""
    unanswerable = t.kind in UNANSWERABLE
    return Case(
        t.id, t.seed, t.prompt, t.kind, lambda: PageTools(t),
        lambda answer, _: score_page(t, answer).correct,
        lambda answer: unanswerable and invents(t, answer),
    )  # fmt: skip


def dojo_cases(suites: Sequence[str], n: int) -> list[Case]:
    """The first `n` non-trivial user tasks of each AgentDojo suite (issue 48 (b)), scored by
    their own utility checks; seed 0 (the suites are fixed)."""
    from overseer.tasks.agentdojo import load_dojo

    out = []
    for suite in suites:
        tasks = [t for t in load_dojo(suite) if t.kind != "trivial"][:n]
        out += [
            Case(t.id, 0, t.prompt, f"dojo-{t.kind}", t.tools, t.score, lambda _: False)
            for t in tasks
        ]
    return out


# -- one run --------------------------------------------------------------------------------


def run_one(framework: str, arm: str, task: PageTask | Case, a: Any) -> Row:
    """Run `framework`'s agent on `task` in `arm` against `a.base_url` (or a fresh `overseer
    serve A.SERVE` of its own); the row it gives."""
    case = task if isinstance(task, Case) else page_case(task)
    tools, row = case.tools(), Row(a.model, framework, arm, case.seed, case.id)
    start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        base = a.base_url
        if a.serve:
            serve = ("serve", *shlex.split(a.serve))
            base = stack.enter_context(overseer(*serve, health="/health", wait_s=600))
        # each chat completion tagged with the page fetches (the tool calls) run when asked
        ran = (lambda b: tools.ran["fetch_page"]) if case.kind in KINDS else _calls_of(tools)
        meter = stack.enter_context(UsageMeter(base, ran))
        url, acted = meter.base_url, Counter[str]()
        if arm == "proxy":
            url, acted = stack.enter_context(overseer_proxy(meter.base_url))
        job = Job(url, a.model, tools, case.prompt, RULES[arm], a.max_calls, a.max_tokens, arm)
        try:
            row.answer = RUNNERS[framework](job)
        except Exception as exc:  # the framework's own stop (a cap) or a server error
            row.error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        row.acted = acted_of(job.attached[0].stats) if job.attached else {}
    done = meter.completions
    row.acted = row.acted or dict(acted) or peer_acted(job.peer, [c.request for c in done])
    row.kind, row.invented = case.kind, case.invents(row.answer)
    row.last_request = done[-1].request if done else None
    row.seconds = round(time.perf_counter() - start, 2)
    row.calls, row.tools = len(done), dict(tools.ran)
    row.prompt_tokens, row.completion_tokens = meter.prompt_tokens, meter.completion_tokens
    row.evaluated_tokens = meter.evaluated_tokens
    row.evaluated_from = ",".join(sorted({c.evaluated_from for c in done})) or "none"
    row.page_tokens = next((c.prompt_tokens for c in done if c.tag), 0)
    row.right = row.error is None and case.score(row.answer, tools)
    row.commit = _commit()
    return row


def _calls_of(tools: Any) -> Callable[[object], int]:
    return lambda body: sum(tools.ran.values())


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
    ap.add_argument(
        "--kinds",
        default="answerable",
        help=f"task kinds, some of {','.join(KINDS)} (n tasks of each; the last three have no "
        "answer to find: right is saying so)",
    )
    ap.add_argument(
        "--chars",
        default=f"{PAGE_CHARS[0]}-{PAGE_CHARS[1]}",
        help="page size range LO-HI (11000-13000: the peers benchmark's pages, corpus pageloop11k)",
    )
    ap.add_argument(
        "--dojo",
        default="",
        help="AgentDojo suites, some of workspace,travel,banking,slack: their first n "
        "non-trivial user tasks instead of pageloop tasks (scored by their own checks)",
    )
    ap.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--max-calls", type=int, default=6, help="model calls per run, at most")
    ap.add_argument("--max-tokens", type=int, default=128, help="completion tokens per call")
    ap.add_argument("--store", type=Path, default=Path("results/frameworks.sqlite"))
    ap.add_argument("--page", type=Path, help="write the evidence page here")
    ap.add_argument("--peers-page", type=Path, help="write the peers page (issue 48) here")
    ap.add_argument(
        "--rows-from",
        type=Path,
        help="first add the rows of an export (docs/evidence/runs/*.rows.jsonl.gz) to the store "
        "(rows it has are kept; another run of one of them is kept as history, under the arm "
        "ARM-COMMIT): a run resumes where the exported one stopped",
    )
    ap.add_argument(
        "--replace",
        action="store_true",
        help="with --rows-from: its rows supersede the stored ones of the same run (a rerun at "
        "newer code); each superseded row is kept as history under the arm ARM-COMMIT",
    )
    ap.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: print the tables and write the pages from the rows stored so far "
        "(no server needed)",
    )
    ap.add_argument(
        "--export",
        type=Path,
        help="at the end, write the store's rows here (gzipped JSON lines, what --rows-from "
        "reads): the evidence a later session resumes from",
    )
    a = ap.parse_args(argv)
    for name, allowed in (("frameworks", FRAMEWORKS), ("arms", ARMS), ("kinds", KINDS)):
        picked = [x for x in getattr(a, name).split(",") if x]
        if not picked or set(picked) - set(allowed):
            ap.error(f"--{name}: expected some of {','.join(allowed)}, got {getattr(a, name)!r}")
        setattr(a, name, picked)
    lo, _, hi = a.chars.partition("-")
    if not (lo.isdigit() and hi.isdigit()):
        ap.error(f"--chars: expected LO-HI, two integers, got {a.chars!r}")
    a.chars = (int(lo), int(hi))
    if a.max_calls < 2:
        ap.error(f"--max-calls: expected an integer >= 2, got {a.max_calls}")
    return a


def command() -> str:
    """This invocation as typed, with the cores it was pinned to (`taskset`)."""
    cores = sorted(os.sched_getaffinity(0))
    pin = f"taskset -c {','.join(map(str, cores))} " if len(cores) < (os.cpu_count() or 1) else ""
    return pin + shlex.join(["python", "benchmarks/framework_tasks.py", *sys.argv[1:]])


def _commit() -> str:
    git = ["git", "-C", str(Path(__file__).resolve().parents[1])]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "diff", "--quiet", "HEAD", "--", "src"], capture_output=True)
    return head.stdout.strip() + ("+dirty" if dirty.returncode else "")


def main(argv: Sequence[str] | None = None) -> int:
    a = options(argv)
    try:
        if a.dojo:
            tasks: list[Any] = dojo_cases([s for s in a.dojo.split(",") if s], a.n)
        else:
            tasks = [
                page_case(t)
                for k in a.kinds
                for t in make_tasks(a.n, a.seed, chars=a.chars, kind=k)
            ]
    except (ValueError, RuntimeError) as exc:
        print(f"framework_tasks: {exc}", file=sys.stderr)
        return 2
    store = Store(a.store)
    if a.rows_from:
        added = store.absorb(a.rows_from, replace=a.replace)
        print(f"framework_tasks: {added} rows added from {a.rows_from}")
    # task by task, every arm of a task in a row: a run cut short leaves complete pairs
    todo = [
        (fw, arm, t) for t in tasks for fw in a.frameworks for arm in a.arms if applies(fw, arm)
    ]
    todo = [x for x in todo if not store.has(a.model, x[0], x[1], x[2].seed, x[2].id)]
    if a.report_only:
        todo = []
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
    seeds = {t.seed for t in tasks}
    rows = [r for r in rescored(store.rows()) if r.model == a.model and r.seed in seeds]
    print_tables(rows)
    if a.page:
        write_page(a.page, rows, store)
        print(f"wrote {a.page}")
    if a.peers_page:
        peers.write(a.peers_page, rescored(store.rows()), store, peers.DECLARED)
        print(f"wrote {a.peers_page}")
    if a.export:
        print(f"exported {store.export(a.export)} rows to {a.export}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
