"""overseer for pydantic-ai agents: one capability, per agent or per run.

    from overseer.integrations.pydantic_ai import OverseerCapability, GuardSettings
    result = await agent.run("task", capabilities=[OverseerCapability()])
    # or once: Agent(model, ..., capabilities=[OverseerCapability(GuardSettings(...))])

Hooks used and what overseer does there (the engine is `integrations._guard.Guard`):

- `wrap_tool_execute`: before a tool runs, the loop breaker (an identical call beyond
  `RuleSettings.loop_limit` is not run; the model reads a short note as the tool's return) and
  the step budget; after it ran, an over-long output is purified extractively, then the LLM
  supervisor (when a `supervisor_model` is given) may correct it or add guidance.
- `before_model_request`: the team budget is checked and older tool outputs are masked in the
  request (the run's message history keeps them);
- `after_model_request`: the call is booked in the ledger under the agent's name with the
  tokens pydantic-ai reports (`ModelResponse.usage`);
- `wrap_run`: start and end a guard run (trace `run_start`/`run_end`);
- `prepare_tools`: after `GuardSettings.answer_after_refusals` refused calls in a row, no
  tools for the next request (`on_refusals="answer"`); with `"stop"` the request is skipped
  and the run ends with `[overseer] stopped: ...` as its output (stop reason `refusals`).

A `history_processors=[...]` function could only do the masking: it rewrites what the model
reads next but cannot stop a tool from running or see its output first, which is why this
adapter is a capability. What these hooks cannot do:

- Tools run by the model provider (native tools such as web search) and output tools (the
  structured final answer) are not tool executions here: neither blocked nor purified.
- Masking edits only the request: `result.all_messages()` keeps each tool return as the
  capability returned it (purified, not masked).
- The budget is checked between model requests: a request under way finishes, so the team
  budget can be overshot by one request; `BudgetExceeded` is raised out of `run`. pydantic-ai's
  own `UsageLimits` still apply beside it. A response without usage is booked with 0 tokens
  (counted in `stats["unreported_usage"]`).
- A tool that asks for a retry (`ModelRetry`) or fails is passed through unchanged.
- The supervisor's `run_verification` has no verifier here: the model is told to verify.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Unpack, cast

from overseer.integrations import _adapter as ad
from overseer.integrations._adapter import BudgetExceeded, Guard, GuardSettings, RunStopped
from overseer.models import TokenLogprob
from overseer.models.positions import logprobs_of

try:
    from pydantic_ai import RunContext
    from pydantic_ai import messages as pm
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import ModelRetry, SkipModelRequest
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.tools import ToolDefinition
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ad.missing_extra("pydantic_ai", "pydantic-ai", "pydantic-ai") from exc

__all__ = ["BudgetExceeded", "Guard", "GuardSettings", "OverseerCapability", "RunStopped"]


def _prompt(ctx: RunContext[Any]) -> str:
    """The run's task: the user prompt (its text parts when it has several)."""
    prompt = ctx.prompt
    if prompt is None or isinstance(prompt, str):
        return prompt or ""
    return " ".join(p for p in prompt if isinstance(p, str))


def _plain(messages: Sequence[pm.ModelMessage]) -> list[dict[str, str]]:
    """The request as the trace stores it: one (role, text) per part."""
    out = []
    for m in messages:
        for part in m.parts:
            content = getattr(part, "content", None) or getattr(part, "args", None) or ""
            role = "assistant" if isinstance(m, pm.ModelResponse) else part.part_kind
            out.append(
                {"role": role, "content": content if isinstance(content, str) else str(content)}
            )
    return out


def _logprobs(details: Mapping[str, Any] | None) -> tuple[TokenLogprob, ...]:
    """A response's token logprobs, which pydantic-ai's OpenAI model keeps in its provider
    details (`logprobs`, the choice's list) when `openai_logprobs=True` asked for them."""
    tokens = (details or {}).get("logprobs")
    return (logprobs_of({"logprobs": {"content": tokens}}) or ()) if tokens else ()


class OverseerCapability(AbstractCapability[Any]):
    """overseer attached to a pydantic-ai agent (see the module docstring for the hooks).

    Options (`GuardOptions`): `guard` to share one guard (one ledger, one budget) across the
    agents of a team, one capability per agent, with `agent` naming it in the ledger (default:
    the agent's `name`); the caller then starts runs with `guard.start_run(task)` (else the
    first run starts one). Without `guard`, one is made from `settings`, `supervisor_model`
    and `trace_dir`, and every `run` is a guard run.
    """

    __eq__ = object.__eq__  # one instance per guard: not equal by its (empty) dataclass fields
    __hash__ = object.__hash__

    def __init__(
        self,
        settings: GuardSettings | None = None,
        *,
        agent: str | None = None,
        **options: Unpack[ad.GuardOptions],
    ) -> None:
        self.owns_guard = options.get("guard") is None
        self.guard = ad.make_guard("OverseerCapability", settings, options, run_name=agent or "")
        self.agent = agent
        self._started: dict[str, tuple[float, list[dict[str, str]]]] = {}  # run id -> request

    @property
    def stats(self) -> dict[str, Any]:
        return self.guard.stats

    def _who(self, ctx: RunContext[Any]) -> str:
        named = ctx.agent.name if ctx.agent is not None else None
        return self.agent or named or "agent"

    # -- run lifecycle -------------------------------------------------------------------
    async def wrap_run(self, ctx: RunContext[Any], *, handler: Callable[[], Awaitable[Any]]) -> Any:
        if self.owns_guard:
            answer: Callable[[Any], str] = lambda r: str(getattr(r, "output", ""))  # noqa: E731
            model = ctx.model.model_name if ctx.model is not None else ""
            return await ad.guarded_run(self.guard, _prompt(ctx), handler, answer, model)
        if self.guard.runs == 0:  # a shared guard: the caller starts runs, else the first one
            self.guard.start_run(_prompt(ctx))
        return await handler()

    # -- model requests ------------------------------------------------------------------
    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        who = self._who(ctx)
        try:
            self.guard.check_budget(who)
        except RunStopped as exc:  # the run ends with this as its answer (`on_refusals="stop"`)
            text = f"[overseer] stopped: {exc.detail}"
            raise SkipModelRequest(pm.ModelResponse(parts=[pm.TextPart(text)])) from exc
        masked = self._masked(who, request_context.messages)
        traced = _plain(masked)
        self._started[ctx.run_id or ""] = (time.monotonic(), traced)
        return dataclasses.replace(request_context, messages=masked)

    def _masked(self, who: str, messages: list[pm.ModelMessage]) -> list[pm.ModelMessage]:
        """The messages with older tool returns replaced by one-line stubs (new objects: the
        run's history keeps the originals)."""
        calls = {
            p.tool_call_id: p
            for m in messages
            if isinstance(m, pm.ModelResponse)
            for p in m.parts
            if isinstance(p, pm.ToolCallPart)
        }
        where = [
            (i, j)
            for i, m in enumerate(messages)
            if isinstance(m, pm.ModelRequest)
            for j, p in enumerate(m.parts)
            if type(p) is pm.ToolReturnPart  # not its kinds with structured content (tool search)
        ]
        if not where:
            return messages
        records = []
        for i, j in where:
            part = messages[i].parts[j]
            assert isinstance(part, pm.ToolReturnPart)
            call = calls.get(part.tool_call_id)
            args = ad.args_text(call.args_as_dict()) if call is not None else ""
            records.append(ad.ToolRecord(part.tool_name, args, part.model_response_str()))
        run = self.guard.get()
        shown = ad.masked_texts(run, who, records)
        out = list(messages)
        for n, text in shown.items():
            i, j = where[n]
            msg, part = out[i], out[i].parts[j]
            assert isinstance(msg, pm.ModelRequest) and isinstance(part, pm.ToolReturnPart)
            parts = list(msg.parts)
            parts[j] = dataclasses.replace(cast("pm.ToolReturnPart[Any]", part), content=text)
            out[i] = dataclasses.replace(msg, parts=parts)
        if run.refusals_acted(who) == "answer" and isinstance(out[-1], pm.ModelRequest):
            closing = pm.UserPromptPart(ad.closed_turn(run.task))  # the question, restated
            out[-1] = dataclasses.replace(out[-1], parts=[*out[-1].parts, closing])
        return out

    async def prepare_tools(
        self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        """No function tools for this step while the agent's tools are closed after refusals
        in a row (`GuardSettings.on_refusals="answer"`), as the runtime's agent does."""
        return [] if self.guard.refusals_acted(self._who(ctx)) == "answer" else tool_defs

    async def after_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        response: pm.ModelResponse,
    ) -> pm.ModelResponse:
        started, messages = self._started.pop(ctx.run_id or "", (time.monotonic(), []))
        usage = response.usage
        text = "".join(p.content for p in response.parts if isinstance(p, pm.TextPart))
        asked = request_context.model.model_name if request_context.model is not None else ""
        self.guard.book(
            self._who(ctx),
            prompt_tokens=usage.input_tokens,
            completion_tokens=usage.output_tokens,
            cached_tokens=usage.cache_read_tokens,
            model=ad.model_label(asked or response.model_name or ""),
            latency_s=time.monotonic() - started,
            messages=messages,
            output=text,
            reported=usage.input_tokens + usage.output_tokens > 0,
            # `openai_logprobs=True` in the model settings: pydantic-ai keeps them here
            logprobs=_logprobs(response.provider_details),
        )
        calls = any(isinstance(p, pm.ToolCallPart) for p in response.parts)
        turn = None if calls else self.guard.reask(self._who(ctx), text)
        if turn is not None:  # only overseer's words: no answer, asked again once
            raise ModelRetry(turn)
        instead = None if calls else self.guard.settle(self._who(ctx), text)
        if instead is None:
            return response
        return dataclasses.replace(response, parts=[pm.TextPart(content=instead)])

    # -- tools ---------------------------------------------------------------------------
    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: pm.ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        handler: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        who, arguments = self._who(ctx), call.args_as_dict()
        note = self.guard.before_tool(who, call.tool_name, arguments)
        if note is not None:
            return note
        result = await handler(args)
        text = result if isinstance(result, str) else json.dumps(result, default=str)
        shown = await self.guard.aafter_tool(who, call.tool_name, arguments, text)
        return result if shown == text else shown
