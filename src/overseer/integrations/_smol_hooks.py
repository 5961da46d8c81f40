"""Where the smolagents callback reaches into an agent: before a tool runs, and at a run's
start and end.

smolagents runs a step's tools before any step callback sees the step, so a refused repeat
must be stopped earlier: a ToolCallingAgent's `execute_tool_call` and a CodeAgent's
`python_executor` are wrapped on the agent instance (the refusal is what the agent reads
instead of the tool output). `run` is wrapped so the supervisor knows when a top-level run
starts (its per-run state is reset) and ends; managed agents' runs nest inside it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import Any, Protocol

from smolagents.local_python_executor import CodeOutput
from smolagents.utils import AgentToolExecutionError

from overseer.integrations._guard import args_text
from overseer.integrations._smol_steps import CODE_TOOL


class Gate(Protocol):
    """What the hooks ask the supervisor: may this call run (None) or what to read instead."""

    def gate(self, agent: Any, tool: str, args: str, code: str) -> str | None: ...

    def reask(self, agent: Any, answer: str) -> str | None: ...

    def run_started(self, agent: Any, max_steps: int | None, task: str = "") -> None: ...

    def run_ended(
        self, agent: Any, error: BaseException | None = None, answer: object = None
    ) -> None: ...


_MARK = "_overseer_hooked"


def hooked(agent: Any, gate: Gate) -> bool:
    """Whether `gate` already wrapped this agent's methods."""
    return any(g is gate for g in getattr(agent, _MARK, ()))


def install(agent: Any, gate: Gate) -> None:
    """Wrap the agent's tool execution (or code executor) and its `run` for `gate` (once)."""
    if hooked(agent, gate):
        return
    setattr(agent, _MARK, (*getattr(agent, _MARK, ()), gate))
    _wrap_run(agent, gate)
    executor = getattr(agent, "python_executor", None)
    if executor is not None:
        agent.python_executor = _GatedExecutor(executor, agent, gate)
    elif callable(getattr(agent, "execute_tool_call", None)):
        _wrap_tool_calls(agent, gate)


def _wrap_tool_calls(agent: Any, gate: Gate) -> None:
    original: Callable[..., Any] = agent.execute_tool_call

    def execute_tool_call(tool_name: str, arguments: Any) -> Any:
        if tool_name != "final_answer":
            note = gate.gate(agent, tool_name, args_text(arguments), "")
            if note is not None:
                return note
        else:  # an answer that only repeats overseer's words is asked again, once
            said = arguments.get("answer", "") if isinstance(arguments, dict) else arguments
            turn = gate.reask(agent, str(said))
            if turn is not None:  # an error step: smolagents shows it and asks again
                raise AgentToolExecutionError(turn, agent.logger)
        return original(tool_name, arguments)

    agent.execute_tool_call = execute_tool_call


class _GatedExecutor:
    """A CodeAgent's executor that asks the gate before running a code action."""

    def __init__(self, inner: Any, agent: Any, gate: Gate) -> None:
        self._inner = inner
        self._agent = agent
        self._gate = gate

    def __call__(self, code_action: str) -> Any:
        # an answer is never refused: a spent budget asks for exactly that
        if "final_answer(" not in code_action:
            note = self._gate.gate(self._agent, CODE_TOOL, "", code_action)
            if note is not None:
                return CodeOutput(output=note, logs="", is_final_answer=False)
        return self._inner(code_action)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _wrap_run(agent: Any, gate: Gate) -> None:
    original: Callable[..., Any] = agent.run

    def run(task: str, *args: Any, **kwargs: Any) -> Any:
        gate.run_started(agent, kwargs.get("max_steps"), task)
        try:
            out = original(task, *args, **kwargs)
        except BaseException as exc:
            gate.run_ended(agent, exc)
            raise
        if isinstance(out, Iterator):  # stream=True: the run happens while it is read
            return _ending(out, agent, gate)
        gate.run_ended(agent, None, out)
        return out

    agent.run = run


def _ending(steps: Iterator[Any], agent: Any, gate: Gate) -> Generator[Any, None, None]:
    try:
        yield from steps
    except BaseException as exc:
        gate.run_ended(agent, exc)
        raise
    gate.run_ended(agent)
