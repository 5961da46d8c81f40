"""Run state in Redis (issue 40, item 3): a run whose requests are spread over two proxy
workers keeps one ledger and one loop memory. A real `redis-server` (Debian's) is started by
the fixture on a free port with a temp dir, and stopped after."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from overseer.proxy import Proxy, ProxySettings
from overseer.supervise.rules import RuleSettings

from .mock_upstream import MockUpstream
from .test_proxy import _looping


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    import redis

    # a missing server fails the test, never skips it: scripts/test.sh installs it
    assert shutil.which("redis-server"), "redis-server missing: apt-get install -y redis-server"
    port, where = _free_port(), tmp_path / "redis"
    where.mkdir()
    args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(where)]
    args += ["--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    try:
        for _ in range(500):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                threading.Event().wait(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        client.close()
        proc.terminate()
        proc.wait(30)


@pytest.fixture
def upstream() -> Iterator[MockUpstream]:
    up = MockUpstream()
    yield up
    up.close()


def _post(client: httpx.Client, base: str, messages: list[Any]) -> httpx.Response:
    body = {"model": "mock", "messages": messages}
    r = client.post(f"{base}/chat/completions", json=body, headers={"X-Overseer-Run": "spread"})
    assert r.status_code == 200, r.text
    return r


#: requests of one looping run: the last one repeats the call once past the default loop limit
LOOPS = RuleSettings().loop_limit + 1


def _check_one_run(upstream: MockUpstream, trace: Path) -> None:
    """The identical call past the loop limit was refused as its tool result, and the trace
    (written by the run's first worker) books every call of the run."""
    sent = [body["messages"] for _, body in upstream.requests]
    last = sent[-1][-1]
    assert [m[-1]["content"] for m in sent] == ["Not here."] * (LOOPS - 1) + [last["content"]]
    assert last["role"] == "tool" and "fetch" in last["content"]
    assert last["content"] != "Not here."
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    calls = [e for e in events if e["event"] == "model_call"]
    assert len(calls) == LOOPS
    assert events[-1]["event"] == "run_end" and events[-1]["usage"]["input_tokens"] == 11 * LOOPS
    assert sum(e["event"] == "run_start" for e in events) == 1


def test_two_replicas_on_one_redis_share_a_runs_ledger_and_loop_memory(
    upstream: MockUpstream, redis_url: str, tmp_path: Path
) -> None:
    settings = ProxySettings(trace_dir=tmp_path)
    a = Proxy(upstream.base_url, settings, redis_url=redis_url)
    b = Proxy(upstream.base_url, settings, redis_url=redis_url)
    try:
        with httpx.Client() as client:
            first = _post(client, a.base_url, _looping(1))
            for n in range(2, LOOPS + 1):  # every other request to the other replica
                sent = _post(client, (b if n % 2 == 0 else a).base_url, _looping(n))
                assert sent.headers["x-overseer-run"] == "spread"
    finally:
        b.close()
        a.close()
    traces = sorted(tmp_path.glob("*.jsonl"))
    assert traces == [tmp_path / f"{first.headers['x-overseer-trace']}.jsonl"]
    _check_one_run(upstream, traces[0])


def test_overseer_proxy_workers_2_share_a_run_through_redis(
    upstream: MockUpstream, redis_url: str, tmp_path: Path
) -> None:
    port = _free_port()
    cmd = [sys.executable, "-m", "overseer.cli", "proxy", "--upstream", upstream.base_url]
    cmd += ["--port", str(port), "--trace-dir", str(tmp_path), "--workers", "2"]
    cmd += ["--redis", redis_url]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    clients: dict[int, httpx.Client] = {}
    try:
        for _ in range(600):  # until the port answers and two connections reach two workers
            c = httpx.Client(limits=httpx.Limits(max_connections=1))
            try:
                pid = c.get(f"{base}/overseer/health").json()["worker"]
            except httpx.TransportError:
                c.close()
                threading.Event().wait(0.05)
                continue
            if pid in clients:
                c.close()
            else:
                clients[pid] = c
            if len(clients) == 2:
                break
        assert len(clients) == 2, "the kernel gave every connection to one worker"
        one, two = clients.values()
        for n in range(1, LOOPS + 1):  # every other request to the other worker
            _post(one if n % 2 else two, f"{base}/v1", _looping(n))
    finally:
        for c in clients.values():
            c.close()
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    (trace,) = tmp_path.glob("*.jsonl")
    _check_one_run(upstream, trace)
