"""A smolagents ToolCallingAgent with and without overseer's step callback.

    pip install 'overseer-agents[smolagents]'
    python examples/smolagents_agent.py           # starts `overseer serve qwen2.5-coder-0.5b`

The same agent is built twice; the only difference is `OverseerSupervisor(mode="rules").attach`
(the LLM-free rule tier: no extra model call). The task and the token count are in _shared.py.
"""

from __future__ import annotations

from _shared import QUESTION, TokenCount, Tools, ensure_server, noisy_page, options, outcome, report
from smolagents import OpenAIServerModel, ToolCallingAgent, tool

from overseer.integrations.smolagents import OverseerSupervisor


def smol_tools(tools: Tools) -> list:
    """The task's tools in smolagents' form (it reads the arguments from the docstring)."""

    @tool
    def fetch_page(url: str) -> str:
        """Open a web page and return its text.

        Args:
            url: the page address
        """
        return tools.fetch_page(url)

    @tool
    def next_page(n: int) -> str:
        """Return page n of the article last opened.

        Args:
            n: the page number
        """
        return tools.next_page(n)

    return [fetch_page, next_page]


def run(base_url: str, model: str, max_calls: int, page: str, sup: OverseerSupervisor | None):
    tools = Tools(page)
    with TokenCount(base_url) as count:
        llm = OpenAIServerModel(
            model_id=model, api_base=count.base_url, api_key="none", max_tokens=128,
            temperature=0.0,
        )  # fmt: skip
        agent = ToolCallingAgent(
            tools=smol_tools(tools), model=llm, max_steps=max_calls, verbosity_level=0
        )
        if sup is not None:
            agent = sup.attach(agent)
        answer = agent.run(QUESTION)  # at max_steps smolagents asks once more for an answer
        return outcome(count, tools, answer)


def main() -> None:
    a = options(__doc__)
    url, page = ensure_server(a.base_url, a.port, a.model), noisy_page(a.page_chars)
    without = run(url, a.model, a.max_calls, page, None)
    sup = OverseerSupervisor(mode="rules")
    with_ = run(url, a.model, a.max_calls, page, sup)
    report("smolagents: OverseerSupervisor(mode='rules').attach(agent)", without, with_,
           sup.stats["rules"])  # fmt: skip


if __name__ == "__main__":
    main()
