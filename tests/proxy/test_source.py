"""Refusal at the source (issue 50, item 5), through the OpenAI SDK: a repeated call the loop
breaker refuses is taken out of the model's reply before the client sees it, and the model is
asked again with the refusal note, so the client never runs it. Off by default (the switch)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from overseer.proxy import Proxy, ProxySettings
from overseer.supervise.rules import RuleSettings

from .mock_upstream import MockUpstream
from .test_proxy import _client, _looping


def _fetch(i: int, url: str = "x") -> dict[str, Any]:
    fn = {"name": "fetch", "arguments": f'{{"url": "{url}"}}'}
    return {"id": f"r{i}", "type": "function", "function": fn}


def _model(body: dict[str, Any]) -> dict[str, Any]:
    """A model that fetches x again (and y beside it when asked to) until it reads a refusal;
    then it answers."""
    last = body["messages"][-1]
    if last["role"] == "tool" and last["content"].startswith("[overseer]"):
        return {"role": "assistant", "content": "X is not on that page."}
    calls = [_fetch(len(body["messages"]))]
    if "both" in body["messages"][1]["content"]:
        calls.append(_fetch(len(body["messages"]) + 1, "y"))
    return {"role": "assistant", "content": None, "tool_calls": calls}


@pytest.fixture
def upstream() -> Iterator[MockUpstream]:
    up = MockUpstream(message=_model)
    yield up
    up.close()


def _ask(upstream: MockUpstream, tmp_path: Path, on: bool, both: bool = False) -> Any:
    """The agent fetched x once (the model's reply: x again), then twice (the model's reply:
    x a third time, past the loop limit of 2); the second reply as the client gets it."""
    rules = RuleSettings(loop_limit=2)
    settings = ProxySettings(trace_dir=tmp_path, rules=rules, refuse_at_source=on)
    proxy = Proxy(upstream.base_url, settings)
    try:
        client = _client(proxy, **{"X-Overseer-Run": "src"})
        for n in (1, 2):
            msgs = _looping(n)
            if both:
                msgs[1] = {"role": "user", "content": "Find X, both ways."}
            got = client.chat.completions.create(model="mock", messages=msgs, tools=[TOOL])
            if n == 1:
                assert [c.function.name for c in got.choices[0].message.tool_calls] != []
                del upstream.requests[:]
        return got
    finally:
        proxy.close()


TOOL: Any = {"type": "function", "function": {"name": "fetch", "parameters": {"type": "object"}}}


def test_a_refused_call_never_reaches_the_client_and_the_model_is_asked_again(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    got = _ask(upstream, tmp_path, on=True)
    message = got.choices[0].message
    assert message.tool_calls is None and message.content == "X is not on that page."
    assert got.choices[0].finish_reason == "stop"
    asked = upstream.requests[-1][1]["messages"]
    assert len(upstream.requests) == 2  # the request, then once again with the note
    assert asked[-2]["tool_calls"][0]["function"]["name"] == "fetch"
    assert asked[-1]["role"] == "tool" and asked[-1]["content"].startswith("[overseer]")
    assert asked[-1]["tool_call_id"] == asked[-2]["tool_calls"][0]["id"]


def test_the_calls_let_run_stay_and_the_refused_one_is_taken_out(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    got = _ask(upstream, tmp_path, on=True, both=True)
    calls = got.choices[0].message.tool_calls
    assert [c.function.arguments for c in calls] == ['{"url": "y"}']  # x refused, y kept
    assert len(upstream.requests) == 1


def test_off_by_default_the_repeat_reaches_the_client(
    upstream: MockUpstream, tmp_path: Path
) -> None:
    assert ProxySettings().refuse_at_source is False
    got = _ask(upstream, tmp_path, on=False)
    assert [c.function.arguments for c in got.choices[0].message.tool_calls] == ['{"url": "x"}']
