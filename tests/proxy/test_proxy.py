"""`overseer proxy` against a real OpenAI-compatible upstream on 127.0.0.1 (issue 40, item 2):
relayed replies and streams, runs and agents read from headers, body or fingerprints, the rule
tier on the messages (a loop refused as the tool result), budgets raised by the OpenAI SDK,
API keys passed through and never written to the trace."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from overseer.proxy import Proxy, ProxySettings, identify
from overseer.supervise.rules import RuleSettings

from .mock_upstream import MockUpstream

ASK: list[Any] = [
    {"role": "system", "content": "You research."},
    {"role": "user", "content": "Find X."},
]
KEY = "sk-secret-never-logged"


@pytest.fixture
def upstream() -> Iterator[MockUpstream]:
    up = MockUpstream()
    yield up
    up.close()


def _proxy(upstream: MockUpstream, tmp_path: Path, **kw: Any) -> Proxy:
    """A proxy whose loop breaker refuses the third identical call (the scenarios below)."""
    kw.setdefault("rules", RuleSettings(loop_limit=2))
    return Proxy(upstream.base_url, ProxySettings(trace_dir=tmp_path, **kw))


def _client(proxy: Proxy, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=proxy.base_url, api_key=KEY, max_retries=0, default_headers=headers
    )


def _looping(n: int) -> list[Any]:
    """A conversation where the agent fetched the same page `n` times, same result each."""
    out: list[Any] = list(ASK)
    for i in range(n):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "fetch", "arguments": '{"url": "x"}'},
        }
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": "Not here."})
    return out


def test_a_reply_is_relayed_and_booked_to_the_run_the_headers_name(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    proxy = _proxy(upstream, tmp_path)
    try:
        raw = _client(proxy, **{"X-Overseer-Run": "r1", "X-Overseer-Agent": "researcher"})
        r = raw.chat.completions.with_raw_response.create(model="mock", messages=ASK)
        assert r.parse().choices[0].message.content == "ok"
        assert r.headers["x-overseer-run"] == "r1"
        assert r.headers["x-overseer-agent"] == "researcher"
        assert float(r.headers["x-overseer-overhead-ms"]) >= 0
        trace_id = r.headers["x-overseer-trace"]
        ((headers, _),) = upstream.requests
        assert headers["authorization"] == f"Bearer {KEY}"  # passed through
        stream = raw.chat.completions.create(model="mock", messages=ASK, stream=True)
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "ok"
    finally:
        proxy.close()
    trace = (tmp_path / f"{trace_id}.jsonl").read_text()
    events = [json.loads(line) for line in trace.splitlines()]
    calls = [e for e in events if e["event"] == "model_call"]
    assert [c["gen_ai.agent.name"] for c in calls] == ["researcher", "researcher"]
    assert [c["gen_ai.usage.input_tokens"] for c in calls] == [11, 11]
    assert events[-1]["event"] == "run_end" and KEY not in trace


def test_a_loop_is_refused_as_the_tool_result(upstream: MockUpstream, tmp_path: Path) -> None:
    proxy = _proxy(upstream, tmp_path)
    try:
        client = _client(proxy, **{"X-Overseer-Run": "loop"})
        for n in (1, 2, 3):
            client.chat.completions.create(model="mock", messages=_looping(n))
    finally:
        proxy.close()
    sent = upstream.requests[-1][1]["messages"]
    assert [m["role"] for m in sent] == [m["role"] for m in _looping(3)]  # no message invented
    assert sent[-1]["role"] == "tool" and sent[-1]["content"] != "Not here."
    assert "fetch" in sent[-1]["content"]  # the refusal note names the repeated action
    assert upstream.requests[0][1]["messages"] == _looping(1)


def test_without_the_rule_tier_messages_pass_unchanged(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    proxy = _proxy(upstream, tmp_path, rules=None)
    try:
        _client(proxy).chat.completions.create(model="mock", messages=_looping(3))
    finally:
        proxy.close()
    assert upstream.requests[0][1]["messages"] == _looping(3)


def test_a_spent_budget_is_an_error_the_sdk_raises(upstream: MockUpstream, tmp_path: Path) -> None:
    proxy = _proxy(upstream, tmp_path, budget_calls=1)
    try:
        client = _client(proxy, **{"X-Overseer-Run": "b"})
        client.chat.completions.create(model="mock", messages=ASK)
        with pytest.raises(openai.BadRequestError, match="run b: budget exceeded"):
            client.chat.completions.create(model="mock", messages=ASK)
    finally:
        proxy.close()
    assert len(upstream.requests) == 1


def test_empty_messages_are_a_400_and_other_paths_pass_through(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    proxy = _proxy(upstream, tmp_path)
    try:
        with pytest.raises(openai.BadRequestError, match="messages: expected a non-empty list"):
            _client(proxy).chat.completions.create(model="mock", messages=[])
        assert [m.id for m in _client(proxy).models.list()] == ["mock"]
    finally:
        proxy.close()


def test_run_and_agent_come_from_headers_then_body_then_fingerprints() -> None:
    body: dict[str, Any] = {"messages": ASK}
    assert identify({"x-overseer-run": "r", "x-overseer-agent": "a"}, body).source == "header"
    by_meta = identify({}, dict(body, metadata={"overseer_run": "m", "overseer_agent": "w"}))
    assert (by_meta.run, by_meta.agent, by_meta.source) == ("m", "w", "body")
    assert identify({}, dict(body, user="u")).run == "u"
    a, b = identify({}, body), identify({}, body)
    other = identify({}, {"messages": [ASK[0], {"role": "user", "content": "Find Y."}]})
    assert a == b and a.source == "fingerprint" and a.run != other.run and a.agent == other.agent


def test_an_idle_run_ends_with_its_totals_and_a_new_request_opens_a_new_run(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    proxy = Proxy(upstream.base_url, ProxySettings(trace_dir=tmp_path, idle_s=0.2), sweep_s=0.05)
    try:
        client = _client(proxy, **{"X-Overseer-Run": "idle"})
        first = client.chat.completions.with_raw_response.create(model="mock", messages=ASK)
        path = tmp_path / f"{first.headers['x-overseer-trace']}.jsonl"
        for _ in range(400):  # the sweeper ends it once idle (a wait, not a timing claim)
            if '"run_end"' in path.read_text():
                break
            threading.Event().wait(0.05)
        events = [json.loads(line) for line in path.read_text().splitlines()]
        assert events[-1]["event"] == "run_end" and events[-1]["usage"]["input_tokens"] == 11
        again = client.chat.completions.with_raw_response.create(model="mock", messages=ASK)
        assert again.headers["x-overseer-trace"] != first.headers["x-overseer-trace"]
    finally:
        proxy.close()


def test_the_cli_serves_until_sigterm_then_exits_0_with_every_trace_ended(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    port = _free_port()
    cmd = [sys.executable, "-m", "overseer.cli", "proxy", "--upstream", upstream.base_url]
    cmd += ["--port", str(port), "--trace-dir", str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert "overseer: proxy at" in proc.stdout.readline()
        base = f"http://127.0.0.1:{port}/v1"
        client = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0)
        reply = client.chat.completions.with_raw_response.create(model="mock", messages=ASK)
        trace = tmp_path / f"{reply.headers['x-overseer-trace']}.jsonl"
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    assert code == 0
    text = trace.read_text()
    assert text.splitlines()[-1].startswith("{") and '"run_end"' in text.splitlines()[-1]
    assert KEY not in text
    bad = subprocess.run(
        [sys.executable, "-m", "overseer.proxy", "--upstream", "nope"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "overseer: error: --upstream: expected an http(s) base URL, got 'nope'"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_answer_copying_the_refusal_is_asked_again_once(tmp_path: Path) -> None:
    """Issue 39: a reply that only repeats overseer's refusal is no answer; the proxy asks the
    upstream once more (the copy, then a user turn restating the question, no tool call) and
    returns that reply; a second copy stands (asked once per run and agent)."""
    from overseer.runtime.steps import COPIED_NOTE

    def copier(body: dict[str, Any]) -> str:
        last = body["messages"][-1]
        if last["role"] == "user" and last["content"].startswith(COPIED_NOTE):
            return "X is 312."
        return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "tool")

    up = MockUpstream(reply=copier)
    proxy = _proxy(up, tmp_path)
    try:
        client = _client(proxy, **{"X-Overseer-Run": "copy"})
        # a tool's words shown once: kept (shown twice or more they would be asked again)
        got = client.chat.completions.create(model="mock", messages=_looping(1))
        assert got.choices[0].message.content == "Not here."
        got = client.chat.completions.create(model="mock", messages=_looping(3))
    finally:
        proxy.close()
        up.close()
    assert got.choices[0].message.content == "X is 312."
    again = up.requests[-1][1]["messages"]
    assert again[-2]["role"] == "assistant" and again[-2]["content"].startswith("[overseer]")
    assert again[-1]["role"] == "user" and again[-1]["content"].endswith("Find X.")
    assert len(up.requests) == 3  # two requests, one asked again


def test_smolagents_shaped_tool_results_are_judged_too(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    """smolagents' OpenAI model sends tool results as "Observation:" user turns: a repeated
    call is refused and a long page purified there as well, in the same shape."""
    from overseer.proxy._transcripts import CALLING, OBSERVED

    page = "Navigation. " * 400 + "Find X: X is 312. " + "Footer text. " * 400
    msgs: list[Any] = list(ASK)
    proxy = _proxy(upstream, tmp_path)
    try:
        client = _client(proxy, **{"X-Overseer-Run": "smol"})
        for i in range(3):
            call = {"id": f"call_{i}", "type": "function",
                    "function": {"name": "fetch", "arguments": {"url": "x"}}}  # fmt: skip
            msgs += [
                {"role": "assistant", "content": CALLING + str([call])},
                {"role": "user", "content": OBSERVED + page},
            ]
            client.chat.completions.create(model="mock", messages=msgs)
    finally:
        proxy.close()
    sent = upstream.requests[-1][1]["messages"]
    assert [m["role"] for m in sent] == [m["role"] for m in msgs]  # no message invented
    first, last = sent[3]["content"], sent[-1]["content"]
    assert first.startswith(OBSERVED) and len(first) < len(page) / 2  # purified
    assert last.startswith(OBSERVED + "[overseer] Not run again")  # the repeat refused


def test_an_upstream_that_is_down_or_hangs_up_is_a_502_naming_it(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    with socket.socket() as hangup:  # accepts, reads the request, closes without a reply
        hangup.bind(("127.0.0.1", 0))
        hangup.listen()
        rude = f"http://127.0.0.1:{hangup.getsockname()[1]}/v1"

        def serve() -> None:  # until the socket closes (aiohttp tries a GET twice)
            with contextlib.suppress(OSError):
                while True:
                    conn, _ = hangup.accept()
                    conn.recv(65536)
                    conn.close()

        threading.Thread(target=serve, daemon=True).start()
        for url in (down, rude):
            proxy = Proxy(url, ProxySettings(trace_dir=tmp_path))
            try:
                with pytest.raises(openai.InternalServerError, match=r"upstream .*127\.0\.0\.1"):
                    _client(proxy).chat.completions.create(model="mock", messages=ASK)
                with pytest.raises(openai.InternalServerError):
                    _client(proxy).models.list()
            finally:
                proxy.close()
