"""Tokens saved by overseer inside agent frameworks on a 50,000-character tool page.

Each framework's agent calls a tool that returns the page, then answers; it runs twice on the
scripted loopback chat server (tests/integrations/loopback.py), without and with overseer, and
the prompt tokens are the ones that server reported for the whole run. No model is loaded.

    python benchmarks/integrations_page.py [--frameworks langgraph]

A framework adds a row with a function `(serve) -> Row` in ROWS: `serve()` starts a fresh
loopback server scripted to call `fetch_page(url=...)` once and then answer.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from rich.console import Console
from rich.table import Table


def _load_loopback() -> ModuleType:
    """The test suite's loopback server module, loaded from its file (tests is no package)."""
    path = Path(__file__).resolve().parents[1] / "tests" / "integrations" / "loopback.py"
    spec = importlib.util.spec_from_file_location("overseer_bench_loopback", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"loopback server: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


lb = _load_loopback()
PAGE = lb.long_page()


@dataclass(frozen=True)
class Row:
    """One framework: its hook, what overseer changes there, prompt tokens without/with."""

    framework: str
    hook: str
    changes: str
    plain_tokens: int
    guarded_tokens: int

    @property
    def saving(self) -> float:
        return 1 - self.guarded_tokens / self.plain_tokens if self.plain_tokens else 0.0


Serve = Callable[[], Any]  # -> a started LoopbackServer (close it when done)


def langgraph_row(serve: Serve) -> Row:
    """LangChain v1 create_agent on ChatOpenAI, without and with OverseerMiddleware."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    from overseer.integrations.langgraph import OverseerMiddleware

    @tool
    def fetch_page(url: str) -> str:
        """Open a web page and return its text."""
        return str(PAGE)

    def run(middleware: list[Any]) -> int:
        srv = serve()
        try:
            chat = ChatOpenAI(model="scripted", base_url=srv.base_url, api_key="none")
            agent = create_agent(chat, [fetch_page], middleware=middleware)
            agent.invoke({"messages": [{"role": "user", "content": lb.PAGE_QUESTION}]})
            return int(srv.prompt_tokens)
        finally:
            srv.close()

    return Row(
        "LangGraph / LangChain v1",
        "create_agent(middleware=[...]): wrap_tool_call, wrap_model_call",
        "blocks repeated calls, purifies long outputs, masks old ones, budget, ledger",
        run([]),
        run([OverseerMiddleware()]),
    )


def openai_agents_row(serve: Serve) -> Row:
    """OpenAI Agents SDK on OpenAIChatCompletionsModel, without and with Overseer (no tracing)."""
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
    from openai import AsyncOpenAI

    from overseer.integrations.openai_agents import Overseer

    @function_tool
    def fetch_page(url: str) -> str:
        """Open a web page and return its text."""
        return str(PAGE)

    def run(overseer: Overseer | None) -> int:
        srv = serve()
        try:
            client = AsyncOpenAI(base_url=srv.base_url, api_key="none")
            model = OpenAIChatCompletionsModel("scripted", client)
            agent = Agent(name="researcher", model=model, tools=[fetch_page])
            cfg = RunConfig(tracing_disabled=True)  # never post traces to api.openai.com
            if overseer is None:
                Runner.run_sync(agent, lb.PAGE_QUESTION, run_config=cfg)
            else:
                overseer.run_sync(agent, lb.PAGE_QUESTION, run_config=cfg)
            return int(srv.prompt_tokens)
        finally:
            srv.close()

    return Row(
        "OpenAI Agents SDK",
        "tool input/output guardrails, call_model_input_filter, RunHooks",
        "blocks repeated calls, purifies long outputs, masks old ones, budget, ledger",
        run(None),
        run(Overseer()),
    )


def pydantic_ai_row(serve: Serve) -> Row:
    """pydantic-ai on OpenAIChatModel, without and with OverseerCapability."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from overseer.integrations.pydantic_ai import OverseerCapability

    def run(capabilities: list[Any]) -> int:
        srv = serve()
        try:
            provider = OpenAIProvider(base_url=srv.base_url, api_key="none")
            agent = Agent(OpenAIChatModel("scripted", provider=provider), name="researcher")

            @agent.tool_plain
            def fetch_page(url: str) -> str:
                """Open a web page and return its text."""
                return str(PAGE)

            agent.run_sync(lb.PAGE_QUESTION, capabilities=capabilities)
            return int(srv.prompt_tokens)
        finally:
            srv.close()

    return Row(
        "pydantic-ai",
        "capabilities=[...]: wrap_tool_execute, before/after_model_request",
        "blocks repeated calls, purifies long outputs, masks old ones, budget, ledger",
        run([]),
        run([OverseerCapability()]),
    )


ROWS: dict[str, Callable[[Serve], Row]] = {
    "langgraph": langgraph_row,
    "openai-agents": openai_agents_row,
    "pydantic-ai": pydantic_ai_row,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--frameworks", default=",".join(ROWS), help=f"some of {','.join(ROWS)}")
    a = ap.parse_args()
    names = [n for n in a.frameworks.split(",") if n]
    unknown = [n for n in names if n not in ROWS]
    if unknown:
        ap.error(f"--frameworks: unknown {unknown}; expected some of {sorted(ROWS)}")

    def serve() -> Any:
        return lb.LoopbackServer(lb.page_script())

    table = Table(title=f"Prompt tokens of one run with a {len(PAGE):,}-character tool page")
    for col in ("framework", "hook used", "what overseer changes", "without", "with", "saving"):
        table.add_column(col, justify="right" if col in ("without", "with", "saving") else "left")
    for name in names:
        r = ROWS[name](serve)
        table.add_row(
            r.framework,
            r.hook,
            r.changes,
            f"{r.plain_tokens:,}",
            f"{r.guarded_tokens:,}",
            f"{r.saving:.1%}",
        )
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
