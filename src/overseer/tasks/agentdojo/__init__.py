"""AgentDojo's user tasks (workspace, travel, banking, slack) for real framework agents.

Data, tools and utility checks come from `inspect-evals==0.26.0` (MIT; AgentDojo is MIT);
nothing is copied and inspect-ai is not needed (see `_shim`).

    task = load_dojo("banking")[0]
    tools = task.tools()                 # one per run: a fresh copy of the environment
    agent_tools = tools.functions()      # plain typed callables with Google docstrings
    ...                                  # the agent calls them; tools.ran counts the calls
    task.score(final_answer, tools)      # the task's own utility check
"""

from overseer.tasks.agentdojo._kinds import DojoKind
from overseer.tasks.agentdojo._shim import DojoDataError
from overseer.tasks.agentdojo._tasks import EXPECTED_TASKS, SUITES, DojoTask, load_dojo
from overseer.tasks.agentdojo._tools import DojoToolError, DojoTools

__all__ = [
    "EXPECTED_TASKS",
    "SUITES",
    "DojoDataError",
    "DojoKind",
    "DojoTask",
    "DojoToolError",
    "DojoTools",
    "load_dojo",
]
