"""The proxy as a gateway under faults (issue 50, item 3): no file held by an idle run, Redis
down is a JSON 503 naming it (and the health check says so), a malformed message is a JSON 400
on a connection that stays usable, an upstream dying mid-stream is an error the OpenAI SDK
raises, and the overhead header counts booking and tracing."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import openai
import pytest

from overseer.models import Usage
from overseer.proxy import Proxy, ProxySettings
from overseer.runtime import BaseSupervisor, Run
from overseer.runtime.verdicts import Verdict

from .mock_upstream import MockUpstream
from .test_proxy import ASK, KEY, _client, _free_port


@pytest.fixture
def upstream() -> Iterator[MockUpstream]:
    up = MockUpstream()
    yield up
    up.close()


def _fds_under(where: Path) -> list[str]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(where)):
            out.append(target)
    return out


def test_live_idle_runs_hold_no_trace_file_open(upstream: MockUpstream, tmp_path: Path) -> None:
    proxy = Proxy(upstream.base_url, ProxySettings(trace_dir=tmp_path))
    try:
        for i in range(40):
            client = _client(proxy, **{"X-Overseer-Run": f"idle-{i}"})
            client.chat.completions.create(model="mock", messages=ASK)
        assert _fds_under(tmp_path) == []  # 40 live runs, none holding its trace
        traces = sorted(tmp_path.glob("*.jsonl"))
        assert len(traces) == 40 and all('"model_call"' in p.read_text() for p in traces)
    finally:
        proxy.close()
    assert all('"run_end"' in p.read_text().splitlines()[-1] for p in traces)


def _redis(port: int, where: Path) -> subprocess.Popen[bytes]:
    assert shutil.which("redis-server"), "redis-server missing: apt-get install -y redis-server"
    args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(where)]
    proc = subprocess.Popen([*args, "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    for _ in range(500):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.02)
    raise AssertionError("redis-server did not come up")


def test_redis_down_is_a_json_503_naming_it_and_health_says_so(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    port = _free_port()
    server = _redis(port, tmp_path)
    url = f"redis://127.0.0.1:{port}/0"
    proxy = Proxy(upstream.base_url, ProxySettings(trace_dir=tmp_path), redis_url=url)
    base = proxy.base_url.removesuffix("/v1")
    try:
        body = {"model": "mock", "messages": ASK}
        with httpx.Client(timeout=30) as client:
            assert client.post(f"{proxy.base_url}/chat/completions", json=body).status_code == 200
            assert client.get(f"{base}/overseer/health").json()["ok"] is True
            server.terminate()
            server.wait(30)
            for run in ("r1", "r2"):  # a new run and (by fingerprint) the one before
                headers = {"X-Overseer-Run": run} if run == "r1" else {}
                got = client.post(f"{proxy.base_url}/chat/completions", json=body, headers=headers)
                assert got.status_code == 503, got.text
                assert f"run store {url}: unavailable" in got.json()["error"]["message"]
            health = client.get(f"{base}/overseer/health")
            assert health.status_code == 503 and health.json()["ok"] is False
            assert url in health.json()["store"]
    finally:
        if server.poll() is None:
            server.terminate()
        proxy.close()


def test_a_malformed_message_is_a_json_400_and_the_connection_stays_usable(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    proxy = Proxy(upstream.base_url, ProxySettings(trace_dir=tmp_path))
    where = urlsplit(proxy.base_url)
    conn = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
    bad_call = {"id": "a", "type": "function", "function": "fetch"}  # a string, not an object
    bad = [*ASK, {"role": "assistant", "tool_calls": [bad_call]}]
    bad += [{"role": "tool", "tool_call_id": "a", "content": "x"}]
    try:
        replies: list[tuple[int, str | None, Any]] = []
        for messages in (bad, [*ASK, 7], ASK):
            data = json.dumps({"model": "mock", "messages": messages})
            conn.request("POST", "/v1/chat/completions", data, {"content-type": "application/json"})
            if not replies:
                first = conn.sock
            r = conn.getresponse()
            replies.append((r.status, r.getheader("content-type"), json.loads(r.read())))
            assert conn.sock is first  # the same connection, never closed under us
    finally:
        conn.close()
        proxy.close()
    assert [s for s, _, _ in replies] == [400, 400, 200]
    assert {kind for _, kind, _ in replies} == {"application/json"}
    assert replies[0][2]["error"]["message"].startswith("messages[2].tool_calls[0].function:")
    assert replies[1][2]["error"]["message"].startswith("messages[2]: expected a message object")


def _dying_upstream() -> tuple[socket.socket, str]:
    """An upstream that starts a chunked event stream, sends one event, then dies."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    event = b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
    event += b'"choices":[{"index":0,"delta":{"content":"half"}}]}\n\n'

    def serve() -> None:
        try:
            while True:
                conn, _ = srv.accept()
                conn.recv(65536)
                head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                head += b"transfer-encoding: chunked\r\n\r\n"
                conn.sendall(head + f"{len(event):x}\r\n".encode() + event + b"\r\n")
                conn.sendall(b"5\r\ndata:")  # half an event, then gone
                conn.close()
        except OSError:
            return

    threading.Thread(target=serve, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.getsockname()[1]}/v1"


def test_an_upstream_dying_mid_stream_is_an_error_the_sdk_raises(tmp_path: Path) -> None:
    srv, url = _dying_upstream()
    proxy = Proxy(url, ProxySettings(trace_dir=tmp_path))
    try:
        client = openai.OpenAI(base_url=proxy.base_url, api_key=KEY, max_retries=0)
        stream = client.chat.completions.create(model="m", messages=ASK, stream=True)
        got: list[str] = []
        with pytest.raises(openai.APIError, match=r"upstream .*: stream broken off"):
            for chunk in stream:
                got.extend(c.delta.content or "" for c in chunk.choices)
        assert got == ["half"]  # what came before the break was relayed
    finally:
        srv.close()
        proxy.close()


class SlowBooks(BaseSupervisor):
    """A plug-in that takes 0.3 s over every booked model call (its work is overseer's)."""

    name = "slow-books"
    actions = frozenset({"approve"})

    async def on_model_call(self, agent: str, usage: Usage, run: Run) -> Verdict | None:
        time.sleep(0.3)
        return None


def test_the_overhead_header_counts_booking(upstream: MockUpstream, tmp_path: Path) -> None:
    proxy = Proxy(upstream.base_url, ProxySettings(trace_dir=tmp_path, plugins=(SlowBooks(),)))
    try:
        raw = _client(proxy).chat.completions.with_raw_response.create(model="mock", messages=ASK)
        assert float(raw.headers["x-overseer-overhead-ms"]) >= 300
        body: dict[str, Any] = {"model": "mock", "messages": ASK, "stream": True}
        with httpx.stream("POST", f"{proxy.base_url}/chat/completions", json=body) as r:
            text = "".join(r.iter_text())
    finally:
        proxy.close()
    (line,) = [x for x in text.splitlines() if x.startswith(": x-overseer-overhead-ms:")]
    assert float(line.split(":")[-1]) >= 300  # the stream's own total, before its [DONE]
    assert text.rstrip().endswith("data: [DONE]")


def _one_shot_upstream() -> tuple[socket.socket, str]:
    """An upstream that answers the first request on each connection, keeps it open, and
    closes it unanswered when a second request comes on it (its keep-alive ran out just as
    the request was sent): what a pooled connection meets under load."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    reply = json.dumps(
        {"id": "x", "object": "chat.completion", "created": 1, "model": "m",
         "choices": [{"index": 0, "finish_reason": "stop",
                      "message": {"role": "assistant", "content": "ok"}}]}
    ).encode()  # fmt: skip
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
    head += f"content-length: {len(reply)}\r\n\r\n".encode()

    def conn_loop(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            conn.sendall(head + reply)
            conn.recv(65536)  # the next request on this connection: no answer

    def serve() -> None:
        try:
            while True:
                conn, _ = srv.accept()
                threading.Thread(target=conn_loop, args=(conn,), daemon=True).start()
        except OSError:
            return

    threading.Thread(target=serve, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.getsockname()[1]}/v1"


def test_a_pooled_connection_the_upstream_closed_is_sent_again(tmp_path: Path) -> None:
    srv, url = _one_shot_upstream()
    proxy = Proxy(url, ProxySettings(trace_dir=tmp_path))
    try:
        client = _client(proxy)
        got = [client.chat.completions.create(model="m", messages=ASK) for _ in range(3)]
    finally:
        srv.close()
        proxy.close()
    assert [g.choices[0].message.content for g in got] == ["ok"] * 3


def test_the_environments_http_proxy_is_honoured_for_the_upstream(
    upstream: MockUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP_PROXY / NO_PROXY are read once at start, as the SDKs' clients read them: a dead
    proxy named for the upstream is a 502; the upstream in NO_PROXY is reached directly."""
    body = {"model": "mock", "messages": ASK}
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{_free_port()}")  # nothing listens
    for no_proxy, status in (("", 502), ("127.0.0.1", 200)):
        monkeypatch.setenv("NO_PROXY", no_proxy)
        proxy = Proxy(upstream.base_url, ProxySettings(trace_dir=tmp_path))
        try:  # the test's own client ignores the environment: only the proxy reads it
            with httpx.Client(trust_env=False) as client:
                r = client.post(f"{proxy.base_url}/chat/completions", json=body)
        finally:
            proxy.close()
        assert r.status_code == status, r.text
        if status == 502:
            assert upstream.base_url in r.json()["error"]["message"]


def test_the_proxy_command_collects_garbage_as_a_server(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    """`overseer proxy` (one worker) freezes what is alive once it serves and collects the
    young generation after 10,000 objects (`server_gc`); a `Proxy` made inside a user's
    process leaves the collector as it found it. Run in a fresh process, so this one's
    collector is untouched."""
    script = f"""
import gc, threading
import overseer.cli._serve as serve
from overseer.cli._proxy import _serve_one
from overseer.proxy import Proxy, ProxyOptions
proxy = Proxy({upstream.base_url!r})
proxy.close()
print("library", gc.get_freeze_count(), gc.get_threshold()[0])
serve._wait_for_a_stop = lambda: print("served", gc.get_freeze_count() > 0, gc.get_threshold()[0])
_serve_one(ProxyOptions({upstream.base_url!r}), "127.0.0.1", 0, False, None, None, "memory")
"""
    got = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")},
    ).stdout
    assert "library 0 700" in got and "served True 10000" in got, got
