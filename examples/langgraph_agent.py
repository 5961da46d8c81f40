"""A LangChain v1 agent (LangGraph underneath) with and without overseer's middleware.

    pip install 'overseer-agents[langgraph]'
    python examples/langgraph_agent.py            # starts `overseer serve qwen2.5-coder-0.5b`

The agent is built twice from the same parts; the only difference is
`middleware=[OverseerMiddleware()]`. The task and the token count are in _shared.py.
"""

from __future__ import annotations

from _shared import QUESTION, TokenCount, Tools, ensure_server, noisy_page, options, outcome, report
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.errors import GraphRecursionError

from overseer.integrations.langgraph import OverseerMiddleware


def run(base_url: str, model: str, max_calls: int, page: str, middleware: list) -> tuple:
    tools = Tools(page)
    with TokenCount(base_url) as count:
        chat = ChatOpenAI(
            model=model, base_url=count.base_url, api_key="none", max_tokens=128, temperature=0
        )
        agent = create_agent(
            chat, [tool(tools.fetch_page), tool(tools.next_page)], middleware=middleware
        )
        try:
            state = agent.invoke(
                {"messages": [{"role": "user", "content": QUESTION}]},
                {"recursion_limit": 2 * max_calls},  # a model call and a tool call per step
            )
            return outcome(count, tools, state["messages"][-1].content)
        except GraphRecursionError:
            return outcome(count, tools, None, f"stopped at {max_calls} model calls")


def main() -> None:
    a = options(__doc__)
    url, page = ensure_server(a.base_url, a.port, a.model), noisy_page(a.page_chars)
    without = run(url, a.model, a.max_calls, page, [])
    overseer = OverseerMiddleware()
    with_ = run(url, a.model, a.max_calls, page, [overseer])
    report("LangGraph: create_agent(..., middleware=[OverseerMiddleware()])", without, with_,
           overseer.stats["rules"])  # fmt: skip


if __name__ == "__main__":
    main()
