"""Issue 38: one attached overseer serves concurrent invocations, one run each.

Each framework's agent is built once with overseer attached once (one middleware on a compiled
graph, one `Overseer`, one capability given when the agent is built); N invocations run at
the same time, each asking about its own box. Every run must keep its own books: its trace's
question, its ledger equal to the server's count of its own requests, its own refusal (the
third identical call of each run is refused once, whatever the other runs did) and a
`run_end`; no text of one run appears in another run's trace.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from overseer.integrations._guard import GuardSettings
from overseer.runtime import read_trace
from overseer.runtime._turns import CLOSED_NOTE
from overseer.supervise.rules import RuleSettings

from .loopback import LoopbackServer, Reply, ToolCall, messages_text, prompt_tokens

SETTINGS = GuardSettings(rules=RuleSettings(loop_limit=2), answer_after_refusals=0)
FRAMEWORKS = ("langgraph", "openai-agents", "pydantic-ai")


def read_box(box: str) -> str:
    """Read the label of a storage box by its name."""
    return f"Box {box} label. " + f"The code of {box} is {box[-2:]}7. " + "Shelf noise. " * 400


def _box(body: Mapping[str, Any]) -> str:
    first = next(t for t in messages_text(body, "user"))
    m = re.search(r"box-\d+-x", first)
    assert m is not None, first
    return m.group(0)


def box_script(body: Mapping[str, Any], n: int) -> Reply:
    """Per request, by the question it carries: three identical reads, then the answer."""
    box = _box(body)
    if len(messages_text(body, "tool")) < 3:
        return Reply(calls=(ToolCall("read_box", {"box": box}),))
    return Reply(f"the code of {box} is {box[-4:-2]}7")


def question(k: int) -> str:
    return f"What is the code of box box-{k:02d}-x? Read its label with read_box."


def _langgraph(srv: LoopbackServer, tmp: Path, n: int) -> None:
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    from overseer.integrations.langgraph import OverseerMiddleware

    chat = ChatOpenAI(model="scripted", base_url=srv.base_url, api_key="none", max_retries=0)
    mw = OverseerMiddleware(SETTINGS, trace_dir=tmp)
    agent = create_agent(chat, [tool(read_box)], middleware=[mw], name="researcher")
    errors: list[BaseException] = []

    def invoke(k: int) -> None:
        try:
            agent.invoke({"messages": [{"role": "user", "content": question(k)}]})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=invoke, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def _openai_agents(srv: LoopbackServer, tmp: Path, n: int) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, function_tool
    from openai import AsyncOpenAI

    from overseer.integrations.openai_agents import Overseer

    client = AsyncOpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
    agent = Agent(
        name="researcher",
        model=OpenAIChatCompletionsModel("scripted", client),
        tools=[function_tool(read_box)],
    )
    ov = Overseer(SETTINGS, trace_dir=tmp)
    config = RunConfig(tracing_disabled=True)

    async def main() -> None:
        await asyncio.gather(*(ov.run(agent, question(k), run_config=config) for k in range(n)))

    asyncio.run(main())


def _pydantic_ai(srv: LoopbackServer, tmp: Path, n: int) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from overseer.integrations.pydantic_ai import OverseerCapability

    chat = OpenAIChatModel("scripted", provider=OpenAIProvider(base_url=srv.base_url, api_key="x"))
    cap = OverseerCapability(SETTINGS, trace_dir=tmp)
    agent = Agent(chat, name="researcher", tools=[read_box], capabilities=[cap])

    async def main() -> None:
        await asyncio.gather(*(agent.run(question(k)) for k in range(n)))

    asyncio.run(main())


RUNNERS = {"langgraph": _langgraph, "openai-agents": _openai_agents, "pydantic-ai": _pydantic_ai}


def check_runs(srv: LoopbackServer, tmp: Path, n: int) -> None:
    """One trace per invocation, each with its own question, books, refusal and end."""
    server: dict[str, int] = {}
    for body in srv.requests:
        server[_box(body)] = server.get(_box(body), 0) + prompt_tokens(body)
    traces = sorted(tmp.glob("*.jsonl"))
    assert len(traces) == n
    seen = set()
    for path in traces:
        events = list(read_trace(path, validate=True))
        start = events[0]
        assert start["event"] == "run_start"
        box = re.search(r"box-\d+-x", start["query"]).group(0)  # type: ignore[union-attr]
        seen.add(box)
        others = set(re.findall(r"box-\d+-x", json.dumps(events))) - {box}
        assert not others, f"{path.name}: text of other runs {others}"
        end = events[-1]
        assert end["event"] == "run_end" and end["stop_reason"] == "done"
        assert end["usage"]["input_tokens"] == server[box], path.name
        refusals = [e for e in events if e["event"] == "verdict" and e["by"] == "loop_breaker"]
        loops = [e for e in refusals if e.get("note") == "loop_breaker"]
        assert len(loops) == 1, path.name
    assert seen == {f"box-{k:02d}-x" for k in range(n)}


@pytest.mark.parametrize("n", [2, 20])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_concurrent_invocations_keep_their_own_runs(tmp_path: Path, framework: str, n: int) -> None:
    with LoopbackServer(box_script) as srv:
        RUNNERS[framework](srv, tmp_path, n)
        check_runs(srv, tmp_path, n)


def test_a_langgraph_run_ended_by_its_recursion_limit_has_its_run_end(tmp_path: Path) -> None:
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.errors import GraphRecursionError

    from overseer.integrations.langgraph import OverseerMiddleware

    def forever(body: Mapping[str, Any], n: int) -> Reply:
        return Reply(calls=(ToolCall("read_box", {"box": f"box-{n:02d}-x"}),))

    with LoopbackServer(forever) as srv:
        chat = ChatOpenAI(model="scripted", base_url=srv.base_url, api_key="none", max_retries=0)
        mw = OverseerMiddleware(SETTINGS, trace_dir=tmp_path)
        agent = create_agent(chat, [tool(read_box)], middleware=[mw], name="researcher")
        for limit in (6, 7):  # the last step a model call, then a tool call
            with pytest.raises(GraphRecursionError):
                agent.invoke(
                    {"messages": [{"role": "user", "content": "loop"}]}, {"recursion_limit": limit}
                )
    traces = sorted(tmp_path.glob("*.jsonl"))
    assert len(traces) == 2
    for path in traces:
        end = list(read_trace(path, validate=True))[-1]
        assert end["event"] == "run_end" and end["stop_reason"] == "recursion_limit"
        assert "recursion limit" in end["error"]


def _limited_langgraph(tmp: Path, script: Any, limit: int) -> tuple[Any, list[Path]]:
    """One invocation of a LangGraph agent with overseer, stopped by `limit`: its middleware
    and the traces it wrote."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.errors import GraphRecursionError

    from overseer.integrations.langgraph import OverseerMiddleware

    with LoopbackServer(script) as srv:
        chat = ChatOpenAI(model="scripted", base_url=srv.base_url, api_key="none", max_retries=0)
        mw = OverseerMiddleware(SETTINGS, trace_dir=tmp)
        agent = create_agent(chat, [tool(read_box)], middleware=[mw], name="researcher")
        with pytest.raises(GraphRecursionError):
            agent.invoke(
                {"messages": [{"role": "user", "content": "loop"}]}, {"recursion_limit": limit}
            )
    return mw, sorted(tmp.glob("*.jsonl"))


def test_parallel_tool_calls_in_a_langgraph_last_step_stay_in_one_run(tmp_path: Path) -> None:
    """CI saw a run closed by the first of two tool calls of the last step; the second's hook
    then opened a second, empty run, and `stats` (the run started last) showed no rule fired."""

    def pairs(body: Mapping[str, Any], n: int) -> Reply:
        boxes = (f"box-{n:02d}-x", f"box-{n:02d}-y")
        return Reply(calls=tuple(ToolCall("read_box", {"box": b}) for b in boxes))

    mw, traces = _limited_langgraph(tmp_path, pairs, 5)  # the last step runs two tool calls
    assert len(traces) == 1 and mw.guard.runs == 1
    events = list(read_trace(traces[0], validate=True))
    assert events[-1]["event"] == "run_end" and events[-1]["stop_reason"] == "recursion_limit"
    assert mw.stats["run"] == events[0]["run"] and mw.stats["rules"].get("purification", 0) >= 2


def test_a_copy_answered_in_a_langgraph_last_step_is_asked_again_in_its_own_run(
    tmp_path: Path,
) -> None:
    """The re-ask of the graph's last model step belongs to the run the step closes."""

    def copy_then_answer(body: Mapping[str, Any], n: int) -> Reply:
        if n == 1:
            return Reply(calls=(ToolCall("read_box", {"box": "box-01-x"}),))
        return Reply(CLOSED_NOTE if n == 2 else "the code of box-01-x is 017")

    mw, traces = _limited_langgraph(tmp_path, copy_then_answer, 4)  # 2nd model call is last
    assert len(traces) == 1 and mw.guard.runs == 1
    end = list(read_trace(traces[0], validate=True))[-1]
    assert end["event"] == "run_end" and end["stop_reason"] == "recursion_limit"
    assert mw.stats["reasked"] == 1 and "017" in end["answer"]


def _forever(body: Mapping[str, Any], n: int) -> Reply:
    return Reply(calls=(ToolCall("read_box", {"box": f"box-{n:02d}-x"}),))


def test_an_agents_sdk_run_ended_by_max_turns_has_its_run_end(tmp_path: Path) -> None:
    from agents import Agent, MaxTurnsExceeded, OpenAIChatCompletionsModel, RunConfig, function_tool
    from openai import AsyncOpenAI

    from overseer.integrations.openai_agents import Overseer

    with LoopbackServer(_forever) as srv:
        client = AsyncOpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
        model = OpenAIChatCompletionsModel("scripted", client)
        agent = Agent(name="researcher", model=model, tools=[function_tool(read_box)])
        ov = Overseer(SETTINGS, trace_dir=tmp_path)
        with pytest.raises(MaxTurnsExceeded):
            ov.run_sync(agent, "loop", run_config=RunConfig(tracing_disabled=True), max_turns=2)
    (path,) = tmp_path.glob("*.jsonl")
    end = list(read_trace(path, validate=True))[-1]
    assert end["event"] == "run_end" and end["stop_reason"] == "max_turns"


def test_a_pydantic_ai_run_ended_by_its_usage_limit_has_its_run_end(tmp_path: Path) -> None:
    from pydantic_ai import Agent, UsageLimits
    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from overseer.integrations.pydantic_ai import OverseerCapability

    with LoopbackServer(_forever) as srv:
        provider = OpenAIProvider(base_url=srv.base_url, api_key="x")
        cap = OverseerCapability(SETTINGS, trace_dir=tmp_path)
        agent = Agent(OpenAIChatModel("scripted", provider=provider), tools=[read_box],
                      capabilities=[cap])  # fmt: skip
        with pytest.raises(UsageLimitExceeded):
            agent.run_sync("loop", usage_limits=UsageLimits(request_limit=2))
    (path,) = tmp_path.glob("*.jsonl")
    end = list(read_trace(path, validate=True))[-1]
    assert end["event"] == "run_end" and end["stop_reason"] == "usage_limit"
