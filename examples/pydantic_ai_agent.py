"""A pydantic-ai agent with and without overseer's capability.

    pip install 'overseer-agents[pydantic-ai]'
    python examples/pydantic_ai_agent.py          # starts `overseer serve qwen2.5-coder-0.5b`

The same agent runs twice; the only difference is `capabilities=[OverseerCapability()]` in
the run call. The task and the token count are in _shared.py.
"""

from __future__ import annotations

from _shared import QUESTION, TokenCount, Tools, ensure_server, noisy_page, options, outcome, report
from pydantic_ai import Agent
from pydantic_ai.exceptions import AgentRunError, UsageLimitExceeded
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import UsageLimits

from overseer.integrations.pydantic_ai import OverseerCapability


def run(base_url: str, model: str, max_calls: int, page: str, capabilities: list):
    tools = Tools(page)
    with TokenCount(base_url) as count:
        provider = OpenAIProvider(base_url=count.base_url, api_key="none")
        agent = Agent(
            OpenAIChatModel(model, provider=provider),
            name="researcher",
            tools=[tools.fetch_page, tools.next_page],
            model_settings={"max_tokens": 128, "temperature": 0.0},
        )
        try:
            result = agent.run_sync(
                QUESTION,
                capabilities=capabilities,
                usage_limits=UsageLimits(request_limit=max_calls),
            )
            return outcome(count, tools, result.output)
        except UsageLimitExceeded:
            return outcome(count, tools, None, f"stopped at {max_calls} requests")
        except AgentRunError as exc:  # e.g. an empty reply, retried, then given up
            return outcome(count, tools, None, f"pydantic-ai stopped: {exc}")


def main() -> None:
    a = options(__doc__)
    url, page = ensure_server(a.base_url, a.port, a.model), noisy_page(a.page_chars)
    without = run(url, a.model, a.max_calls, page, [])
    overseer = OverseerCapability()
    with_ = run(url, a.model, a.max_calls, page, [overseer])
    report("pydantic-ai: agent.run_sync(task, capabilities=[OverseerCapability()])", without,
           with_, overseer.stats["rules"])  # fmt: skip


if __name__ == "__main__":
    main()
