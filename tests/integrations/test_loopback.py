"""The scripted loopback chat server the framework tests run on, through the real openai client."""

from __future__ import annotations

import json
from collections.abc import Callable

import openai
import pytest

from .loopback import LoopbackServer, Reply, Script, ToolCall, prompt_tokens, repeat_tool, scripted

pytestmark = pytest.mark.e2e


def test_serves_tool_calls_reports_usage_and_records(
    loopback: Callable[[Script], LoopbackServer],
) -> None:
    srv = loopback(scripted([Reply(calls=(ToolCall("fetch", {"url": "x"}),)), Reply("done")]))
    client = openai.OpenAI(base_url=srv.base_url, api_key="none")
    msgs = [{"role": "user", "content": "x" * 400}]
    r = client.chat.completions.create(model="m", messages=msgs)  # type: ignore[arg-type]
    call = r.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "fetch" and json.loads(call.function.arguments) == {"url": "x"}
    assert r.usage is not None and r.usage.prompt_tokens == 104 == prompt_tokens(srv.requests[0])
    r2 = client.chat.completions.create(model="m", messages=msgs)  # type: ignore[arg-type]
    assert r2.choices[0].message.content == "done"
    assert len(srv.requests) == 2 and srv.prompt_tokens == 208


def test_streams_with_usage_in_the_last_chunk(loopback: Callable[[Script], LoopbackServer]) -> None:
    srv = loopback(repeat_tool("fetch", {"url": "x"}, times=1))
    client = openai.OpenAI(base_url=srv.base_url, api_key="none")
    chunks = list(
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    calls = [c for ch in chunks if ch.choices for c in (ch.choices[0].delta.tool_calls or [])]
    assert calls[0].function is not None and calls[0].function.name == "fetch"
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == srv.prompt_tokens


def test_repeat_tool_stops_on_a_different_output() -> None:
    script = repeat_tool("f", {}, times=5, invite="again")
    tool_msg = {"role": "tool", "content": "call me again"}
    call = {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}
    assert script({"messages": [{"role": "user", "content": "go"}]}, 1).calls
    assert script({"messages": [call, tool_msg]}, 2).calls
    assert not script({"messages": [call, {"role": "tool", "content": "blocked"}]}, 2).calls
    assert not script({"messages": [call] * 5 + [tool_msg]}, 6).calls
    refusal = {"role": "tool", "content": "[overseer] Not run again: it said 'call me again'"}
    assert not script({"messages": [call, refusal]}, 2).calls
