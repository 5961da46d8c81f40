"""Issue 38 on a real model: one attached overseer, two concurrent invocations, two runs.

Each framework's agent is built once with overseer attached once and invoked twice at the same
time against qwen2.5-coder-0.5b's own HTTP server (through a recording proxy). Each run's trace
holds its own question only, ends with `run_end`, and its ledger equals the prompt tokens the
server reported for that run's own requests (told apart by the question they carry).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from overseer.integrations.guard import GuardSettings
from overseer.models import LlamaCppModel
from overseer.runtime import read_trace

from .recording_proxy import RecordingProxy

pytestmark = pytest.mark.e2e

SETTINGS = GuardSettings()


def lookup(key: str) -> str:
    """Look up the code stored under a key."""
    return f"The code stored under {key} is {key[-4:-2]}7."


def question(k: int) -> str:
    return f"What is the code stored under box-{k:02d}-x? Call lookup with that key, then answer."


def _box(body: dict[str, Any]) -> str:
    m = re.search(r"box-\d+-x", json.dumps(body.get("messages", [])[:2]))
    assert m is not None
    return m.group(0)


def _check(proxy: RecordingProxy, tmp: Path) -> None:
    server: dict[str, int] = {}
    for ex in proxy.exchanges:
        server[_box(ex.request)] = server.get(_box(ex.request), 0) + ex.prompt_tokens
    traces = sorted(tmp.glob("*.jsonl"))
    assert len(traces) == 2
    for path in traces:
        events = list(read_trace(path, validate=True))
        box = re.search(r"box-\d+-x", events[0]["query"]).group(0)  # type: ignore[union-attr]
        assert set(re.findall(r"box-\d+-x", json.dumps(events))) == {box}
        assert events[-1]["event"] == "run_end"
        assert events[-1]["usage"]["input_tokens"] == server[box] > 0


def test_langgraph_two_invocations_two_runs(qwen: LlamaCppModel, tmp_path: Path) -> None:
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    from overseer.integrations.langgraph import OverseerMiddleware

    with RecordingProxy(qwen.base_url) as proxy:
        chat = ChatOpenAI(model=qwen.name, base_url=proxy.base_url, api_key="none",
                          max_tokens=64, temperature=0.0, max_retries=0, timeout=600)  # fmt: skip
        mw = OverseerMiddleware(SETTINGS, trace_dir=tmp_path)
        agent = create_agent(chat, [tool(lookup)], middleware=[mw])

        def invoke(k: int) -> None:
            msg = {"messages": [{"role": "user", "content": question(k)}]}
            with contextlib.suppress(Exception):  # a recursion limit still writes run_end
                agent.invoke(msg, {"recursion_limit": 8})

        threads = [threading.Thread(target=invoke, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        _check(proxy, tmp_path)


def test_openai_agents_two_invocations_two_runs(qwen: LlamaCppModel, tmp_path: Path) -> None:
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, function_tool
    from openai import AsyncOpenAI

    from overseer.integrations.openai_agents import Overseer

    with RecordingProxy(qwen.base_url) as proxy:
        client = AsyncOpenAI(base_url=proxy.base_url, api_key="none", max_retries=0, timeout=600)
        agent = Agent(name="researcher", model=OpenAIChatCompletionsModel(qwen.name, client),
                      tools=[function_tool(lookup)],
                      model_settings=ModelSettings(max_tokens=64, temperature=0.0))  # fmt: skip
        ov = Overseer(SETTINGS, trace_dir=tmp_path)
        config = RunConfig(tracing_disabled=True)

        async def one(k: int) -> None:
            with contextlib.suppress(Exception):  # max turns still writes run_end
                await ov.run(agent, question(k), run_config=config, max_turns=4)

        async def main() -> None:
            await asyncio.gather(one(0), one(1))

        asyncio.run(main())
        _check(proxy, tmp_path)


def test_pydantic_ai_two_invocations_two_runs(qwen: LlamaCppModel, tmp_path: Path) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    from overseer.integrations.pydantic_ai import OverseerCapability

    with RecordingProxy(qwen.base_url) as proxy:
        provider = OpenAIProvider(base_url=proxy.base_url, api_key="none")
        cap = OverseerCapability(SETTINGS, trace_dir=tmp_path)
        settings = {"max_tokens": 64, "temperature": 0.0, "timeout": 600}
        agent = Agent(OpenAIChatModel(qwen.name, provider=provider), tools=[lookup],
                      capabilities=[cap], model_settings=settings)  # fmt: skip

        async def one(k: int) -> None:
            with contextlib.suppress(Exception):  # a usage limit still writes run_end
                await agent.run(question(k), usage_limits=UsageLimits(request_limit=4))

        async def main() -> None:
            await asyncio.gather(one(0), one(1))

        asyncio.run(main())
        _check(proxy, tmp_path)
