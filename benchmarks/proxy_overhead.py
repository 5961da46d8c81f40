"""Added latency of `overseer proxy` over a mock upstream (issue 40, item 4), printed as a table.

A mock OpenAI-compatible upstream (starlette on uvicorn, a canned reply or a canned stream of
5 chunks) and the proxy each run in a process of their own on 127.0.0.1; the client (httpx,
asyncio) sends `--n` chat requests per configuration at concurrency 1, 50 and 200, straight to
the upstream, through `overseer proxy` (rule tier on and off) and through LiteLLM's proxy
(`litellm --config`, the same mock as its only model) when `litellm[proxy]` is installed,
streaming and not. Added latency is a target's percentile minus the direct percentile at the
same concurrency and mode; requests per second are the target's. Errors are counted, never
retried. LiteLLM is never a dependency of overseer: install it into the venv for this script only.

    .venv/bin/pip install 'litellm[proxy]'     # optional: the LiteLLM rows
    taskset -c 0 .venv/bin/python benchmarks/proxy_overhead.py --n 200   # all on one core
    .venv/bin/python benchmarks/proxy_overhead.py --n 200 --target-core 1 --client-core 0

With `--rate R` the load is open loop: request i leaves at i / R seconds, at most the
concurrency in flight, so latency is measured below saturation (as a load generator with
think time, e.g. Locust, measures it); without it each of the concurrency's slots sends again
as soon as its reply is in, and the rows at 50 and 200 measure the queue at saturation.
With `--target-core` the proxies (and LiteLLM) run on that core, and the client and the mock
upstream on `--client-core`: a proxy then has a core of its own, as a deployed gateway has.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

MOCK = r"""
import json, sys
from starlette.applications import Starlette
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route
import uvicorn
U = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
H = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "mock"}
C = [b"data: " + json.dumps(dict(H, choices=[{"index": 0, "delta": {"content": w}}])).encode()
     + b"\n\n" for w in ["a", "b", "c", "d"]]
C += [b"data: " + json.dumps(dict(H, choices=[], usage=U)).encode() + b"\n\n", b"data: [DONE]\n\n"]
R = {"id": "x", "object": "chat.completion", "created": 1, "model": "mock", "usage": U,
     "choices": [{"index": 0, "finish_reason": "stop",
                  "message": {"role": "assistant", "content": "ok"}}]}
async def chat(request):
    body = json.loads(await request.body())
    if body.get("stream"):
        async def gen():
            for c in C:
                yield c
        return StreamingResponse(gen(), media_type="text/event-stream")
    return JSONResponse(R)
app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="error", backlog=2048)
"""

LEVELS = (1, 50, 200)
ASK = [{"role": "system", "content": "You research."}, {"role": "user", "content": "Find X."}]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


LITELLM = """model_list:
  - model_name: mock
    litellm_params: {{model: openai/mock, api_base: "{upstream}", api_key: sk-mock}}
litellm_settings: {{telemetry: false, drop_params: true}}
general_settings: {{master_key: "{key}"}}
"""
#: every target gets this key (LiteLLM checks it as its master key; the others pass it on)
KEY = "sk-bench-" + os.urandom(16).hex()
AUTH = f"Bearer {KEY}"


def _wait(url: str) -> None:
    for _ in range(1200):
        try:
            body = {"model": "mock", "messages": ASK}
            httpx.post(url, json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise SystemExit(f"{url}: did not come up")


def _start(args: list[str], core: int | None = None) -> subprocess.Popen[bytes]:
    """Start `args` quietly, pinned to `core` when given."""
    args = ["taskset", "-c", str(core), *args] if core is not None else args
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "LITELLM_LOG": "ERROR"}
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


async def _load(
    url: str, n: int, conc: int, stream: bool, rate: float = 0.0
) -> tuple[list[float], int, float]:
    """(latencies in s, errors, wall s) of `n` requests, `conc` at a time; with `rate`, request
    i is sent at i / rate s (an open-loop offered load), still at most `conc` in flight."""
    limits = httpx.Limits(max_connections=conc, max_keepalive_connections=conc)
    body = {"model": "mock", "messages": ASK, "stream": stream}
    lat: list[float] = []
    errors = 0
    sem = asyncio.Semaphore(conc)
    start = time.perf_counter()
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def one(i: int) -> None:
            nonlocal errors
            if rate:
                await asyncio.sleep(start + i / rate - time.perf_counter())
            async with sem:
                t = time.perf_counter()
                try:
                    headers = {
                        "X-Overseer-Run": f"bench-{i % 50}",
                        "Authorization": f"Bearer {KEY}",
                    }
                    async with client.stream("POST", url, json=body, headers=headers) as r:
                        async for _ in r.aiter_raw():
                            pass
                        if r.status_code != 200:
                            errors += 1
                            return
                except httpx.HTTPError:
                    errors += 1
                    return
                lat.append(time.perf_counter() - t)

        await asyncio.gather(*(one(i) for i in range(n)))
        return lat, errors, time.perf_counter() - start


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=400, help="requests per configuration")
    p.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    p.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="offered requests per second (open loop); 0: each slot sends again at once",
    )
    p.add_argument("--target-core", type=int, help="pin the proxies to this core")
    p.add_argument("--client-core", type=int, help="pin the client and the mock to this core")
    a = p.parse_args()
    if a.client_core is not None:
        os.sched_setaffinity(0, {a.client_core})
    up, on, off = _free_port(), _free_port(), _free_port()
    procs = [_start([sys.executable, "-c", MOCK, str(up)])]
    upstream = f"http://127.0.0.1:{up}/v1"
    proxy = [sys.executable, "-m", "overseer.cli", "proxy", "--upstream", upstream]
    proxy += ["--trace-dir", ""]
    procs.append(_start([*proxy, "--port", str(on)], a.target_core))
    procs.append(_start([*proxy, "--port", str(off), "--no-rules"], a.target_core))
    targets = {
        "direct": f"{upstream}/chat/completions",
        "overseer rules on": f"http://127.0.0.1:{on}/v1/chat/completions",
        "overseer rules off": f"http://127.0.0.1:{off}/v1/chat/completions",
    }
    litellm = shutil.which("litellm", path=os.path.dirname(sys.executable))
    if litellm is not None:
        lport = _free_port()
        cfg = Path(tempfile.mkdtemp()) / "litellm.yaml"
        cfg.write_text(LITELLM.format(upstream=upstream, key=KEY))
        procs.append(_start([litellm, "--config", str(cfg), "--port", str(lport)], a.target_core))
        targets["litellm"] = f"http://127.0.0.1:{lport}/v1/chat/completions"
    else:
        print("litellm not installed: no LiteLLM rows", file=sys.stderr)
    rows: list[dict[str, Any]] = []
    try:
        for url in targets.values():
            _wait(url)
        for stream in (False, True):
            for conc in LEVELS:
                base: list[float] = []
                for name, url in targets.items():
                    asyncio.run(_load(url, min(a.n, 50), conc, stream, a.rate))  # warm up
                    lat, errors, wall = asyncio.run(_load(url, a.n, conc, stream, a.rate))
                    if name == "direct":
                        base = lat
                    rows.append(
                        {
                            "mode": "stream" if stream else "json",
                            "concurrency": conc,
                            "target": name,
                            "n": a.n,
                            "errors": errors,
                            "rps": round(len(lat) / wall, 1),
                            **{
                                f"p{int(q * 100)}_ms": round(_pct(lat, q) * 1000, 2)
                                for q in (0.5, 0.95, 0.99)
                            },
                            **{
                                f"added_p{int(q * 100)}_ms": round(
                                    (_pct(lat, q) - _pct(base, q)) * 1000, 2
                                )
                                for q in (0.5, 0.95, 0.99)
                            },
                        }
                    )
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    cols = [
        "mode",
        "concurrency",
        "target",
        "n",
        "errors",
        "rps",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "added_p50_ms",
        "added_p95_ms",
        "added_p99_ms",
    ]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
