"""The rogue-agent monitor on a framework's run (issue 49 item 1): a LangGraph, Agents SDK,
pydantic-ai or smolagents agent, or a client of the proxy, whose model gives token logprobs has
its answer featurised by `UncertaintyMonitor` through the guard's plug-ins, like a team
agent's turn. A framework run cannot be rolled back, so the monitor runs with `intervene=False`
there: it estimates and counts the turns it would roll back; one that would roll back is refused
at the start."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from overseer.integrations._guard import GuardSettings
from overseer.monitor.intervene import UncertaintyMonitor
from overseer.monitor.train import RoleMonitor
from overseer.runtime import read_trace

from .loopback import LoopbackServer, Reply, ToolCall

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("loopback_only")]


def lookup(word: str) -> str:
    """Look a word up.

    Args:
        word: the word
    """
    return f"{word}: a small bird"


def _script(body: Mapping[str, Any], n: int) -> Reply:
    if n == 1:
        return Reply(calls=(ToolCall("lookup", {"word": "wren"}),))
    return Reply(text="A wren is a small bird.")


def _pessimist() -> RoleMonitor:
    """A monitor whose estimate is always 0.5, below its threshold 0.9: every turn flagged."""
    return RoleMonitor(
        role="agent", inputs=("turn", "entropy"), degree=1, tau=0.9, gain=0.0,
        scale=np.ones(2), offset=np.zeros(2), powers=np.eye(2), coef=np.zeros(2),
        intercept=0.5,
    )  # fmt: skip


def _run(tmp_path: Path, monitor: UncertaintyMonitor, logprobs: bool) -> tuple[Any, str]:
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    from overseer.integrations.langgraph import OverseerMiddleware

    with LoopbackServer(_script) as srv:
        top = {"logprobs": True, "top_logprobs": 3} if logprobs else {}
        chat = ChatOpenAI(
            model="scripted", base_url=srv.base_url, api_key="none", max_retries=0, **top
        )
        mw = OverseerMiddleware(GuardSettings(plugins=(monitor,)), trace_dir=tmp_path)
        agent = create_agent(chat, [tool(lookup)], middleware=[mw], name="researcher")
        out = agent.invoke({"messages": [{"role": "user", "content": "What is a wren?"}]})
    return mw.guard, str(out["messages"][-1].content)


def test_the_monitor_featurises_a_langgraph_answer_from_its_logprobs(tmp_path: Path) -> None:
    monitor = UncertaintyMonitor({"agent": _pessimist()}, fallback_role="agent", intervene=False)
    guard, answer = _run(tmp_path, monitor, logprobs=True)
    assert answer == "A wren is a small bird."  # flagged, not rolled back: the run goes on
    stats = guard.last.stats["plugins"]["rogue-monitor"]
    assert stats == {"turns": 1, "without_logprobs": 0, "flagged": 1, "intervenes": False}
    (row,) = monitor.rows
    assert row["agent"] == "researcher" and row["estimate"] == pytest.approx(0.5)
    assert row["entropy"] > 0  # computed from the three alternatives the server gave
    events = [e for p in tmp_path.glob("**/*.jsonl") for e in read_trace(p)]
    assert [e["estimate"] for e in events if e["event"] == "monitor_features"] == [0.5]


def test_without_logprobs_the_monitor_counts_the_turn_and_leaves_it(tmp_path: Path) -> None:
    monitor = UncertaintyMonitor({"agent": _pessimist()}, fallback_role="agent", intervene=False)
    guard, answer = _run(tmp_path, monitor, logprobs=False)
    assert answer == "A wren is a small bird."
    stats = guard.last.stats["plugins"]["rogue-monitor"]
    assert stats["turns"] == 0 and stats["without_logprobs"] == 1 and stats["flagged"] == 0


def test_a_monitor_that_would_roll_back_is_refused_by_a_framework_host() -> None:
    from overseer.integrations.langgraph import OverseerMiddleware

    monitor = UncertaintyMonitor({"agent": _pessimist()}, fallback_role="agent")
    with pytest.raises(Exception, match="rollback"):
        OverseerMiddleware(GuardSettings(plugins=(monitor,)))


def test_the_monitor_featurises_an_answer_relayed_by_the_proxy(tmp_path: Path) -> None:
    """Through `overseer proxy`: the upstream's logprobs reach the run with the booked call
    (they travel in the run's JSON operation log), and the agent's answer is featurised."""
    import openai

    from overseer.proxy import Proxy, ProxySettings

    from ..proxy.mock_upstream import MockUpstream

    monitor = UncertaintyMonitor({"agent": _pessimist()}, fallback_role="agent", intervene=False)
    up = MockUpstream(reply=lambda body: "A wren is a small bird.")
    proxy = Proxy(up.base_url, ProxySettings(trace_dir=tmp_path, plugins=(monitor,)))
    try:
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        got = client.chat.completions.create(
            model="mock",
            messages=[{"role": "user", "content": "What is a wren?"}],
            logprobs=True,
            top_logprobs=3,
        )
    finally:
        proxy.close()
        up.close()
    assert got.choices[0].message.content == "A wren is a small bird."
    (row,) = monitor.rows  # the run ended with the proxy: its answer was judged then
    assert row["estimate"] == pytest.approx(0.5) and row["entropy"] > 0
    assert monitor.flagged == 1


def test_the_monitor_featurises_an_agents_sdk_answer_from_its_logprobs(tmp_path: Path) -> None:
    """The Agents SDK keeps a chat completion's logprobs on each text part when the agent asks
    for them (`ModelSettings(top_logprobs=3)`): the booked call carries them to the monitor."""
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, function_tool
    from openai import AsyncOpenAI

    from overseer.integrations.openai_agents import Overseer

    monitor = UncertaintyMonitor({"agent": _pessimist()}, fallback_role="agent", intervene=False)
    with LoopbackServer(_script) as srv:
        model = OpenAIChatCompletionsModel(
            "scripted", AsyncOpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
        )
        agent = Agent(
            name="researcher",
            instructions="Answer with the lookup tool.",
            model=model,
            tools=[function_tool(lookup)],
            model_settings=ModelSettings(top_logprobs=3),
        )
        ov = Overseer(GuardSettings(plugins=(monitor,)), trace_dir=tmp_path)
        out = ov.run_sync(agent, "What is a wren?", run_config=RunConfig(tracing_disabled=True))
    assert out.final_output == "A wren is a small bird."
    stats = ov.guard.last.stats["plugins"]["rogue-monitor"]
    assert stats == {"turns": 1, "without_logprobs": 0, "flagged": 1, "intervenes": False}
    (row,) = monitor.rows
    assert row["agent"] == "researcher" and row["entropy"] > 0


def test_the_monitor_featurises_a_pydantic_ai_answer_from_its_logprobs(tmp_path: Path) -> None:
    """pydantic-ai keeps a chat completion's logprobs in the response's provider details when
    the model settings ask for them (`openai_logprobs=True`)."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIChatModelSettings
    from pydantic_ai.providers.openai import OpenAIProvider

    from overseer.integrations.pydantic_ai import OverseerCapability

    monitor = UncertaintyMonitor({"agent": _pessimist()}, fallback_role="agent", intervene=False)
    with LoopbackServer(_script) as srv:
        model = OpenAIChatModel(
            "scripted", provider=OpenAIProvider(base_url=srv.base_url, api_key="none")
        )
        settings = OpenAIChatModelSettings(openai_logprobs=True, openai_top_logprobs=3)
        agent = Agent(model, name="researcher", tools=[lookup], model_settings=settings)
        cap = OverseerCapability(GuardSettings(plugins=(monitor,)), trace_dir=tmp_path)
        out = agent.run_sync("What is a wren?", capabilities=[cap])
    assert out.output == "A wren is a small bird."
    stats = cap.guard.last.stats["plugins"]["rogue-monitor"]
    assert stats == {"turns": 1, "without_logprobs": 0, "flagged": 1, "intervenes": False}
    (row,) = monitor.rows
    assert row["agent"] == "researcher" and row["entropy"] > 0


def test_the_monitor_featurises_a_smolagents_answer_from_its_logprobs(tmp_path: Path) -> None:
    """smolagents' `OpenAIServerModel` passes its keyword arguments to the server
    (`logprobs=True, top_logprobs=3`); the metered call keeps the reply's logprobs."""
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    from overseer.integrations.smolagents import OverseerSupervisor

    def script(body: Mapping[str, Any], n: int) -> Reply:
        if n == 1:
            return Reply(calls=(ToolCall("lookup", {"word": "wren"}),))
        return Reply(calls=(ToolCall("final_answer", {"answer": "A wren is a small bird."}),))

    monitor = UncertaintyMonitor({"agent": _pessimist()}, fallback_role="agent", intervene=False)
    with LoopbackServer(script) as srv:
        model = OpenAIServerModel(
            model_id="scripted", api_base=srv.base_url, api_key="none", logprobs=True,
            top_logprobs=3,
        )  # fmt: skip
        agent = ToolCallingAgent(tools=[tool(lookup)], model=model, max_steps=4, name="researcher")
        sup = OverseerSupervisor(mode="rules", trace_dir=tmp_path, plugins=(monitor,))
        answer = sup.attach(agent).run("What is a wren?")
        asked = [r.get("logprobs") for r in srv.requests]
    assert answer == "A wren is a small bird." and asked and all(asked)
    stats = sup.guard.last.stats["plugins"]["rogue-monitor"]
    assert stats["without_logprobs"] == 0 and stats["turns"] >= 1 and stats["flagged"] >= 1
    assert all(row["entropy"] > 0 for row in monitor.rows)
