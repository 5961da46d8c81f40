"""Tool-using teams per task kind, for supervision benchmarks: browsing and coding workloads.

browse tasks: a researcher with web tools reports to a writer who gives the answer;
code tasks: a coder with the sandboxed Python tool hands its function to a reviewer who can
run it too; other tasks: a chain of reasoning agents. Supervisors, when given, sit on the bus.
"""

from __future__ import annotations

from pathlib import Path

from overseer.bench._factory import ExecutorSettings, TeamSetup, executor_solver
from overseer.bench._solvers import PluginFactory, Solver, plugin_verifier
from overseer.models import Model
from overseer.runtime import AgentSpec, PythonTool, TeamSpec, Tool, make_team
from overseer.tasks import Task, open_environment

#: Agents' steps are grammar-constrained JSON, which refuses a raw line break inside a string:
#: a small model then closes the string after the `def` line (6 of 12 train-split answers were
#: a bare signature). The code agents answer in plain text (`answer_format="text"`: a raw `"`
#: cut 3 answers in a JSON string), but the python tool's code is still a JSON string; saying
#: how to write code there is part of the format, not tuning.
CODE_IN_JSON = (
    "The python tool's code is a JSON string: write each line break as \\n and keep the "
    "indentation."
)


def _browse_team(tools: list[str]) -> TeamSpec:
    """A researcher with the environment's web tools reports to a writer who answers."""
    return TeamSpec(
        agents=[
            AgentSpec(
                name="researcher",
                role="Web researcher",
                instructions=(
                    "You do not know the fact: it is only on its web page. Visit the "
                    "page (web_search finds its address), page_down until the fact table "
                    "shows the fact, then answer with the number you read there."
                ),
                tools=tools,
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


def _code_team() -> TeamSpec:
    """A coder with the sandboxed Python tool hands its function to a reviewer who can run it."""
    return TeamSpec(
        agents=[
            AgentSpec(
                name="coder",
                role="Python programmer",
                instructions=(
                    "Write the function, run it with the python tool on the examples of "
                    "its docstring, fix it if it fails, then answer with the whole function "
                    "in one ```python block. " + CODE_IN_JSON
                ),
                tools=["python"],
                answer_format="text",
            ),
            AgentSpec(
                name="reviewer",
                role="Code reviewer",
                instructions=(
                    "Check the coder's function (run it with the python tool if unsure), "
                    "fix any bug, and answer with the final function in one ```python "
                    "block. " + CODE_IN_JSON
                ),
                tools=["python"],
                answer_format="text",
            ),
        ],
        spatial_edges=[("coder", "reviewer")],
        decision="last",
        rounds=1,
    )


def workload_team(task: Task) -> tuple[TeamSpec, dict[str, Tool]]:
    """The team and tools that fit a task (see the module docstring)."""
    browse = task.suite.partition("@")[0] in ("browse-sample", "browse")
    env = open_environment(task) if browse else None
    if env is not None:
        tools: dict[str, Tool] = dict(env.tools)
        return _browse_team(list(tools)), tools
    if task.kind == "code":
        return _code_team(), {"python": PythonTool()}
    return make_team("chain", 2, rounds=1, pool="reasoning", decision="last"), {}


def workload_solver(
    model: Model,
    *,
    supervisors: PluginFactory | None = None,
    name: str = "baseline",
    trace_dir: str | Path = "runs/bench",
    max_steps: int = 8,
    top_logprobs: int = 0,
) -> Solver:
    """Runs each task's workload team with the `supervisors` plug-ins (and the verifier they
    bring) on its bus; their stats go into the result's `extra`."""

    def setup(task: Task, seed: int) -> TeamSetup:
        team, tools = workload_team(task)
        return TeamSetup(
            team,
            tools=tools,
            supervisors=list(supervisors(model)) if supervisors else (),
            verifier=plugin_verifier(supervisors, tools),
            max_steps=task.meta.get("max_steps"),
        )

    settings = ExecutorSettings(
        trace_dir=Path(trace_dir) / name, max_steps=max_steps, top_logprobs=top_logprobs
    )
    return executor_solver(model, setup, settings)
