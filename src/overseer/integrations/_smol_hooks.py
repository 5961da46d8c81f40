"""Where the smolagents supervisor reaches into an agent: its model, its tool calls, its run.

smolagents runs a step's tools before any step callback sees the step, so a refused repeat
is stopped earlier: a ToolCallingAgent's `execute_tool_call` and a CodeAgent's
`python_executor` are wrapped on the agent instance (the refusal is what the agent reads
instead of the tool output). `run` is wrapped so the supervisor knows when a run starts and
ends; the model's `generate`, so each call is booked as the server reported it (the final
answer's, the one at `max_steps`, the raw reply's cached prompt tokens: TokenUsage has none;
its token logprobs, for a monitor plug-in);
`provide_final_answer`, so the answer at `max_steps` is settled (`GuardRun.settle`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from smolagents.local_python_executor import CodeOutput
from smolagents.utils import AgentToolExecutionError

from overseer.integrations._parts import args_text
from overseer.integrations._smol_steps import CODE_TOOL
from overseer.models import TokenLogprob
from overseer.models.positions import logprobs_of

if TYPE_CHECKING:
    from overseer.integrations.smolagents import OverseerSupervisor as Gate

_MARK = "_overseer_hooked"


def hooked(obj: Any, gate: Gate) -> bool:
    """Whether `gate` already wrapped this agent's (or model's) methods."""
    return any(g is gate for g in getattr(obj, _MARK, ()))


def _mark(obj: Any, gate: Gate) -> bool:
    """Mark `obj` as wrapped for `gate`; False when it was already (or cannot be marked)."""
    if hooked(obj, gate):
        return False
    try:
        setattr(obj, _MARK, (*getattr(obj, _MARK, ()), gate))
    except (AttributeError, TypeError):  # a model without instance attributes: not metered
        return False
    return True


def install(agent: Any, gate: Gate) -> None:
    """Wrap the agent's run, tool execution (or code executor) and model for `gate` (once)."""
    if not _mark(agent, gate):
        return
    _wrap_run(agent, gate)
    executor = getattr(agent, "python_executor", None)
    if executor is not None:
        agent.python_executor = _GatedExecutor(executor, agent, gate)
    elif callable(getattr(agent, "execute_tool_call", None)):
        _wrap_tool_calls(agent, gate)
    if callable(getattr(agent, "provide_final_answer", None)):
        _wrap_final_answer(agent, gate)
    model = getattr(agent, "model", None)
    if model is not None and _mark(model, gate):
        _meter(model, gate)


def _wrap_final_answer(agent: Any, gate: Gate) -> None:
    """The answer smolagents asks for at `max_steps` (where overseer's closing puts the agent)
    is settled there: a value no tool result supports becomes "could not find it". That
    call has no tools and no turn of overseer's, so there is no re-ask before it."""
    original: Callable[..., Any] = agent.provide_final_answer

    def provide_final_answer(task: str, *args: Any, **kwargs: Any) -> Any:
        message = original(task, *args, **kwargs)
        text = message.content if isinstance(message.content, str) else None
        instead = None if text is None else gate.settle(agent, text)
        if instead is not None:
            message.content = instead
        return message

    agent.provide_final_answer = provide_final_answer


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
            instead = gate.settle(agent, str(said))
            if instead is not None:  # an unsupported value after overseer closed the tools
                arguments = {"answer": instead} if isinstance(arguments, dict) else instead
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


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def logprobs(raw: Any) -> tuple[TokenLogprob, ...]:
    """The token logprobs of an OpenAI-style reply's first choice, when the model asked for
    them (`OpenAIServerModel(..., logprobs=True, top_logprobs=N)`), else none."""
    choices = _field(raw, "choices")
    if not choices:
        return ()
    choice = choices[0]
    if hasattr(choice, "model_dump"):
        choice = choice.model_dump()
    return tuple(logprobs_of(choice) or ()) if isinstance(choice, Mapping) else ()


def cached_tokens(raw: Any) -> int:
    """The cached prompt tokens an OpenAI-style reply reports
    (`usage.prompt_tokens_details.cached_tokens`), else 0."""
    n = _field(_field(_field(raw, "usage"), "prompt_tokens_details"), "cached_tokens")
    return n if isinstance(n, int) else 0


def _meter(model: Any, gate: Gate) -> None:
    """Wrap the model instance's `generate`: each call is reported to `gate.metered` (usage
    as given, cached tokens, seconds, the reply's text, its token logprobs if any). A streamed
    step's call is booked from the step (`generate_stream`'s deltas carry no raw usage)."""
    name = str(getattr(model, "model_id", "") or "")
    generate: Callable[..., Any] = model.generate

    def metered(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        reply = generate(*args, **kwargs)
        took = time.perf_counter() - start
        gate.metered(
            reply.token_usage, cached_tokens(reply.raw), took, name, args_text(reply.content),
            logprobs(reply.raw),
        )  # fmt: skip
        return reply

    model.generate = metered
