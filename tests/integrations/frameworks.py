"""One agent run per framework (LangGraph, OpenAI Agents SDK, pydantic-ai) with overseer
attached, the same way for each, so a test can ask the three the same question.

    out = run_agent("langgraph", srv.base_url, [job_status], "Is job 42 done?", settings)
    out.answer, out.guard.ledger, out.error  # error: what the run raised (e.g. RunStopped)

Tools are plain functions with a docstring; each framework wraps them its own way. The agent
is named "researcher"; `model` is the model name the client asks for; every framework stops
after `MAX_REQUESTS` model requests at most (its own limit: an error in `Outcome.error`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from overseer.integrations._guard import Guard, GuardSettings

FRAMEWORKS = ("langgraph", "openai-agents", "pydantic-ai")
AGENT = "researcher"
MAX_REQUESTS = 10
Tool = Callable[..., str]


@dataclass
class Outcome:
    """What one guarded run gave: the final answer, the guard, the error it raised (or None)."""

    answer: str
    guard: Guard
    error: BaseException | None = None


def run_agent(
    framework: str,
    base_url: str,
    tools: list[Tool],
    question: str,
    settings: GuardSettings | None = None,
    *,
    trace_dir: Path | None = None,
    model: str = "scripted",
) -> Outcome:
    """Run one agent of `framework` on `question` with overseer attached (its own guard)."""
    run = {"langgraph": _langgraph, "openai-agents": _openai_agents, "pydantic-ai": _pydantic_ai}
    return run[framework](base_url, tools, question, settings, trace_dir, model)


def _langgraph(
    base_url: str,
    tools: list[Tool],
    question: str,
    settings: GuardSettings | None,
    trace_dir: Path | None,
    model: str,
) -> Outcome:
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    from overseer.integrations.langgraph import OverseerMiddleware

    chat = ChatOpenAI(model=model, base_url=base_url, api_key="none", max_retries=0)
    mw = OverseerMiddleware(settings, trace_dir=trace_dir)
    agent = create_agent(chat, [tool(t) for t in tools], middleware=[mw], name=AGENT)
    try:
        config = {"recursion_limit": 2 * MAX_REQUESTS}  # a model node and a tool node each
        out = agent.invoke({"messages": [{"role": "user", "content": question}]}, config)
    except Exception as exc:
        return Outcome("", mw.guard, exc)
    return Outcome(str(out["messages"][-1].content), mw.guard)


def _openai_agents(
    base_url: str,
    tools: list[Tool],
    question: str,
    settings: GuardSettings | None,
    trace_dir: Path | None,
    model: str,
) -> Outcome:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, function_tool
    from openai import AsyncOpenAI

    from overseer.integrations.openai_agents import Overseer

    client = AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0)
    sdk_model = OpenAIChatCompletionsModel(model, client)
    agent = Agent(name=AGENT, model=sdk_model, tools=[function_tool(t) for t in tools])
    ov = Overseer(settings, trace_dir=trace_dir)
    try:
        config = RunConfig(tracing_disabled=True)
        result = ov.run_sync(agent, question, run_config=config, max_turns=MAX_REQUESTS)
    except Exception as exc:
        return Outcome("", ov.guard, exc)
    return Outcome(str(result.final_output), ov.guard)


def _pydantic_ai(
    base_url: str,
    tools: list[Tool],
    question: str,
    settings: GuardSettings | None,
    trace_dir: Path | None,
    model: str,
) -> Outcome:
    from pydantic_ai import Agent, UsageLimits
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from overseer.integrations.pydantic_ai import OverseerCapability

    chat = OpenAIChatModel(model, provider=OpenAIProvider(base_url=base_url, api_key="none"))
    agent = Agent(chat, name=AGENT, tools=tools)
    cap = OverseerCapability(settings, trace_dir=trace_dir)
    try:
        limits = UsageLimits(request_limit=MAX_REQUESTS)
        result = agent.run_sync(question, capabilities=[cap], usage_limits=limits)
    except Exception as exc:
        return Outcome("", cap.guard, exc)
    return Outcome(str(result.output), cap.guard)
