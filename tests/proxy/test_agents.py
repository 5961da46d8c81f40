"""Several agents in one run (issue 50, item 4): tool outputs are keyed by agent and call id, so
colliding or missing call ids never swap outputs between agents; two copies of one agent sent
without names are kept apart once their first replies differ, and are one agent when those
are identical too (docs/proxy.md, "Runs and agents")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from overseer.proxy import Proxy, ProxySettings, identify
from overseer.supervise.rules import RuleSettings

from .mock_upstream import MockUpstream
from .test_proxy import ASK, _client


@pytest.fixture
def upstream() -> Iterator[MockUpstream]:
    up = MockUpstream()
    yield up
    up.close()


def _turns(outputs: list[str], *, ids: bool, url: str = "x", first: str = "") -> list[Any]:
    """A conversation whose assistant called fetch once per output, with the ids a local
    server numbers per reply (`call_0`, `call_1`) or none at all."""
    out: list[Any] = list(ASK)
    for i, text in enumerate(outputs):
        fn = {"name": "fetch", "arguments": f'{{"url": "{url}{i}"}}'}
        call: dict[str, Any] = {"type": "function", "function": fn}
        tool: dict[str, Any] = {"role": "tool", "content": text}
        if ids:
            call["id"] = tool["tool_call_id"] = f"call_{i % 2}"
        said = first if i == 0 and first else None
        out += [{"role": "assistant", "content": said, "tool_calls": [call]}, tool]
    return out


@pytest.mark.parametrize("ids", [True, False], ids=["colliding ids", "no ids"])
def test_two_agents_never_get_each_others_outputs(
    upstream: MockUpstream, tmp_path: Path, ids: bool
) -> None:
    proxy = Proxy(upstream.base_url, ProxySettings(trace_dir=tmp_path))
    sent = {"alice": ["A0 alice read this", "A1 alice read that"],
            "bob": ["B0 bob read this", "B1 bob read that"]}  # fmt: skip
    try:
        for n in (1, 2):
            for agent, outputs in sent.items():
                client = _client(proxy, **{"X-Overseer-Run": "team", "X-Overseer-Agent": agent})
                client.chat.completions.create(model="mock", messages=_turns(outputs[:n], ids=ids))
    finally:
        proxy.close()
    order = ["alice", "bob", "alice", "bob"]  # the order the requests were sent in
    got = [
        [m["content"] for m in b["messages"] if m["role"] == "tool"] for _, b in upstream.requests
    ]
    assert len(got) == 4
    for agent, tools in zip(order, got, strict=True):
        assert tools and all(t.split()[1] == agent for t in tools), got  # its own outputs


def test_two_unnamed_copies_of_one_agent_are_kept_apart_by_their_first_reply(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    """The same system prompt and question, the same page fetched twice by each copy at once:
    with the loop breaker at 2 identical calls, neither copy is refused for the other's."""
    settings = ProxySettings(trace_dir=tmp_path, rules=RuleSettings(loop_limit=2))
    proxy = Proxy(upstream.base_url, settings)
    try:
        client = _client(proxy)
        for n in (1, 2):
            for copy in ("one", "two"):
                msgs = _turns(["Not here."] * n, ids=True, url="same", first=f"I look ({copy}).")
                for m in msgs:  # the same call each time: a loop of its own for each copy
                    for c in m.get("tool_calls") or ():
                        c["function"]["arguments"] = '{"url": "same"}'
                client.chat.completions.create(model="mock", messages=msgs)
    finally:
        proxy.close()
    bodies = [b["messages"] for _, b in upstream.requests]
    tools = [m["content"] for msgs in bodies for m in msgs if m["role"] == "tool"]
    assert tools == ["Not here."] * 6  # nothing refused: 2 calls each, never 3 merged
    one = identify({}, {"messages": _turns(["x"], ids=True, first="I look (one).")})
    two = identify({}, {"messages": _turns(["x"], ids=True, first="I look (two).")})
    same = identify({}, {"messages": _turns(["y"], ids=True, first="I look (one).")})
    assert one.run == two.run and one.agent != two.agent  # one run, two agents
    assert same.agent == one.agent  # identical first replies: one agent (documented)
