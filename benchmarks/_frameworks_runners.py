"""The four framework agents of benchmarks/framework_tasks.py, the arms, and the overseer
processes a run starts (a fresh `overseer serve`, an `overseer proxy`).

Each runner builds the framework's own agent on an OpenAI-compatible base URL, attaches
overseer as documented when the arm has rules (`Job.rules`), runs the question to its end or
the framework's own cap, and returns the answer; `Job.attached` keeps overseer's adapter, whose
stats say what acted. Not a package: the entry point puts this folder on `sys.path`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from overseer.supervise.rules import RuleSettings
from overseer.tasks.pageloop import PageTools

FRAMEWORKS = ("langgraph", "openai-agents", "pydantic-ai", "smolagents")
ARMS = ("without", "with", "nomask", "proxy")
RULES: dict[str, RuleSettings | None] = {
    "without": None,
    "with": RuleSettings(),
    "nomask": RuleSettings(masking=False),
    "proxy": None,  # the proxy's own defaults
}


# -- the overseer processes (a fresh server, the proxy) ------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def overseer(*args: str, health: str, wait_s: float = 60.0) -> Iterator[str]:
    """`overseer ARGS --port P` on a free port while the block runs: its base URL (/v1)."""
    exe = shutil.which("overseer", path=os.path.dirname(sys.executable)) or "overseer"
    port, url = _free_port(), ""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([exe, *args, "--port", str(port)], stdout=err, stderr=err)
        try:
            deadline = time.monotonic() + wait_s
            while not url:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err.seek(0)
                    said = err.read().decode(errors="replace").strip().splitlines()[-1:]
                    raise RuntimeError(f"overseer {args[0]}: not up on port {port}: {said}")
                with contextlib.suppress(OSError):
                    urllib.request.urlopen(f"http://127.0.0.1:{port}{health}", timeout=2).close()
                    url = f"http://127.0.0.1:{port}/v1"
                time.sleep(0.1)
            yield url
        finally:
            proc.terminate()  # both drain on SIGTERM; the proxy ends every run's trace
            proc.wait(timeout=120)


@contextlib.contextmanager
def overseer_proxy(upstream: str) -> Iterator[tuple[str, Counter[str]]]:
    """`overseer proxy --upstream URL` for one run: its base URL, and the rules that acted
    (filled from its trace once it stopped)."""
    acted = Counter[str]()
    with tempfile.TemporaryDirectory() as traces:
        args = ("proxy", "--upstream", upstream, "--trace-dir", traces)
        with overseer(*args, health="/overseer/health") as url:
            yield url, acted
        for path in Path(traces).glob("**/*.jsonl"):
            for line in path.read_text(encoding="utf-8").splitlines():
                event = json.loads(line)
                if event.get("event") == "rule":
                    acted[str(event.get("rule"))] += 1


# -- the four frameworks --------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One agent run: where the model is, the tools, the question, overseer's rules (None:
    not attached), the caps."""

    url: str
    model: str
    tools: PageTools
    prompt: str
    rules: RuleSettings | None
    max_calls: int
    max_tokens: int
    attached: list[Any] = field(default_factory=list)  # overseer's adapter, once attached


def acted_of(stats: dict[str, Any]) -> dict[str, int]:
    """What acted in a run, from overseer's adapter's stats: each rule that fired, refusals."""
    out = {k: int(v) for k, v in (stats.get("rules") or {}).items() if v}
    return out | ({"refused": int(stats["blocked"])} if stats.get("blocked") else {})


def langgraph(j: Job) -> str | None:
    """LangChain v1 `create_agent` on ChatOpenAI; overseer: `OverseerMiddleware`."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import ModelCallLimitMiddleware
    from langchain_core.tools import ToolException, tool
    from langchain_openai import ChatOpenAI

    from overseer.integrations.langgraph import GuardSettings, OverseerMiddleware

    chat = ChatOpenAI(
        model=j.model, base_url=j.url, api_key="none", max_tokens=j.max_tokens, temperature=0,
        max_retries=0, timeout=1800,
    )  # fmt: skip
    j.tools.failure = ToolException  # the failing tool's error as LangChain reports one
    lc_tools = [tool(f) for f in j.tools.functions()]
    for t in lc_tools:
        t.handle_tool_error = True  # a ToolException becomes the tool's message
    mw: list[Any] = [OverseerMiddleware(GuardSettings(rules=j.rules))] if j.rules else []
    j.attached.extend(mw)
    cap = ModelCallLimitMiddleware(run_limit=j.max_calls, exit_behavior="error")  # both arms
    agent = create_agent(chat, lc_tools, middleware=[*mw, cap])
    question: Any = {"messages": [{"role": "user", "content": j.prompt}]}
    state = agent.invoke(question, {"recursion_limit": 4 * j.max_calls + 10})  # never binds
    return str(state["messages"][-1].content)


def openai_agents(j: Job) -> str | None:
    """The Agents SDK on OpenAIChatCompletionsModel; overseer: `Overseer().run_sync`."""
    import agents as sdk
    from openai import AsyncOpenAI

    from overseer.integrations.openai_agents import GuardSettings, Overseer

    client = AsyncOpenAI(base_url=j.url, api_key="none", max_retries=0, timeout=1800)
    agent = sdk.Agent(
        name="researcher",
        model=sdk.OpenAIChatCompletionsModel(j.model, client),
        tools=[sdk.function_tool(f) for f in j.tools.functions()],  # it reports tool errors
        model_settings=sdk.ModelSettings(max_tokens=j.max_tokens, temperature=0.0),
    )
    cfg = sdk.RunConfig(tracing_disabled=True)  # no traces posted to api.openai.com
    ov = Overseer(GuardSettings(rules=j.rules)) if j.rules else None
    run = ov.run_sync if ov else sdk.Runner.run_sync
    j.attached.extend([ov] if ov else [])
    return str(run(agent, j.prompt, max_turns=j.max_calls, run_config=cfg).final_output)


def pydantic_ai(j: Job) -> str | None:
    """pydantic-ai on OpenAIChatModel; overseer: `capabilities=[OverseerCapability()]`."""
    from pydantic_ai import Agent, ModelRetry, UsageLimits
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from overseer.integrations.pydantic_ai import GuardSettings, OverseerCapability

    j.tools.failure = ModelRetry  # the failing tool's error as pydantic-ai reports one
    agent = Agent(
        OpenAIChatModel(j.model, provider=OpenAIProvider(base_url=j.url, api_key="none")),
        name="researcher",
        tools=j.tools.functions(),
        retries=j.max_calls,  # the failing tool may be retried until the request limit
        model_settings={"max_tokens": j.max_tokens, "temperature": 0.0, "timeout": 1800},
    )
    cap = [OverseerCapability(GuardSettings(rules=j.rules))] if j.rules else []
    j.attached.extend(cap)
    limits = UsageLimits(request_limit=j.max_calls)
    return str(agent.run_sync(j.prompt, capabilities=cap, usage_limits=limits).output)


def smolagents(j: Job) -> str | None:
    """A smolagents ToolCallingAgent on OpenAIServerModel; overseer: `OverseerSupervisor`."""
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    from overseer.integrations.smolagents import OverseerSupervisor

    model = OpenAIServerModel(
        model_id=j.model, api_base=j.url, api_key="none", max_tokens=j.max_tokens, temperature=0.0
    )
    steps = max(1, j.max_calls - 1)  # at max_steps smolagents asks once more for an answer
    tools = [tool(f) for f in j.tools.functions()]  # it reports a tool's error itself
    agent = ToolCallingAgent(tools=tools, model=model, max_steps=steps, verbosity_level=-1)
    sup = OverseerSupervisor(mode="rules", rules=j.rules) if j.rules else None
    j.attached.extend([sup] if sup else [])
    answer = (sup.attach(agent) if sup else agent).run(j.prompt)
    return None if answer is None else str(answer)


RUNNERS: dict[str, Callable[[Job], str | None]] = {
    "langgraph": langgraph,
    "openai-agents": openai_agents,
    "pydantic-ai": pydantic_ai,
    "smolagents": smolagents,
}
