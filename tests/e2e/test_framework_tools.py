"""A real tool call through each framework on the embedded model's own HTTP server.

LangChain/LangGraph, the OpenAI Agents SDK and pydantic-ai talk to `LlamaCppModel.base_url`
(the server the embedded model starts on 127.0.0.1) exactly as to any OpenAI endpoint. The
first model call forces a tool (`tool_choice="required"`, each framework's own way): the
server constrains SmolLM2-135M's output to a call of one of the request's tools and returns
it as OpenAI `tool_calls`; the framework runs the tool, sends its result back, and the next
call (tool choice free again) ends the run. SmolLM2 never writes a call unforced; qwen 0.5B's
unforced calls (bare JSON) are in test_framework_trap_qwen.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from overseer.models import LlamaCppModel

pytestmark = pytest.mark.e2e

QUESTION = "What is the weather in Paris? Use the weather tool."
REPORT = "Sunny and 21 C in {city}; wind from the west."


def _weather_tool(calls: list[str]) -> Callable[[str], str]:
    def lookup_weather(city: str) -> str:
        """Look up today's weather in a city."""
        calls.append(city)
        return REPORT.format(city=city)

    return lookup_weather


def test_langgraph_agent_runs_the_tool_the_server_returns(embedded_model: LlamaCppModel) -> None:
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    class FirstCallForced(AgentMiddleware):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            if not any(isinstance(m, ToolMessage) for m in request.messages):
                request = request.override(tool_choice="required")
            return handler(request)

    calls: list[str] = []
    chat = ChatOpenAI(
        model=embedded_model.name, base_url=embedded_model.base_url, api_key="none",
        max_tokens=64, temperature=0.0, max_retries=0,
    )  # fmt: skip
    agent = create_agent(chat, [tool(_weather_tool(calls))], middleware=[FirstCallForced()])
    out = agent.invoke({"messages": [{"role": "user", "content": QUESTION}]})
    msgs = out["messages"]
    asked = [m for m in msgs if isinstance(m, AIMessage) and m.tool_calls]
    assert len(asked) == 1 and asked[0].tool_calls[0]["name"] == "lookup_weather"
    city = asked[0].tool_calls[0]["args"]["city"]
    assert calls == [city]  # the tool really ran, with the model's argument
    (result,) = [m for m in msgs if isinstance(m, ToolMessage)]
    assert result.content == REPORT.format(city=city)
    assert result.tool_call_id == asked[0].tool_calls[0]["id"]
    # the run went on after the tool: one more model call, free to answer in text
    assert isinstance(msgs[-1], AIMessage) and not msgs[-1].tool_calls


def test_openai_agents_sdk_runs_the_tool_the_server_returns(
    embedded_model: LlamaCppModel,
) -> None:
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        RunConfig,
        Runner,
        function_tool,
    )
    from openai import AsyncOpenAI

    calls: list[str] = []
    client = AsyncOpenAI(base_url=embedded_model.base_url, api_key="none", max_retries=0)
    agent = Agent(
        name="forecaster",
        model=OpenAIChatCompletionsModel(embedded_model.name, client),
        tools=[function_tool(_weather_tool(calls))],
        # forced once: the SDK resets tool_choice after a tool call (reset_tool_choice)
        model_settings=ModelSettings(tool_choice="required", max_tokens=64, temperature=0.0),
    )
    result = Runner.run_sync(
        agent, QUESTION, max_turns=4, run_config=RunConfig(tracing_disabled=True)
    )
    items = result.to_input_list()
    asked = [i for i in items if i.get("type") == "function_call"]
    assert [i["name"] for i in asked] == ["lookup_weather"]
    assert len(calls) == 1 and calls[0] in asked[0]["arguments"]
    (output,) = [i for i in items if i.get("type") == "function_call_output"]
    assert output["output"] == REPORT.format(city=calls[0])
    assert output["call_id"] == asked[0]["call_id"]
    assert isinstance(result.final_output, str)
    assert len(result.raw_responses) == 2  # the call, then the answer after the tool


def test_pydantic_ai_agent_runs_the_tool_the_server_returns(
    embedded_model: LlamaCppModel,
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ToolCallPart, ToolReturnPart
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    class FirstCallForced(AbstractCapability[Any]):
        def get_model_settings(self) -> Any:
            return lambda ctx: {"tool_choice": "required"} if ctx.run_step <= 1 else {}

    calls: list[str] = []
    provider = OpenAIProvider(base_url=embedded_model.base_url, api_key="none")
    agent = Agent(
        OpenAIChatModel(embedded_model.name, provider=provider),
        tools=[_weather_tool(calls)],
        model_settings={"max_tokens": 64, "temperature": 0.0},
    )
    result = asyncio.run(agent.run(QUESTION, capabilities=[FirstCallForced()]))
    parts = [p for m in result.all_messages() for p in m.parts]
    asked = [p for p in parts if isinstance(p, ToolCallPart)]
    assert [p.tool_name for p in asked] == ["lookup_weather"]
    assert calls == [asked[0].args_as_dict()["city"]]
    (ret,) = [p for p in parts if isinstance(p, ToolReturnPart)]
    assert ret.content == REPORT.format(city=calls[0])
    assert ret.tool_call_id == asked[0].tool_call_id
    assert isinstance(result.output, str)
    assert result.usage.requests == 2
