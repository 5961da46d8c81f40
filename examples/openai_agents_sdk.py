"""An OpenAI Agents SDK agent with and without overseer.

    pip install 'overseer-agents[openai-agents]'
    python examples/openai_agents_sdk.py          # starts `overseer serve qwen2.5-coder-0.5b`

The same agent runs through `Runner.run_sync` (without) and `Overseer().run_sync` (with): overseer
attaches tool guardrails, a model-input filter and run hooks to a clone of the agent; the
agent and its tools are unchanged. The task and the token count are in _shared.py.
"""

from __future__ import annotations

from _shared import QUESTION, TokenCount, Tools, ensure_server, noisy_page, options, outcome, report
from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
)
from agents.exceptions import AgentsException, MaxTurnsExceeded
from openai import AsyncOpenAI

from overseer.integrations.openai_agents import Overseer


def run(base_url: str, model: str, max_calls: int, page: str, overseer: Overseer | None):
    tools = Tools(page)
    with TokenCount(base_url) as count:
        agent = Agent(
            name="researcher",
            model=OpenAIChatCompletionsModel(
                model, AsyncOpenAI(base_url=count.base_url, api_key="none")
            ),
            tools=[function_tool(tools.fetch_page), function_tool(tools.next_page)],
            model_settings=ModelSettings(max_tokens=128, temperature=0.0),
        )
        config = RunConfig(tracing_disabled=True)  # no traces posted to api.openai.com
        try:
            runner = overseer.run_sync if overseer else Runner.run_sync
            result = runner(agent, QUESTION, max_turns=max_calls, run_config=config)
            return outcome(count, tools, result.final_output)
        except MaxTurnsExceeded:
            return outcome(count, tools, None, f"stopped at {max_calls} turns")
        except AgentsException as exc:  # e.g. a reply the SDK cannot use
            return outcome(count, tools, None, f"the SDK stopped: {exc}")


def main() -> None:
    a = options(__doc__)
    url, page = ensure_server(a.base_url, a.port, a.model), noisy_page(a.page_chars)
    without = run(url, a.model, a.max_calls, page, None)
    overseer = Overseer()
    with_ = run(url, a.model, a.max_calls, page, overseer)
    report("OpenAI Agents SDK: Overseer().run_sync(agent, task)", without, with_,
           overseer.stats["rules"])  # fmt: skip


if __name__ == "__main__":
    main()
