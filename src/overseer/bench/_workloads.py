"""Tool-using teams per task kind, for supervision benchmarks: browsing and coding workloads.

browse tasks: a researcher with web tools reports to a writer who gives the answer;
code tasks: a coder with the sandboxed Python tool hands its function to a reviewer who can
run it too; other tasks: a chain of reasoning agents. Supervisors, when given, sit on the bus.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from overseer.bench._solvers import Solver, SolverOutput
from overseer.bench._teams import _extractor, team_query
from overseer.models import Model
from overseer.runtime import AgentSpec, Executor, PythonTool, Supervisor, TeamSpec, Tool, make_team
from overseer.tasks import Task, browser_tools

Verifier = Callable[[Mapping[str, Tool]], Any]


def workload_team(task: Task) -> tuple[TeamSpec, dict[str, Tool]]:
    """The team and tools that fit a task (see the module docstring)."""
    if task.suite == "browse-sample":
        tools: dict[str, Tool] = dict(browser_tools(task))
        team = TeamSpec(
            agents=[
                AgentSpec(
                    name="researcher",
                    role="Web researcher",
                    instructions=(
                        "Find the fact with the tools: search, visit the best result, and "
                        "page down until you find the fact table. Then answer with the fact "
                        "and where you found it."
                    ),
                    tools=list(tools),
                ),
                AgentSpec(
                    name="writer",
                    role="Answer writer",
                    instructions="Give the final answer from the researcher's report.",
                ),
            ],
            spatial_edges=[("researcher", "writer")],
            decision="last",
            rounds=1,
        )
        return team, tools
    if task.kind == "code":
        tools = {"python": PythonTool()}
        team = TeamSpec(
            agents=[
                AgentSpec(
                    name="coder",
                    role="Python programmer",
                    instructions=(
                        "Write the function, run it with the python tool on the examples of "
                        "its docstring, fix it if it fails, then answer with the whole function "
                        "in one ```python block."
                    ),
                    tools=["python"],
                ),
                AgentSpec(
                    name="reviewer",
                    role="Code reviewer",
                    instructions=(
                        "Check the coder's function (run it with the python tool if unsure), "
                        "fix any bug, and answer with the final function in one ```python block."
                    ),
                    tools=["python"],
                ),
            ],
            spatial_edges=[("coder", "reviewer")],
            decision="last",
            rounds=1,
        )
        return team, tools
    return make_team("chain", 2, rounds=1, pool="reasoning", decision="last"), {}


def workload_solver(
    model: Model,
    *,
    supervisors: Callable[[Model], Sequence[Supervisor]] | None = None,
    verifier: Verifier | None = None,
    name: str = "baseline",
    trace_dir: str | Path = "runs/bench",
    max_steps: int = 8,
) -> Solver:
    """Runs each task's workload team; supervisors' stats go into the result's `extra`."""

    async def solve(task: Task, seed: int) -> SolverOutput:
        team, tools = workload_team(task)
        sups = list(supervisors(model)) if supervisors else []
        ex = Executor(
            model,
            supervisors=sups,
            tools=tools,
            trace_dir=Path(trace_dir) / name,
            extract_answer=_extractor(task),
            verifier=verifier(tools) if verifier else None,
            max_steps=max_steps,
            seed=seed,
        )
        safe = task.id.replace("/", "_")
        res = await ex.run(team, team_query(task), run_id=f"{safe}-s{seed}-{uuid.uuid4().hex[:6]}")
        extra: dict[str, object] = {
            "trace": str(res.trace_path),
            "stop": res.stop_reason,
            "failures": len(res.failures),
        }
        for s in sups:
            stats = getattr(s, "finished", None)
            if stats:
                extra[f"stats:{s.name}"] = stats[-1]
        return SolverOutput(
            res.answer,
            res.usage_by_actor,
            error=res.error if res.stop_reason != "done" else None,
            extra=extra,
        )

    return solve
