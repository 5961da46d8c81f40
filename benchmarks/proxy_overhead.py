"""Added latency and saturation throughput of `overseer proxy` under closed-loop load (issue 50,
item 2), beside LiteLLM's proxy, printed as tables; no timing is asserted anywhere.

A mock OpenAI-compatible upstream (starlette on uvicorn: a canned reply, or a canned stream of
4 chunks and a usage chunk) and every target run in processes of their own on 127.0.0.1. The
client (aiohttp) keeps exactly `c` requests in flight (closed loop: each of `c` workers sends
its next request as soon as its reply is read), for `--seconds` per cell and at least two
requests per worker, at c = 1, 50, 200.
Payloads:

- `tiny`: a system prompt and a question (no tool output: the rule tier has nothing to do);
- `agent`: the same, then one assistant turn with two tool calls and their two outputs of
  8,000 characters each, unique to the request (each output is purified);
- `repeat`: an agent resending its history: the same two 8,000-character outputs (same call
  ids) in every request of a run (judged once per run, then only read).

Targets: `direct` (the mock), `overseer rules on`, `rules off` (relay and book only),
`traces on` (rules on, each run's trace written), `litellm` (LiteLLM's proxy with the mock as
its only model, when `--litellm` names its executable, installed in a venv of its own),
`overseer before` (rules on, an earlier commit's src given by `--before`: before and after in
one run, under the same conditions). JSON and streaming. Rounds are interleaved (every cell
once per round, targets in turn), latencies pooled over the rounds. `added` = the target's
percentile minus `direct`'s for the same payload, mode and c; `rps` = completed requests per
second of the cell (at c = 200, the saturation throughput); errors = non-200 replies and failed
requests, never retried. Before each cell the script waits until the targets are idle
(`settle`): work a target goes on doing after a cell is not charged to the next one.

    taskset -c 0 .venv/bin/python benchmarks/proxy_overhead.py --seconds 1 --rounds 2 \\
        --litellm /tmp/litellm-venv/bin/litellm
    taskset -c 0 .venv/bin/python benchmarks/proxy_overhead.py --purify-only   # cost per size

Everything inherits the script's CPU affinity: under `taskset -c 0` the client, the mock and
the target share one core (the direct path's own cost is in every row; `added` is the
target's share of that core). With `--client-cpu 1` the targets keep the script's affinity
and the client and the mock move to core 1: each target has its core to itself, so its
saturation throughput is its own, not the load generator's share of the core as well
(`taskset -c 0 ... --client-cpu 1`: runs H and I). The purification table times the proxy's
judgement of one new tool output (`GuardRun.after_tool`, what a judge thread runs) per size,
the output cut to the proxy's 1,000,000-character cap first, as the proxy does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parents[1]
MOCK = r"""
import json, sys
from starlette.applications import Starlette
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
import uvicorn
U = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
H = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "mock"}
C = [b"data: " + json.dumps(dict(H, choices=[{"index": 0, "delta": {"content": w}}])).encode()
     + b"\n\n" for w in ["a", "b", "c", "d"]]
C += [b"data: " + json.dumps(dict(H, choices=[], usage=U)).encode() + b"\n\n", b"data: [DONE]\n\n"]
R = json.dumps({"id": "x", "object": "chat.completion", "created": 1, "model": "mock", "usage": U,
     "choices": [{"index": 0, "finish_reason": "stop",
                  "message": {"role": "assistant", "content": "ok"}}]}).encode()
async def chat(request):
    body = await request.body()
    if b'"stream":true' in body:
        async def gen():
            for c in C:
                yield c
        return StreamingResponse(gen(), media_type="text/event-stream")
    return Response(R, media_type="application/json")
app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="error", backlog=4096,
            http="httptools")
"""

LEVELS = (1, 50, 200)
PAYLOADS = ("tiny", "agent", "repeat")
ASK = [{"role": "system", "content": "You research."}, {"role": "user", "content": "Find X."}]
KEY = "sk-bench-" + os.urandom(8).hex()
LITELLM = """model_list:
  - model_name: mock
    litellm_params: {{model: openai/mock, api_base: "{upstream}", api_key: sk-mock}}
litellm_settings: {{telemetry: false, drop_params: true}}
general_settings: {{master_key: "{key}"}}
"""
_WORDS = (
    "river bridge opened spring winter council record museum station north market harbour "
    "ticket archive library century tower garden street square village railway mayor census"
)
WORDS = _WORDS.split()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def page(rng: random.Random, n: int = 8000) -> str:
    """A page-like tool output of `n` characters: sentences of common words, unique."""
    out: list[str] = []
    size = 0
    while size < n:
        s = " ".join(rng.choices(WORDS, k=rng.randint(8, 20))).capitalize() + f" {rng.random()}."
        out.append(s)
        size += len(s) + 1
    return " ".join(out)[:n]


def with_outputs(a: str, b: str, tag: str) -> list[dict[str, Any]]:
    """The question, one assistant turn calling fetch twice, and the two outputs."""
    calls = [
        {"id": f"{tag}-{i}", "type": "function",
         "function": {"name": "fetch", "arguments": f'{{"url": "{tag}/{i}"}}'}}
        for i in (0, 1)
    ]  # fmt: skip
    return [
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": f"{tag}-0", "content": a},
        {"role": "tool", "tool_call_id": f"{tag}-1", "content": b},
    ]


@dataclass
class Load:
    """The bodies a cell sends: unique pages are taken from a pool made once."""

    pool: list[str]
    taken: int = 0

    def body(self, payload: str, stream: bool, run: str, worker: int) -> bytes:
        if payload == "tiny":
            msgs: list[dict[str, Any]] = ASK
        elif payload == "agent":
            i, self.taken = self.taken, self.taken + 2
            a, b = self.pool[i % len(self.pool)], self.pool[(i + 1) % len(self.pool)]
            msgs = with_outputs(a, b, f"{run}-{i}")
        else:  # the run's two outputs, the same in every request it sends
            n = len(self.pool)
            a, b = self.pool[(2 * worker) % n], self.pool[(2 * worker + 1) % n]
            msgs = with_outputs(a, b, f"{run}-w{worker}")
        return orjson.dumps({"model": "mock", "messages": msgs, "stream": stream})


@dataclass
class Cell:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    why: Counter[str] = field(default_factory=Counter)  # each error, by what it was
    done: int = 0
    wall: float = 0.0


async def _one(session: aiohttp.ClientSession, url: str, data: bytes, run: str, cell: Cell) -> None:
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    headers["X-Overseer-Run"] = run
    t = time.perf_counter()
    try:
        async with session.post(url, data=data, headers=headers) as r:
            body = await r.read()
            why = "" if r.status == 200 else f"{r.status} {body[:160]!r}"
    except (aiohttp.ClientError, TimeoutError) as exc:
        why = f"{type(exc).__name__}: {exc}"
    if not why:
        cell.latencies.append(time.perf_counter() - t)
    else:
        cell.errors += 1
        cell.why[why] += 1
    cell.done += 1


async def run_cell(
    url: str, load: Load, payload: str, stream: bool, c: int, seconds: float, tag: str
) -> Cell:
    """`c` workers, each sending its next request as soon as its reply is read, until
    `seconds` have passed and each has sent two (so that `c` are in flight at once even on a
    slow start; a request under way at the end is finished and counted)."""
    cell = Cell()
    # idle connections dropped after 4 s, under the mock's 5 s keep-alive (else a request
    # sent on one the mock is closing fails: a harness error, not the target's)
    conn = aiohttp.TCPConnector(limit=c, keepalive_timeout=4)
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:
        start = time.perf_counter()
        end = start + seconds

        async def worker(w: int) -> None:
            run, sent = f"{tag}-{w}", 0
            while sent < 2 or time.perf_counter() < end:  # every worker's requests in flight
                await _one(session, url, load.body(payload, stream, run, w), run, cell)
                sent += 1

        await asyncio.gather(*(worker(w) for w in range(c)))
        cell.wall = time.perf_counter() - start
    return cell


def _start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "LITELLM_LOG": "ERROR", **(env or {})}
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def _wait(url: str) -> None:
    body = orjson.dumps({"model": "mock", "messages": ASK})
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}

    async def ping() -> bool:
        try:
            async with aiohttp.ClientSession() as s, s.post(url, data=body, headers=headers) as r:
                return r.status == 200
        except aiohttp.ClientError:
            return False

    for _ in range(1200):
        if asyncio.run(ping()):
            return
        time.sleep(0.1)
    raise SystemExit(f"{url}: did not come up")


def _before_env(src: str, tmp: Path) -> dict[str, str]:
    """The environment of the `--before` proxy: its checkout's src first on the path, and
    uvloop hidden when that checkout did not depend on it (before e3e8e7a uvicorn ran
    asyncio's loop; read from the checkout's pyproject.toml)."""
    project = tomllib.loads((Path(src).parent / "pyproject.toml").read_text())["project"]
    if any(d.startswith("uvloop") for d in project["dependencies"]):
        return dict(os.environ, PYTHONPATH=src)
    hide = tmp / "no-uvloop"
    hide.mkdir(exist_ok=True)
    (hide / "uvloop.py").write_text('raise ImportError("uvloop: not a dependency then")\n')
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(hide), src]))


def start_targets(
    litellm: str | None, tmp: Path, before: str | None = None, client_cpu: int | None = None
) -> tuple[dict[str, str], list[Any]]:
    """The mock (on `client_cpu` when given), the three overseer proxies, the `--before` one
    and LiteLLM (when given): their chat URLs."""
    up = _free_port()
    mock = [sys.executable, "-c", MOCK, str(up)]
    procs = [_start(mock if client_cpu is None else ["taskset", "-c", str(client_cpu), *mock])]
    upstream = f"http://127.0.0.1:{up}/v1"
    targets = {"direct": f"{upstream}/chat/completions"}
    cli = [sys.executable, "-m", "overseer.cli", "proxy", "--upstream", upstream]
    kinds = {
        "overseer rules on": ["--trace-dir", ""],
        "overseer rules off": ["--trace-dir", "", "--no-rules"],
        "overseer traces on": ["--trace-dir", str(tmp / "traces")],
    }
    for name, extra in kinds.items():
        port = _free_port()
        procs.append(_start([*cli, *extra, "--port", str(port)]))
        targets[name] = f"http://127.0.0.1:{port}/v1/chat/completions"
    if before:
        port = _free_port()
        env = _before_env(before, tmp)
        procs.append(_start([*cli, "--trace-dir", "", "--port", str(port)], env))
        targets["overseer before"] = f"http://127.0.0.1:{port}/v1/chat/completions"
    if litellm:
        port = _free_port()
        cfg = tmp / "litellm.yaml"
        cfg.write_text(LITELLM.format(upstream=upstream, key=KEY))
        procs.append(_start([litellm, "--config", str(cfg), "--port", str(port)]))
        targets["litellm"] = f"http://127.0.0.1:{port}/v1/chat/completions"
    for url in targets.values():
        _wait(url)
    return targets, procs


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")


def table(cells: dict[tuple[str, str, int, str], list[Cell]]) -> list[str]:
    """Markdown rows: one per payload, mode, c and target, pooled over the rounds."""
    cols = "| payload | mode | c | target | n | errors | rps | p50 ms | p95 ms | p99 ms "
    cols += "| added p50 | added p95 | added p99 |"
    out = [cols, "|" + "---|" * 13]
    for (payload, mode, c, target), got in cells.items():
        lat = [x for cell in got for x in cell.latencies]
        base = [x for cell in cells[payload, mode, c, "direct"] for x in cell.latencies]
        errors = sum(cell.errors for cell in got)
        rps = sum(cell.done for cell in got) / max(sum(cell.wall for cell in got), 1e-9)
        ps = [_pct(lat, q) for q in (0.5, 0.95, 0.99)]
        added = [p - _pct(base, q) for p, q in zip(ps, (0.5, 0.95, 0.99), strict=True)]
        row = [payload, mode, str(c), target, str(len(lat)), str(errors), f"{rps:.0f}"]
        row += [f"{p:.2f}" for p in ps] + [f"{a:+.2f}" for a in added]
        out.append("| " + " | ".join(row) + " |")
    return out


def _cpu_ticks(procs: list[Any]) -> int:
    """The CPU time the processes have used so far, in clock ticks (`/proc/PID/stat`)."""
    total = 0
    for proc in procs:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total


def settle(procs: list[Any], limit_s: float = 10.0) -> float:
    """Wait until the targets are idle (under 2% of a core over 0.25 s: a target may go on
    working after a cell's last reply, LiteLLM's logging or a trace being written, and that
    work would be charged to the next cell), at most `limit_s`; the seconds waited."""
    t0 = time.perf_counter()
    tick = os.sysconf("SC_CLK_TCK")
    while time.perf_counter() - t0 < limit_s:
        before = _cpu_ticks(procs)
        time.sleep(0.25)
        if (_cpu_ticks(procs) - before) / tick < 0.02 * 0.25:
            break
    return time.perf_counter() - t0


def measure(targets: dict[str, str], a: argparse.Namespace, procs: list[Any]) -> list[str]:
    rng = random.Random(a.seed)
    load = Load([page(rng) for _ in range(a.pool)])
    cells: dict[tuple[str, str, int, str], list[Cell]] = {}
    for name, url in targets.items():  # warm each target (and LiteLLM's first-call paths)
        asyncio.run(run_cell(url, load, "agent", False, 4, 0.5, f"warm-{name[:3]}"))
    payloads = a.payloads.split(",")
    levels = [int(x) for x in a.levels.split(",")]
    modes = [m == "stream" for m in a.modes.split(",")]
    for r in range(a.rounds):
        for payload in payloads:
            for stream in modes:
                for c in levels:
                    names = list(targets)
                    rng.shuffle(names)  # no target always first (or last) in a round
                    for name in names:
                        tag = f"r{r}-{payload}-{int(stream)}-{c}-{name[:12].replace(' ', '')}"
                        waited = settle(procs)
                        got = asyncio.run(
                            run_cell(targets[name], load, payload, stream, c, a.seconds, tag)
                        )
                        key = (payload, "stream" if stream else "json", c, name)
                        cells.setdefault(key, []).append(got)
                        say = f"{key}: {len(got.latencies)} ok, {got.errors} errors"
                        say += f" (after {waited:.2f} s of settling)"
                        print(say, dict(got.why), file=sys.stderr, flush=True)
    order = {n: i for i, n in enumerate(targets)}
    ordered = dict(sorted(cells.items(), key=lambda kv: (*kv[0][:3], order[kv[0][3]])))
    return table(ordered)


def purify_costs(sizes: list[int], cap: int) -> list[str]:
    """The proxy's judgement of one new tool output per size (median of a few runs)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from purify_speed import corpus

    from overseer.integrations.guard import Guard, GuardSettings

    guard = Guard(GuardSettings(), trace_dir=None)
    warm = guard.open("warm")
    warm.after_tool("a", "fetch", {"url": "w"}, corpus(8000)[0])
    out = ["| output chars | judged chars | kept chars | judgement ms (median) | runs |"]
    out.append("|---|---|---|---|---|")
    for size in sizes:
        text, question = corpus(size)
        judged = text[:cap]
        times, kept = [], 0
        runs = 3 if size >= 1_000_000 else 15
        for i in range(runs):
            run = guard.open(question)
            t0 = time.perf_counter()
            kept = len(run.after_tool("a", "fetch", {"url": f"u{i}"}, judged))
            times.append(time.perf_counter() - t0)
            guard.end_run(run=run)
        ms = sorted(times)[len(times) // 2] * 1000
        out.append(f"| {size:,} | {len(judged):,} | {kept:,} | {ms:.2f} | {runs} |")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=1.0, help="per cell and round")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--pool", type=int, default=2000, help="unique 8,000-char pages made")
    p.add_argument("--seed", type=int, default=50)
    p.add_argument("--litellm", help="LiteLLM's executable (its own venv); none: no rows")
    p.add_argument("--payloads", default=",".join(PAYLOADS))
    p.add_argument("--levels", default=",".join(map(str, LEVELS)))
    p.add_argument("--modes", default="json,stream")
    p.add_argument(
        "--before",
        help="another checkout's src directory (a worktree of an earlier commit): its proxy, "
        "rules on, on asyncio's loop, is one more target, 'overseer before'",
    )
    p.add_argument(
        "--client-cpu",
        type=int,
        help="the core the client and the mock run on (the targets keep the script's cores)",
    )
    p.add_argument("--purify-only", action="store_true")
    p.add_argument("--sizes", default="1000,8000,100000,10000000")
    a = p.parse_args()
    t0 = time.perf_counter()
    affinity = os.sched_getaffinity(0)
    print(f"CPU affinity: {sorted(affinity)}; seed {a.seed}")
    if not a.purify_only:
        if a.litellm and not Path(a.litellm).exists():
            print(f"litellm: {a.litellm} not found: no LiteLLM rows", file=sys.stderr)
            a.litellm = None
        tmp = Path(tempfile.mkdtemp(prefix="proxy-bench-"))
        targets, procs = start_targets(a.litellm, tmp, a.before, a.client_cpu)
        if a.client_cpu is not None:
            os.sched_setaffinity(0, {a.client_cpu})
            print(f"client and mock on core {a.client_cpu}")
        try:
            rows = measure(targets, a, procs)
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(30)
        print(f"\n{a.rounds} rounds x {a.seconds} s per cell, closed loop\n")
        print("\n".join(rows))
    if a.client_cpu is not None:  # the judgement timed on the targets' cores
        os.sched_setaffinity(0, affinity)
    print("\npurification: the proxy's judgement of one new tool output\n")
    print("\n".join(purify_costs([int(x) for x in a.sizes.split(",")], 1_000_000)))
    print(f"\n{time.perf_counter() - t0:.0f} s in all")


if __name__ == "__main__":
    main()
