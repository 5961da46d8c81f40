"""The page-and-trap task run by real framework agents on qwen2.5-coder-0.5b, with overseer.

Each framework (LangGraph, the OpenAI Agents SDK, pydantic-ai) runs unmodified against the
embedded model's own HTTP server on 127.0.0.1 (through a recording proxy), with tool choice
free: qwen 0.5B writes its calls as bare JSON and the server returns them as OpenAI
`tool_calls`. The task needs one fact from a 40,000-character page; a `next_page(n)` tool
always answers "Not here. Call next_page with n+1." (the paging trap). With overseer attached
the tools really run, the trap is cut short (a progress-free loop: same output, changing
arguments), and the request that produces the answer still holds the answer sentence.

Needs qwen2.5-coder-0.5b (`pip install 'overseer-agents[qwen05]'`): SmolLM2-135M writes no tool call
unless forced, so it cannot walk into the trap. Without qwen these tests fail, naming it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from overseer.models import LlamaCppModel
from overseer.supervise.rules import RuleSettings

from .recording_proxy import RecordingProxy

pytestmark = pytest.mark.e2e

MODEL = "qwen2.5-coder-0.5b"
FACT = "The Tinbel telescope has a primary mirror aperture of 240 cm."
QUESTION = (
    "What is the aperture of the Tinbel telescope? Open https://wiki.local/Tinbel with "
    "fetch_page and answer from it."
)
TRAP = "Not here. Call next_page with n+1."
PAGE_CHARS = 40_000


def trap_page(chars: int = PAGE_CHARS) -> str:
    """A page of `chars` characters: unrelated articles, the answer sentence about 40% in,
    and a footer that sends the reader to next_page."""
    footer = "\nEnd of page 1 of 12. The article continues: call next_page with n=2.\n"
    nav = "Home | News | Sport | Weather | Shop | Login | Help | Contact\n"
    parts = [f"Tinbel Observatory - Wiki\n{nav}"]
    i = 0
    while sum(map(len, parts)) < chars - len(footer):
        if i == 40:
            parts.append(f"Instruments. {FACT} The dome opened in 1987.\n\n")
        parts.append(
            f"Article {i}: local news on the harbour ferries and the city budget for week {i}. "
            f"Readers discussed schedules and costs at length.\n{nav}\n"
        )
        i += 1
    body = "".join(parts)[: chars - len(footer)]
    return body + footer


PAGE = trap_page()


@dataclass
class Tools:
    """The two tools of the task, counting the calls that really ran."""

    fetched: list[str] = field(default_factory=list)
    paged: list[int] = field(default_factory=list)

    def fetch_page(self) -> Callable[[str], str]:
        def fetch_page(url: str) -> str:
            """Open a web page and return its text."""
            self.fetched.append(url)
            return PAGE

        return fetch_page

    def next_page(self) -> Callable[[int], str]:
        def next_page(n: int) -> str:
            """Return page n of the article last opened."""
            self.paged.append(n)
            return TRAP

        return next_page


def _answer(ex: list[Any]) -> str:
    """The text of the last reply (the run's answer, when it ended with one)."""
    return str((ex[-1].reply["choices"][0].get("message") or {}).get("content") or "")[:120]


def _check(name: str, tools: Tools, proxy: RecordingProxy, guard: Any, wall: float) -> None:
    """The assertions every framework's run must pass, after one line of measurements."""
    ex = proxy.exchanges
    answer_reached = bool(ex) and "240 cm" in ex[-1].text()
    stats = guard.stats
    print(
        f"\n[{name}] {MODEL}: model calls {len(ex)}, tool calls run: fetch_page "
        f"{len(tools.fetched)}, next_page {len(tools.paged)} {tools.paged}; refusals "
        f"{stats['blocked']}; rules {stats['rules']}; server prompt tokens "
        f"{proxy.prompt_tokens} (cached {proxy.cached_tokens}); ledger "
        f"{guard.ledger.total.prompt_tokens}; answer reached the model: {answer_reached}; "
        f"wall {wall:.0f} s; answer {_answer(ex)!r}"
    )
    assert tools.fetched, "the model never called fetch_page (no tool call reached the agent)"
    # an identical call may run loop_limit times (the identical-call rule); a progress-free loop
    # is refused once progress_limit calls with changing arguments gave the same output:
    # [2, 2, 2, 3] is the longest a trap can run before one of the two refuses the next call
    rules = RuleSettings()
    assert len(tools.paged) <= rules.loop_limit + 1, f"the trap ran on: {tools.paged}"
    assert len(set(tools.paged)) <= rules.progress_limit, f"the trap ran on: {tools.paged}"
    assert not ex[-1].tool_calls, "the run did not end with an answer"
    assert '"arguments"' not in _answer(ex), "the run ended on a tool call left as text"
    assert answer_reached, "the answering request did not hold the answer sentence"
    assert guard.ledger.total.prompt_tokens == proxy.prompt_tokens


def test_langgraph_agent_escapes_the_trap_with_the_answer(qwen: LlamaCppModel) -> None:
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    from overseer.integrations.langgraph import OverseerMiddleware

    tools, mw = Tools(), OverseerMiddleware()
    with RecordingProxy(qwen.base_url) as proxy:
        chat = ChatOpenAI(
            model=qwen.name, base_url=proxy.base_url, api_key="none",
            max_tokens=128, temperature=0.0, max_retries=0, timeout=600,
        )  # fmt: skip
        agent = create_agent(
            chat, [tool(tools.fetch_page()), tool(tools.next_page())], middleware=[mw]
        )
        start = time.perf_counter()
        agent.invoke({"messages": [{"role": "user", "content": QUESTION}]}, {"recursion_limit": 30})
        _check("LangGraph", tools, proxy, mw.guard, time.perf_counter() - start)


def test_openai_agents_sdk_escapes_the_trap_with_the_answer(qwen: LlamaCppModel) -> None:
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, function_tool
    from openai import AsyncOpenAI

    from overseer.integrations.openai_agents import Overseer

    tools, ov = Tools(), Overseer()
    with RecordingProxy(qwen.base_url) as proxy:
        client = AsyncOpenAI(base_url=proxy.base_url, api_key="none", max_retries=0, timeout=600)
        agent = Agent(
            name="researcher",
            model=OpenAIChatCompletionsModel(qwen.name, client),
            tools=[function_tool(tools.fetch_page()), function_tool(tools.next_page())],
            model_settings=ModelSettings(max_tokens=128, temperature=0.0),
        )
        start = time.perf_counter()
        ov.run_sync(agent, QUESTION, max_turns=15, run_config=RunConfig(tracing_disabled=True))
        _check("OpenAI Agents SDK", tools, proxy, ov.guard, time.perf_counter() - start)


def test_pydantic_ai_agent_escapes_the_trap_with_the_answer(qwen: LlamaCppModel) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    from overseer.integrations.pydantic_ai import OverseerCapability

    tools, cap = Tools(), OverseerCapability()
    with RecordingProxy(qwen.base_url) as proxy:
        provider = OpenAIProvider(base_url=proxy.base_url, api_key="none")
        agent = Agent(
            OpenAIChatModel(qwen.name, provider=provider),
            name="researcher",
            tools=[tools.fetch_page(), tools.next_page()],
            model_settings={"max_tokens": 128, "temperature": 0.0, "timeout": 600},
        )
        start = time.perf_counter()
        asyncio.run(
            agent.run(QUESTION, capabilities=[cap], usage_limits=UsageLimits(request_limit=15))
        )
        _check("pydantic-ai", tools, proxy, cap.guard, time.perf_counter() - start)
