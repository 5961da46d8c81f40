"""overseer for LangChain v1 / LangGraph agents: one middleware for `create_agent`.

    from overseer.integrations.langgraph import OverseerMiddleware, GuardSettings
    guard = OverseerMiddleware(GuardSettings(budget_tokens=50_000))
    agent = create_agent(model, tools, middleware=[guard])   # the agent itself is unchanged

Hooks used and what overseer does there (the engine is `integrations._guard.Guard`):

- `wrap_tool_call`: before a tool runs, the loop breaker (an identical call beyond
  `RuleSettings.loop_limit` is not run; the model reads a short note instead) and the step
  budget; after it ran, an over-long output is purified extractively, then the LLM supervisor
  (when a `supervisor_model` is given) may correct it or add guidance.
- `wrap_model_call`: before each model call the team budget is checked and older tool outputs
  are masked in the model's input; after it, the call is booked in the ledger under the
  agent's name with the tokens LangChain reports (`AIMessage.usage_metadata`).
- `before_agent` / `after_agent`: start and end a guard run (trace `run_start`/`run_end`):
  one run per invocation, kept in the graph state (`overseer_run`), so one middleware on a
  compiled graph serves concurrent invocations, each with its own books. A run that reaches
  the graph's `recursion_limit` (LangGraph then raises `GraphRecursionError` and
  `after_agent` never runs) is closed by the hook of its last step, with stop reason
  `recursion_limit`.
- After `GuardSettings.answer_after_refusals` refused calls in a row, the next model call is
  made without tools, with a user turn that restates the question (`on_refusals="answer"`),
  or the run ends with a final message and stop reason `refusals` (`"stop"`).

What these hooks cannot do:

- Masking edits only what the model is sent; the graph state (and a checkpointer) keeps the
  tool messages as they were returned (purified, but not masked).
- A tool that returns a `Command` instead of a `ToolMessage` is passed through: counted by the
  loop breaker, but neither purified nor supervised.
- The budget is checked between model calls: a call under way finishes, so the team budget can
  be overshot by one call. On a spent budget the run stops with `BudgetExceeded` raised out of
  `invoke` (`on_budget="raise"`), or ends with a final AI message saying so (`"end"`).
- A model that reports no `usage_metadata` is booked with 0 tokens (counted in
  `stats["unreported_usage"]`); the budget cannot see those calls' tokens.
- The supervisor's `run_verification` has no verifier here: the model is told to verify.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired

from overseer.integrations import _adapter as ad
from overseer.integrations._adapter import (
    BudgetExceeded,
    Guard,
    GuardRun,
    GuardSettings,
    RunStopped,
    stop_reason_of,
)
from overseer.models import Model
from overseer.models.positions import logprobs_of

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain.agents.middleware.types import AgentState, PrivateStateAttr
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langgraph.config import get_config
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ad.missing_extra("langgraph", "LangChain v1", "langgraph") from exc

__all__ = ["BudgetExceeded", "Guard", "GuardSettings", "OverseerMiddleware", "RunStopped"]

OnBudget = Literal["raise", "end"]
ToolResult = ToolMessage | Command[Any]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else p.get("text", "") for p in content]
        if all(isinstance(p, str) for p in parts):
            return "".join(parts)
    return json.dumps(content, ensure_ascii=False, default=str)


def _role(m: BaseMessage) -> str:
    return {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}.get(
        m.type, m.type
    )


def _plain(messages: Sequence[BaseMessage]) -> list[dict[str, str]]:
    """Chat messages as the trace stores them (role, text)."""
    return [{"role": _role(m), "content": _text(m.content)} for m in messages]


def _answer_of(response: ModelResponse) -> AIMessage | None:
    """The reply's AI message when it is an answer (it calls no tool); None otherwise."""
    ai = next((m for m in response.result if isinstance(m, AIMessage)), None)
    return ai if ai is not None and not ai.tool_calls else None


def _closed(messages: list[Any], task: str) -> list[Any]:
    """The messages with a user turn closing the tools and restating the question."""
    return [*messages, HumanMessage(content=ad.closed_turn(task))]


#: the requests of one model call, each answered by its response; returns the one that stands
_Calls = Generator[ModelRequest, ModelResponse, ModelResponse]


@dataclasses.dataclass
class _Turn:
    """One model call as a hook drives it: send `asked` and `feed` its response until `asked`
    is None, then `result()`. An exception on the way (the server's, a cancellation) goes to
    `failed`, which ends the graph's run; a finished call goes to `ended`."""

    calls: _Calls | None  # None: `response` is the stop message, nothing is sent
    response: ModelResponse | AIMessage | None
    ended: Callable[[ModelResponse], None]
    failed: Callable[[BaseException], None]
    asked: ModelRequest | None = None

    def __post_init__(self) -> None:
        if self.calls is not None:
            with self.failing():
                self.asked = next(self.calls)

    @contextlib.contextmanager
    def failing(self) -> Iterator[None]:
        try:
            yield
        except BaseException as exc:
            self.failed(exc)
            raise

    def feed(self, response: ModelResponse) -> None:
        assert self.calls is not None, "feed() after the call was done"
        try:
            self.asked = self.calls.send(response)
        except StopIteration as done:
            self.asked, self.response = None, done.value

    def result(self) -> ModelResponse | AIMessage:
        assert self.response is not None and self.asked is None, "result() before the call ended"
        if self.calls is not None and isinstance(self.response, ModelResponse):
            self.ended(self.response)
        return self.response


class OverseerState(AgentState[Any]):
    """The agent state with the id of this invocation's guard run (private to overseer)."""

    overseer_run: NotRequired[Annotated[str, PrivateStateAttr]]


def _run_id(state: Any) -> str | None:
    return state.get("overseer_run") if isinstance(state, dict) else None


def _last_step() -> int | None:
    """The recursion limit when the node running now is the graph's last allowed step (no
    node can run after it: not even `after_agent`), else None."""
    try:
        config = get_config()
    except RuntimeError:  # not inside a graph run
        return None
    step = (config.get("metadata") or {}).get("langgraph_step")
    limit = config.get("recursion_limit")
    if isinstance(step, int) and isinstance(limit, int) and step >= limit:
        return limit
    return None


def _task(messages: Sequence[BaseMessage]) -> str:
    """The run's task: the first human message."""
    return next((_text(m.content) for m in messages if m.type == "human"), "")


class OverseerMiddleware(AgentMiddleware):
    """overseer attached to one `create_agent` agent (see the module docstring for the hooks).

    Pass `guard` to share one guard (one ledger, one budget) across the agents of a team, one
    middleware per agent with its `agent` name; the caller then starts runs with
    `guard.start_run(task)` (the first agent starts the first one). Without `guard`, the
    middleware makes its own from `settings`, `supervisor_model` and `trace_dir`, and starts a
    run at every `invoke`.
    """

    state_schema = OverseerState

    def __init__(
        self,
        settings: GuardSettings | None = None,
        *,
        guard: Guard | None = None,
        agent: str | None = None,
        supervisor_model: Model | None = None,
        trace_dir: str | Path | None = None,
        on_budget: OnBudget = "raise",
    ) -> None:
        super().__init__()
        if on_budget not in ("raise", "end"):
            raise ValueError(f"on_budget: expected 'raise' or 'end', got {on_budget!r}")
        self.owns_guard = guard is None
        options = ad.GuardOptions(
            guard=guard, supervisor_model=supervisor_model, trace_dir=trace_dir
        )
        self.guard = ad.make_guard("OverseerMiddleware", settings, options, run_name=agent or "")
        self.agent = agent
        self.on_budget: OnBudget = on_budget
        self._tools_done: dict[str, int] = {}  # tool calls done in a graph's last step
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"OverseerMiddleware[{self.agent}]" if self.agent else "OverseerMiddleware"

    @property
    def stats(self) -> dict[str, Any]:
        return self.guard.stats

    def _who(self, messages: Sequence[BaseMessage]) -> str:
        if self.agent:
            return self.agent
        named = next((m.name for m in reversed(messages) if m.type == "ai" and m.name), None)
        return named or "agent"

    # -- run lifecycle -------------------------------------------------------------------
    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """A new guard run for this invocation, its id kept in the graph state (a shared
        guard: the caller's run, started with `guard.start_run`, else the first one)."""
        if self.owns_guard:
            return {"overseer_run": self.guard.open(_task(state["messages"])).id}
        if self.guard.runs == 0:
            self.guard.start_run(_task(state["messages"]))
        return None

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if self.owns_guard:
            last = state["messages"][-1] if state["messages"] else None
            answer = _text(last.content) if last is not None else ""
            self.guard.end_run(answer, run=_run_id(state) or "")
        return None

    def _run(self, state: Any) -> GuardRun:
        return self.guard.get(_run_id(state))

    def _end_at_limit(self, state: Any, answer: str) -> None:
        """Close this invocation's run when its node was the graph's last allowed step."""
        limit = _last_step()
        if limit is None or not self.owns_guard:
            return
        error = f"GraphRecursionError: recursion limit of {limit} reached"
        self.guard.end_run(answer, stop_reason="recursion_limit", error=error, run=_run_id(state))

    def _end_after_model(self, request: ModelRequest, response: ModelResponse) -> None:
        """Close the run at the graph's last step, after the re-ask (which runs in this node)."""
        ai = next((m for m in response.result if isinstance(m, AIMessage)), None)
        self._end_at_limit(request.state, _text(ai.content) if ai is not None else "")

    def _end_after_tool(self, state: Any) -> None:
        """Close the run at the graph's last step once every tool call of that step is done
        (the tool node runs them in parallel; a hook of a closed run would open a new one)."""
        if _last_step() is None or not self.owns_guard:
            return
        messages = state.get("messages", []) if isinstance(state, dict) else []
        ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        calls = len(ai.tool_calls) if ai is not None else 1
        key = f"{_run_id(state)}:{ai.id if ai is not None and ai.id else id(ai)}"
        with self._lock:
            done = self._tools_done.pop(key, 0) + 1
            if done < calls:
                self._tools_done[key] = done
                return
        self._end_at_limit(state, "")

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)

    # -- model calls ---------------------------------------------------------------------
    def _prepare(self, request: ModelRequest) -> tuple[ModelRequest, AIMessage | None]:
        """Budget check and masking, the tools closed after refusals in a row; an AIMessage
        when the run must end instead of calling (a spent budget, or `on_refusals="stop"`)."""
        who = self._who(request.messages)
        run = self._run(request.state)
        try:
            run.check_budget(who)
        except BudgetExceeded as exc:
            if self.on_budget == "raise":
                raise
            return request, AIMessage(content=f"[overseer] stopped: {exc}")
        except RunStopped as exc:
            return request, AIMessage(content=f"[overseer] stopped: {exc.detail}")
        messages = self._masked(run, request.messages)
        if run.refusals_acted(who) == "answer":
            closed = _closed(messages, run.task)
            return request.override(messages=closed, tools=[], tool_choice=None), None
        return request.override(messages=messages), None

    def _masked(self, run: GuardRun, messages: list[Any]) -> list[Any]:
        """The messages with older tool outputs replaced by one-line stubs."""
        calls = {c["id"]: c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
        where = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage)]
        if not where:
            return messages
        records = []
        for i in where:
            call: Mapping[str, Any] = calls.get(messages[i].tool_call_id, {})
            name = call.get("name") or messages[i].name or "tool"
            records.append(
                ad.ToolRecord(name, ad.args_text(call.get("args")), _text(messages[i].content))
            )
        shown = run.model_input(self._who(messages), records)
        out = list(messages)
        for i, rec, text in zip(where, records, shown, strict=True):
            if text != rec.text:
                out[i] = messages[i].model_copy(update={"content": text})
        return out

    def _book(self, request: ModelRequest, response: ModelResponse, started: float) -> None:
        ai = next((m for m in response.result if isinstance(m, AIMessage)), None)
        if ai is None:
            return
        usage = ai.usage_metadata
        meta = ai.response_metadata or {}
        asked = getattr(request.model, "model_name", None) or getattr(request.model, "model", None)
        details = usage.get("input_token_details") if usage is not None else None
        try:
            self._run(request.state).book(
                self.agent or ai.name or "agent",
                prompt_tokens=int(usage["input_tokens"]) if usage else 0,
                completion_tokens=int(usage["output_tokens"]) if usage else 0,
                cached_tokens=int((details or {}).get("cache_read") or 0),
                model=ad.model_label(
                    str(asked or meta.get("model_name") or meta.get("model") or "")
                ),
                latency_s=time.monotonic() - started,
                messages=_plain(request.messages),
                output=_text(ai.content),
                reported=usage is not None,
                logprobs=logprobs_of(meta) or (),  # ChatOpenAI(logprobs=True) keeps them here
            )
        except BudgetExceeded:
            if self.on_budget == "raise":
                raise
            # "end": keep this answer; the next model call of the run ends it (check_budget).

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | AIMessage:
        turn = self._turn(request)
        while (asked := turn.asked) is not None:
            with turn.failing():
                turn.feed(handler(asked))
        return turn.result()

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | AIMessage:
        turn = self._turn(request)
        while (asked := turn.asked) is not None:
            with turn.failing():
                turn.feed(await handler(asked))
        return turn.result()

    def _turn(self, request: ModelRequest) -> _Turn:
        """The model call the sync and the async hook drive alike; `_prepare` may end it first."""
        request, stop = self._prepare(request)
        return _Turn(
            calls=self._calls(request) if stop is None else None,
            response=stop,
            ended=partial(self._end_after_model, request),
            failed=partial(self._end_on_error, request),
        )

    def _calls(self, request: ModelRequest) -> _Calls:
        """One model call of the graph, as the requests to send (the sync and the async hook
        send each and pass back its response): booked, asked once more when the answer only
        copied overseer's words, then settled."""
        started = time.monotonic()
        response = yield request
        self._book(request, response, started)
        again = self._reask(request, response)
        if again is not None:
            started = time.monotonic()
            response = yield again
            self._book(again, response, started)
        return self._settled(request, response)

    def _end_on_error(self, request: ModelRequest, exc: BaseException) -> None:
        """A model call that raised (a server error, a cancellation) ends the graph: close its
        run with the exception's stop reason (`error`, `cancelled`), as the other adapters do;
        a budget the guard raised itself keeps its own (`budget`)."""
        why = getattr(exc, "stop_reason", None) or stop_reason_of(exc)
        run = _run_id(request.state) or ""
        self.guard.end_run(stop_reason=why, error=f"{type(exc).__name__}: {exc}", run=run)

    def _reask(self, request: ModelRequest, response: ModelResponse) -> ModelRequest | None:
        """The request asking once more, tools closed, when the reply is an answer that only
        repeats overseer's words (issue 39); None: the reply stands."""
        ai = _answer_of(response)
        if ai is None:
            return None
        turn = self._run(request.state).reask(self._who(request.messages), _text(ai.content))
        if turn is None:
            return None
        messages = [*request.messages, ai, HumanMessage(content=turn)]
        return request.override(messages=messages, tools=[], tool_choice=None)

    def _settled(self, request: ModelRequest, response: ModelResponse) -> ModelResponse:
        """`response` with its answer replaced by "could not find it" when, after overseer
        closed the tools, it states a value no tool result supports (`GuardRun.settle`)."""
        ai = _answer_of(response)
        run = self._run(request.state)
        instead = (
            run.settle(self._who(request.messages), _text(ai.content)) if ai is not None else None
        )
        if instead is None:
            return response
        result = [
            m.model_copy(update={"content": instead}) if m is ai else m for m in response.result
        ]
        return dataclasses.replace(response, result=result)

    # -- tool calls ----------------------------------------------------------------------
    def _call(self, request: ToolCallRequest) -> tuple[str, str, Mapping[str, Any], str]:
        call = request.tool_call
        messages = request.state.get("messages", []) if isinstance(request.state, dict) else []
        return self._who(messages), call["name"], call.get("args") or {}, call.get("id") or ""

    def _blocked(self, request: ToolCallRequest) -> ToolMessage | None:
        agent, tool, args, call_id = self._call(request)
        note = self._run(request.state).before_tool(agent, tool, args)
        if note is None:
            return None
        return ToolMessage(content=note, tool_call_id=call_id, name=tool)

    @staticmethod
    def _error(result: ToolMessage) -> str | None:
        return _text(result.content) if result.status == "error" else None

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        blocked = self._blocked(request)
        if blocked is not None:
            self._end_after_tool(request.state)
            return blocked
        result = handler(request)
        if not isinstance(result, ToolMessage):
            return result
        agent, tool, args, _ = self._call(request)
        text = _text(result.content)
        shown = self._run(request.state).after_tool(
            agent, tool, args, text, error=self._error(result)
        )
        self._end_after_tool(request.state)
        return result if shown == text else result.model_copy(update={"content": shown})

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        blocked = self._blocked(request)
        if blocked is not None:
            self._end_after_tool(request.state)
            return blocked
        result = await handler(request)
        if not isinstance(result, ToolMessage):
            return result
        agent, tool, args, _ = self._call(request)
        text = _text(result.content)
        shown = await self._run(request.state).aafter_tool(
            agent, tool, args, text, error=self._error(result)
        )
        self._end_after_tool(request.state)
        return result if shown == text else result.model_copy(update={"content": shown})
