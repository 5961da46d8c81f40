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
from typing import Any, TypeVar

from overseer.supervise.rules import RuleSettings
from overseer.tasks.pageloop import PageTools

T = TypeVar("T")
FRAMEWORKS = ("langgraph", "openai-agents", "pydantic-ai", "smolagents")
#: overseer's arms, then the peers a user would pick instead (issue 48): LangChain v1's own
#: context editing with its tool-call limit (documented defaults, and settings chosen on the
#: development tasks), the Agents SDK's ToolOutputTrimmer, and plain observation masking
ARMS = ("without", "with", "nomask", "proxy", "lc-default", "lc-tuned", "trim", "mask")
PEERS = ("lc-default", "lc-tuned", "trim", "mask")
#: the frameworks a peer exists for (the others: every framework)
PEER_OF = {"lc-default": ("langgraph",), "lc-tuned": ("langgraph",), "trim": ("openai-agents",)}
RULES: dict[str, RuleSettings | None] = {
    "without": None,
    "with": RuleSettings(),
    "nomask": RuleSettings(masking=False),
    "proxy": None,  # the proxy's own defaults
} | dict.fromkeys(PEERS)
#: observation masking keeps the last M tool outputs whole, the older ones a placeholder;
#: M = 10 as in "The Complexity Trap" (Lindenbauer et al., 2025), whose agents masked all but
#: the 10 latest observations
MASK_KEEP = 10
MASKED = "[old tool output omitted]"
#: LangChain's ClearToolUsesEdit as documented (trigger 100,000 tokens, keep 3) with
#: ToolCallLimitMiddleware as its documentation's example (thread 20, run 10); and the settings
#: chosen on the development seed's page sizes: clear from 2,000 tokens keeping the latest
#: output, at most 4 tool calls a run
LC_EDITS = {"lc-default": {}, "lc-tuned": {"trigger": 2_000, "keep": 1}}
LC_LIMITS = {"lc-default": {"thread_limit": 20, "run_limit": 10}, "lc-tuned": {"run_limit": 4}}


def applies(framework: str, arm: str) -> bool:
    """Whether `arm` exists for `framework` (a framework's own peer only on it)."""
    return framework in PEER_OF.get(arm, FRAMEWORKS)


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
    arm: str = "with"
    attached: list[Any] = field(default_factory=list)  # overseer's adapter, once attached
    peer: Counter[str] = field(default_factory=Counter)  # what a peer did (outputs masked)


def acted_of(stats: dict[str, Any]) -> dict[str, int]:
    """What acted in a run, from overseer's adapter's stats: each rule that fired, refusals,
    answers asked again and answers replaced as unsupported (issue 48)."""
    out = {k: int(v) for k, v in (stats.get("rules") or {}).items() if v}
    named = {"refused": "blocked", "reasked": "reasked", "unsupported": "unsupported"}
    return out | {k: int(stats[s]) for k, s in named.items() if stats.get(s)}


#: what the peers leave in a tool message they changed: LangChain's placeholder, the masking
#: arms' placeholder, the Agents SDK trimmer's preview, LangChain's tool-call-limit message
_PEER_MARKS = {
    "cleared": "[cleared]",
    "masked": MASKED,
    "trimmed": "[Trimmed:",
    "limited": "call limit",
}


def peer_acted(counted: Counter[str], requests: list[dict[str, Any]]) -> dict[str, int]:
    """What a peer did in a run: its own counts, else the most tool messages of one request
    that carry a peer's mark."""
    if +counted:  # the positive counts
        return dict(+counted)
    out: Counter[str] = Counter()
    for body in requests:
        tools = [str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool"]
        for name, mark in _PEER_MARKS.items():
            out[name] = max(out[name], sum(mark in t for t in tools))
    return {k: v for k, v in out.items() if v}


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
    mw += _langchain_peer(j)
    cap = ModelCallLimitMiddleware(run_limit=j.max_calls, exit_behavior="error")  # both arms
    agent = create_agent(chat, lc_tools, middleware=[*mw, cap])
    question: Any = {"messages": [{"role": "user", "content": j.prompt}]}
    state = agent.invoke(question, {"recursion_limit": 4 * j.max_calls + 10})  # never binds
    return str(state["messages"][-1].content)


def _langchain_peer(j: Job) -> list[Any]:
    """LangChain v1's own middleware for the peer arms (none for the others)."""
    from langchain.agents.middleware import (
        ClearToolUsesEdit,
        ContextEditingMiddleware,
        ToolCallLimitMiddleware,
    )

    if j.arm == "mask":  # masking is clearing every tool output but the last M, always
        return [ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=0, keep=MASK_KEEP)])]
    if j.arm not in LC_EDITS:
        return []
    edit = ClearToolUsesEdit(**LC_EDITS[j.arm])
    return [ContextEditingMiddleware(edits=[edit]), ToolCallLimitMiddleware(**LC_LIMITS[j.arm])]


def _older(outputs: list[T], j: Job) -> list[T]:
    """The tool outputs masking replaces: all but the last MASK_KEEP (counted on the job)."""
    old = outputs[: max(0, len(outputs) - MASK_KEEP)]
    j.peer["masked"] += len(old)
    return old


def _sdk_filter(j: Job) -> Any:
    """The Agents SDK's `call_model_input_filter` of the arm: its ToolOutputTrimmer, or
    observation masking of `function_call_output` items; None for the other arms."""
    from agents.extensions.tool_output_trimmer import ToolOutputTrimmer
    from agents.run_config import ModelInputData

    if j.arm == "trim":
        trimmer = ToolOutputTrimmer()

        def trim(data: Any) -> Any:
            out = trimmer(data)
            j.peer["trimmed"] += sum(
                a != b for a, b in zip(out.input, data.model_data.input, strict=False)
            )
            return out

        return trim
    if j.arm != "mask":
        return None

    def mask(data: Any) -> Any:
        items = list(data.model_data.input)
        at = [i for i, x in enumerate(items) if _kind(x) == "function_call_output"]
        for i in _older(at, j):
            items[i] = {**items[i], "output": MASKED}
        return ModelInputData(input=items, instructions=data.model_data.instructions)

    return mask


def _kind(item: Any) -> str | None:
    return item.get("type") if isinstance(item, dict) else getattr(item, "type", None)


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
    cfg.call_model_input_filter = _sdk_filter(j)
    ov = Overseer(GuardSettings(rules=j.rules)) if j.rules else None
    run = ov.run_sync if ov else sdk.Runner.run_sync
    j.attached.extend([ov] if ov else [])
    return str(run(agent, j.prompt, max_turns=j.max_calls, run_config=cfg).final_output)


def pydantic_ai(j: Job) -> str | None:
    """pydantic-ai on OpenAIChatModel; overseer: `capabilities=[OverseerCapability()]`."""
    from pydantic_ai import Agent, ModelRetry, UsageLimits
    from pydantic_ai.capabilities import ProcessHistory
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
    cap: list[Any] = [OverseerCapability(GuardSettings(rules=j.rules))] if j.rules else []
    j.attached.extend(cap)
    cap += [ProcessHistory(_pai_mask(j))] if j.arm == "mask" else []
    limits = UsageLimits(request_limit=j.max_calls)
    return str(agent.run_sync(j.prompt, capabilities=cap, usage_limits=limits).output)


def _pai_mask(j: Job) -> Callable[[list[Any]], list[Any]]:
    """pydantic-ai's history processor for observation masking: tool returns but the last M
    carry the placeholder."""
    import dataclasses

    from pydantic_ai import messages as pm

    def mask(history: list[Any]) -> list[Any]:
        at = [
            (i, k)
            for i, m in enumerate(history)
            if isinstance(m, pm.ModelRequest)
            for k, p in enumerate(m.parts)
            if isinstance(p, pm.ToolReturnPart)
        ]
        out = list(history)
        for i, k in _older(at, j):
            parts = list(out[i].parts)
            parts[k] = dataclasses.replace(parts[k], content=MASKED)
            out[i] = dataclasses.replace(out[i], parts=parts)
        return out

    return mask


def _smol_mask(j: Job) -> Callable[..., None]:
    """A smolagents step callback for observation masking: the observations of all but the
    last M action steps are the placeholder (smolagents rebuilds its prompt from memory)."""

    def mask(step: Any, agent: Any) -> None:
        from smolagents.memory import ActionStep

        steps = [s for s in agent.memory.steps if isinstance(s, ActionStep) and s.observations]
        old = [s for s in steps[: max(0, len(steps) - MASK_KEEP)] if s.observations != MASKED]
        j.peer["masked"] += len(old)
        for s in old:
            s.observations = MASKED

    return mask


def smolagents(j: Job) -> str | None:
    """A smolagents ToolCallingAgent on OpenAIServerModel; overseer: `OverseerSupervisor`."""
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    from overseer.integrations.smolagents import OverseerSupervisor

    model = OpenAIServerModel(
        model_id=j.model, api_base=j.url, api_key="none", max_tokens=j.max_tokens, temperature=0.0
    )
    steps = max(1, j.max_calls - 1)  # at max_steps smolagents asks once more for an answer
    tools = [tool(f) for f in j.tools.functions()]  # it reports a tool's error itself
    callbacks = [_smol_mask(j)] if j.arm == "mask" else []
    agent = ToolCallingAgent(
        tools=tools, model=model, max_steps=steps, verbosity_level=-1, step_callbacks=callbacks
    )
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
