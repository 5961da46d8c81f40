"""The rule tier at wire speed (issue 50, item 1): a tool output is judged off the event loop,
cut to the cap before it is judged, and judged once per run. Behaviour only: the order in which
things finish, held by events, never a timing (benchmarks/proxy_overhead.py measures the
times)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from overseer.proxy import Proxy, ProxySettings
from overseer.proxy._judge import Judges
from overseer.runtime import BaseSupervisor, Interaction, Run
from overseer.runtime.verdicts import Verdict
from overseer.supervise.rules import RuleSettings

from .mock_upstream import MockUpstream
from .test_proxy import ASK, _client, _looping


class Gate(BaseSupervisor):
    """A plug-in that holds the judgement of any output over `over` characters until
    `release` is set (`entered` says it got there), and records the lengths it saw."""

    name = "gate"
    actions = frozenset({"approve"})

    def __init__(self, over: int = 100_000) -> None:
        self.over = over
        self.entered, self.release = threading.Event(), threading.Event()
        self.seen: list[int] = []
        self.threads: list[str] = []  # the thread each output was judged in

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        if interaction.kind == "tool":
            self.seen.append(len(interaction.observation))
            self.threads.append(threading.current_thread().name)
            if len(interaction.observation) > self.over:
                self.entered.set()
                self.release.wait(20)  # blocks whichever thread judges: the loop, in old code
        return self._approval()


@pytest.fixture
def upstream() -> Iterator[MockUpstream]:
    up = MockUpstream()
    yield up
    up.close()


def with_output(output: str, call: str = "c0") -> list[Any]:
    fn = {"name": "fetch", "arguments": '{"url": "big"}'}
    asked = {"role": "assistant", "content": None,
             "tool_calls": [{"id": call, "type": "function", "function": fn}]}  # fmt: skip
    return [*ASK, asked, {"role": "tool", "tool_call_id": call, "content": output}]


def test_a_10_mib_output_never_holds_up_another_runs_request(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    """While one run's 10 MiB tool output is being judged (held there by a plug-in), another
    run's request is served; the output was cut to the 1,000,000-character cap first."""
    gate = Gate()
    no_purify = RuleSettings(purify=False)  # so the plug-in is asked (purification would win)
    settings = ProxySettings(trace_dir=tmp_path, rules=no_purify, plugins=(gate,))
    proxy = Proxy(upstream.base_url, settings)
    big: dict[str, Any] = {}

    def send_big() -> None:
        client = _client(proxy, **{"X-Overseer-Run": "big"})
        big["reply"] = client.chat.completions.create(
            model="mock", messages=with_output("x " * 5 * 2**20)
        )

    sender = threading.Thread(target=send_big)
    try:
        sender.start()
        assert gate.entered.wait(60), "the large output was never judged"
        small = _client(proxy, **{"X-Overseer-Run": "small"}).with_options(timeout=15)
        got = small.chat.completions.create(model="mock", messages=_looping(1))
        assert got.choices[0].message.content == "ok"
        health = httpx.get(proxy.base_url.removesuffix("/v1") + "/overseer/health").json()
        assert health["judging"] == 1 and health["warm"] is True
        assert "reply" not in big  # the large one is still being judged
    finally:
        gate.release.set()
        sender.join(60)
        proxy.close()
    assert big["reply"].choices[0].message.content == "ok"
    assert max(gate.seen) == 1_000_000  # cut to the cap before it was judged


def test_an_output_is_judged_once_per_run_however_many_requests_carry_it(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    gate = Gate(over=10**9)
    settings = ProxySettings(trace_dir=tmp_path, rules=RuleSettings(purify=False), plugins=(gate,))
    proxy = Proxy(upstream.base_url, settings)
    try:
        client = _client(proxy, **{"X-Overseer-Run": "once"})
        for _ in range(3):
            client.chat.completions.create(model="mock", messages=with_output("page " * 2000))
    finally:
        proxy.close()
    assert gate.seen == [len("page " * 2000)]


def test_a_requests_new_outputs_are_judged_in_one_hand_off_in_order(
    upstream: MockUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two new tool outputs of one request are judged one after the other by the same judge
    thread (one hand-off per request, not one per output); the next request carrying them
    judges nothing."""
    handed: list[int] = []  # the characters of each hand-off to a judge thread
    real = Judges.call

    async def call(self: Judges, size: int, fn: Any, *args: Any) -> Any:
        if fn.__name__ != "_warm":
            handed.append(size)
        return await real(self, size, fn, *args)

    monkeypatch.setattr(Judges, "call", call)
    gate = Gate(over=10**9)
    settings = ProxySettings(trace_dir=tmp_path, rules=RuleSettings(purify=False), plugins=(gate,))
    proxy = Proxy(upstream.base_url, settings)
    calls = [
        {
            "id": c,
            "type": "function",
            "function": {"name": "fetch", "arguments": f'{{"url": "{c}"}}'},
        }
        for c in ("c0", "c1")
    ]
    messages = [
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c0", "content": "first " * 300},
        {"role": "tool", "tool_call_id": "c1", "content": "second " * 300},
    ]
    try:
        client = _client(proxy, **{"X-Overseer-Run": "two"})
        for _ in range(2):
            got = client.chat.completions.create(model="mock", messages=messages)
            assert got.choices[0].message.content == "ok"
    finally:
        proxy.close()
    assert gate.seen == [len("first " * 300), len("second " * 300)]
    assert handed == [len("first " * 300) + len("second " * 300)]
    assert len(set(gate.threads)) == 1 and gate.threads[0].startswith("overseer-judge")
