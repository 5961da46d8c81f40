"""A plain overseer team (a researcher with the two tools, then a writer) with and without
overseer's rule tier on the bus.

    pip install overseer-agents
    python examples/team.py                       # starts `overseer serve qwen2.5-coder-0.5b`

Both runs use the same team, model and tools; the only difference is
`supervisors=supervise_plugin("rules")(model)`: the LLM-free rule tier (loop breaker, masking,
purification, budgets). The task and the token count are in _shared.py.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

from _shared import QUESTION, TokenCount, Tools, ensure_server, noisy_page, options, outcome, report

from overseer.experiments.supervise import supervise_plugin
from overseer.models import load_model
from overseer.runtime import AgentSpec, Executor, TeamSpec, ToolResult
from overseer.supervise.rules import fired

TEAM = TeamSpec(
    agents=[
        AgentSpec(
            name="researcher",
            role="Web researcher",
            instructions="Open the page with fetch_page and report the fact the task asks for.",
            tools=["fetch_page", "next_page"],
        ),
        AgentSpec(
            name="writer",
            role="Answer writer",
            instructions="You have no tools. Answer the question in one sentence from the report.",
        ),
    ],
    spatial_edges=[("researcher", "writer")],
    decision="last",
)


class FunctionTool:
    """A Python function as a runtime tool (one argument, as the task's tools have)."""

    kind = "tool"

    def __init__(self, fn: Callable[[Any], str], arg: str, arg_type: str) -> None:
        self.fn, self.arg = fn, arg
        self.name, self.description = fn.__name__, (fn.__doc__ or "").strip()
        self.parameters = {
            "type": "object",
            "properties": {arg: {"type": arg_type}},
            "required": [arg],
        }

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        return ToolResult(self.fn(args.get(self.arg)))


def run(base_url: str, model_name: str, max_calls: int, page: str, overseer: bool):
    tools = Tools(page)
    with TokenCount(base_url) as count, tempfile.TemporaryDirectory() as traces:
        model = load_model(
            f"openai:{model_name}", base_url=count.base_url, api_key="none", timeout_s=900
        )  # a small local server on a busy core can take minutes for a long prompt
        executor = Executor(
            model,
            tools={
                "fetch_page": FunctionTool(tools.fetch_page, "url", "string"),
                "next_page": FunctionTool(tools.next_page, "n", "integer"),
            },
            supervisors=supervise_plugin("rules")(model) if overseer else (),
            max_steps=max_calls - 1,  # the researcher's steps; the writer makes one call
            max_tokens=160,
            trace_dir=traces,
        )
        result = asyncio.run(executor.run(TEAM, QUESTION))
        rules = fired(result.plugin_stats)  # each rule plug-in's firings, by rule
        why = f"the run stopped: {result.stop_reason}"  # e.g. context_window: the pages filled it
        return outcome(count, tools, result.answer, why), dict(rules)  # type: ignore[arg-type]


def main() -> None:
    a = options(__doc__)
    url, page = ensure_server(a.base_url, a.port, a.model), noisy_page(a.page_chars)
    without, _ = run(url, a.model, a.max_calls, page, overseer=False)
    with_, acted = run(url, a.model, a.max_calls, page, overseer=True)
    report("overseer team: Executor(model, supervisors=supervise_plugin('rules')(model))",
           without, with_, acted)  # fmt: skip


if __name__ == "__main__":
    main()
