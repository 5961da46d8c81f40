"""overseer for the OpenAI Agents SDK: guarded tools, a model-input filter and run hooks.

    from overseer.integrations.openai_agents import Overseer, GuardSettings
    result = await Overseer(GuardSettings(budget_tokens=50_000)).run(agent, "task")

`Overseer.run` / `run_sync` call `Runner.run` with three attachments, which can also be
passed to your own `Runner` call: `ov.agent(agent)` (a clone whose function tools carry
overseer's tool guardrails; the agent you built is not changed), `run_config=ov.run_config()`
and `hooks=ov.hooks`. The engine is `integrations._guard.Guard`:

- tool input guardrail (before a function tool runs): the loop breaker and the step budget;
  a refused call is not run, the model reads overseer's note instead (`reject_content`);
- tool output guardrail (after it ran): an over-long output is purified extractively, then
  the LLM supervisor (with a `supervisor_model`) may correct it or add guidance; the SDK
  records a changed output as a guardrail `reject_content` whose message is the new text;
- `RunConfig.call_model_input_filter`: older tool outputs are masked in the model's input;
- the model (the agent's own, or each one the run config's provider resolves) is wrapped so an
  answer that only repeats overseer's words is asked again once (`_sdk_model`);
- `RunHooks.on_llm_start` / `on_llm_end`: the team budget is checked before each model call,
  and each call is booked in the ledger under the agent's name with the tokens the SDK reports
  (`ModelResponse.usage`); a spent budget raises `BudgetExceeded` out of `Runner.run`;
- after `GuardSettings.answer_after_refusals` refused calls in a row the function tools'
  `is_enabled` is off for the agent's next call (`on_refusals="answer"`); with `"stop"` the
  clone's `tool_use_behavior` ends the run with `[overseer] stopped: ...` as its final output
  (stop reason `refusals`; an agent with its own tool_use_behavior or a structured output type
  gets `RunStopped` raised out of the run instead, at its next model call).

What these hooks cannot do:

- Tool guardrails exist for function tools only: hosted tools (web search, file search, code
  interpreter run by OpenAI), computer/shell tools, MCP server tools (listed at run time, not
  in `agent.tools`) and handoffs given as `Handoff` objects run unguarded; their outputs are
  still masked in later model inputs. Handoff targets given as `Agent`s are cloned too.
- An agent used as a tool (`agent.as_tool`) runs its own nested `Runner`: its output is
  guarded as a tool output, but its inner model and tool calls are not seen.
- Masking edits only what the model is sent: `result.to_input_list()` and sessions keep the
  tool outputs as the guardrails returned them (purified, not masked). With server-managed
  conversations (`previous_response_id`, `conversation_id`) the filter sees only new items.
- The budget is checked between model calls: a call under way finishes, so the team budget
  can be overshot by one call. A model that reports no usage is booked with 0 tokens
  (counted in `stats["unreported_usage"]`).
- The supervisor's `run_verification` has no verifier here: the model is told to verify.
"""

from __future__ import annotations

import copy
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Unpack

from overseer.integrations import _adapter as ad
from overseer.integrations._adapter import BudgetExceeded, Guard, GuardSettings, RunStopped

try:
    from agents import (
        Agent,
        FunctionTool,
        RunConfig,
        RunContextWrapper,
        RunHooks,
        Runner,
        RunResult,
        ToolGuardrailFunctionOutput,
        ToolInputGuardrail,
        ToolInputGuardrailData,
        ToolOutputGuardrail,
        ToolOutputGuardrailData,
        ToolsToFinalOutputResult,
    )
    from agents.items import ModelResponse, TResponseInputItem
    from agents.models.interface import Model
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ad.missing_extra("openai_agents", "the OpenAI Agents SDK", "openai-agents") from exc

from overseer.integrations._sdk_model import ReaskingModel, ReaskingProvider
from overseer.models import TokenLogprob
from overseer.models.positions import logprobs_of

__all__ = ["BudgetExceeded", "Guard", "GuardSettings", "Overseer", "OverseerHooks", "RunStopped"]


def _get(item: Any, key: str) -> Any:
    """A field of an SDK input item (a dict, or a pydantic model)."""
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def _logprobs(output: Sequence[Any]) -> tuple[TokenLogprob, ...]:
    """The token logprobs of a response's text parts (the SDK keeps a chat completion's on
    each `output_text` part when the agent's `ModelSettings(top_logprobs=N)` asked for them)."""
    tokens = [
        {
            "token": _get(t, "token"),
            "logprob": _get(t, "logprob"),
            "top_logprobs": [
                {"token": _get(a, "token"), "logprob": _get(a, "logprob")}
                for a in _get(t, "top_logprobs") or ()
            ],
        }
        for item in output
        if isinstance(_get(item, "content"), list)
        for part in _get(item, "content")
        for t in _get(part, "logprobs") or ()
    ]
    return (logprobs_of({"logprobs": {"content": tokens}}) or ()) if tokens else ()


def _text(value: Any) -> str:
    """A tool output or message content as plain text (content parts joined)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [_get(p, "text") for p in value]
        if all(isinstance(p, str) for p in parts):
            return "".join(parts)
    return json.dumps(value, ensure_ascii=False, default=str)


def _task(items: Sequence[Any]) -> str:
    """The run's task: the first user message of the input."""
    users = (_text(_get(i, "content")) for i in items if _get(i, "role") == "user")
    return next(users, "")


def _model_name(agent: Agent[Any]) -> str:
    model = agent.model
    return model if isinstance(model, str) else str(getattr(model, "model", "") or "")


def _plain(system_prompt: str | None, items: Sequence[Any]) -> list[dict[str, str]]:
    """The model input as the trace stores it (role, text)."""
    msgs = [{"role": "system", "content": system_prompt}] if system_prompt else []
    for i in items:
        role = str(_get(i, "role") or _get(i, "type") or "")
        msgs.append({"role": role, "content": _text(_get(i, "content") or _get(i, "output") or "")})
    return msgs


class OverseerHooks(RunHooks[Any]):
    """Run hooks that check the team budget before each model call and book each call in the
    guard's ledger (per agent, with the tokens the SDK reports); `inner` (your own run hooks)
    gets every callback too. Observe-only otherwise: these hooks cannot change a call."""

    def __init__(self, guard: Guard, inner: RunHooks[Any] | None = None) -> None:
        self.guard = guard
        self.inner = inner or RunHooks()
        self._started: dict[tuple[int, str], tuple[float, list[dict[str, str]]]] = {}

    def chained(self, inner: RunHooks[Any] | None) -> OverseerHooks:
        """These hooks (same guard) also calling `inner`."""
        if inner is None:
            return self
        return OverseerHooks(self.guard, inner)

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[TResponseInputItem],
    ) -> None:
        self.guard.check_budget(agent.name)
        traced = _plain(system_prompt, input_items) if self.guard.trace is not None else []
        self._started[(id(context), agent.name)] = (time.monotonic(), traced)
        await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        await self.inner.on_llm_end(context, agent, response)
        started, messages = self._started.pop((id(context), agent.name), (time.monotonic(), []))
        usage = response.usage
        out = [_text(_get(o, "content") or _get(o, "arguments") or "") for o in response.output]
        details = getattr(usage, "input_tokens_details", None)
        self.guard.book(
            agent.name,
            prompt_tokens=usage.input_tokens,
            completion_tokens=usage.output_tokens,
            cached_tokens=int(getattr(details, "cached_tokens", 0) or 0),
            model=_model_name(agent),
            latency_s=time.monotonic() - started,
            messages=messages,
            output="\n".join(out),
            reported=usage.input_tokens + usage.output_tokens > 0,
            logprobs=_logprobs(response.output),  # for a monitor plug-in
        )

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        await self.inner.on_agent_start(context, agent)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        await self.inner.on_agent_end(context, agent, output)

    async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        await self.inner.on_handoff(context, from_agent, to_agent)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: object) -> None:
        await self.inner.on_tool_end(context, agent, tool, result)


class Overseer:
    """overseer attached to OpenAI Agents SDK runs (see the module docstring for the hooks).

    Options (`GuardOptions`): `guard` to share one guard (one ledger, one budget) with other
    adapters; without it, one is made from `settings`, `supervisor_model` and `trace_dir`.
    `run`/`run_sync` start and end a guard run per call; with your own `Runner` call, call
    `guard.start_run(task)` before each run (else the first model call starts one, and later
    runs add to it).
    """

    def __init__(
        self, settings: GuardSettings | None = None, **options: Unpack[ad.GuardOptions]
    ) -> None:
        self.guard = ad.make_guard("Overseer", settings, options)
        self.hooks = OverseerHooks(self.guard)
        self._input_guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(
            self._before_tool, name="overseer"
        )
        self._output_guardrail: ToolOutputGuardrail[Any] = ToolOutputGuardrail(
            self._after_tool, name="overseer"
        )
        self._speaking: dict[str, str] = {}  # guard run id -> the agent whose call is next

    @property
    def stats(self) -> dict[str, Any]:
        return self.guard.stats

    # -- attachments ---------------------------------------------------------------------
    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        """A clone of `agent` (and of the agents it hands off to) whose function tools carry
        overseer's tool guardrails; the given agents and tools are left as they are."""
        return self._clone(agent, {})

    def _clone(self, agent: Agent[Any], done: dict[int, Agent[Any]]) -> Agent[Any]:
        if id(agent) in done:
            return done[id(agent)]
        clone = agent.clone(tools=[self._tool(t) for t in agent.tools])
        if isinstance(agent.model, Model):  # else the run config's provider resolves it
            clone.model = ReaskingModel(agent.model, self._reask, self._settle)
        if clone.tool_use_behavior == "run_llm_again" and clone.output_type in (None, str):
            clone.tool_use_behavior = self._stop_after_refusals(agent.name)
        done[id(agent)] = clone
        clone.handoffs = [
            self._clone(h, done) if isinstance(h, Agent) else h for h in agent.handoffs
        ]
        return clone

    def _stop_after_refusals(
        self, name: str
    ) -> Callable[[RunContextWrapper[Any], list[Any]], ToolsToFinalOutputResult]:
        """The SDK's default after tool calls (run the model again), except that refusals in a
        row end the run with overseer's note as its output (`on_refusals="stop"`)."""

        def behaviour(ctx: RunContextWrapper[Any], results: list[Any]) -> ToolsToFinalOutputResult:
            why = self.guard.stop_for_refusals(name)
            if why is None:
                return ToolsToFinalOutputResult(is_final_output=False)
            return ToolsToFinalOutputResult(True, f"[overseer] stopped: {why}")

        return behaviour

    def _tool(self, tool: Any) -> Any:
        if not isinstance(tool, FunctionTool):
            return tool
        guarded = copy.copy(tool)
        guarded.is_enabled = self._enabled(tool.is_enabled)
        guarded.tool_input_guardrails = [self._input_guardrail, *(tool.tool_input_guardrails or [])]
        guarded.tool_output_guardrails = [
            *(tool.tool_output_guardrails or []),
            self._output_guardrail,
        ]
        return guarded

    def _enabled(self, original: Any) -> Callable[[RunContextWrapper[Any], Any], Awaitable[bool]]:
        """The tool's `is_enabled`, off while the agent's tools are closed after refusals."""

        async def is_enabled(ctx: RunContextWrapper[Any], agent: Any) -> bool:
            if self.guard.refusals_acted(agent.name) == "answer":
                return False
            if not callable(original):
                return bool(original)
            got = original(ctx, agent)
            return bool(await got) if inspect.isawaitable(got) else bool(got)

        return is_enabled

    def run_config(self, base: RunConfig | None = None) -> RunConfig:
        """`base` (or a default RunConfig) with overseer's model-input filter, run after the
        filter `base` already has."""
        cfg = copy.copy(base) if base is not None else RunConfig()
        inner = cfg.call_model_input_filter

        async def overseer_filter(data: CallModelData[Any]) -> ModelInputData:
            if inner is not None:
                done = inner(data)
                data.model_data = await done if not isinstance(done, ModelInputData) else done
            return self._mask(data)

        cfg.call_model_input_filter = overseer_filter
        if isinstance(cfg.model, Model):
            cfg.model = ReaskingModel(cfg.model, self._reask, self._settle)
        elif not isinstance(cfg.model_provider, ReaskingProvider):
            cfg.model_provider = ReaskingProvider(cfg.model_provider, self._reask, self._settle)
        return cfg

    def _reask(self, answer: str) -> str | None:
        """The turn asking the current run's speaking agent again when `answer` only repeats
        overseer's words (once per run and agent); None: the answer stands."""
        run = self.guard.get()
        return run.reask(self._speaking.get(run.id, ""), answer)

    def _settle(self, answer: str) -> str | None:
        """The answer that stands instead of the speaking agent's `answer` (see
        `GuardRun.settle`); None: it stands."""
        run = self.guard.get()
        return run.settle(self._speaking.get(run.id, ""), answer)

    # -- runs ----------------------------------------------------------------------------
    async def run(
        self,
        agent: Agent[Any],
        input: str | list[TResponseInputItem],
        *,
        run_config: RunConfig | None = None,
        hooks: RunHooks[Any] | None = None,
        **kwargs: Any,
    ) -> RunResult:
        """`Runner.run` with overseer attached, as one guard run: `run_config` and `hooks` are
        yours (overseer's are added to them), other kwargs go to Runner.run as they are."""
        guarded, config = self.agent(agent), self.run_config(run_config)

        def run() -> Awaitable[RunResult]:
            hooks_ = self.hooks.chained(hooks)
            return Runner.run(guarded, input, run_config=config, hooks=hooks_, **kwargs)

        task = input if isinstance(input, str) else _task(input)
        answer: Callable[[RunResult], str] = lambda r: _text(r.final_output)  # noqa: E731
        return await ad.guarded_run(self.guard, task, run, answer, _model_name(agent))

    def run_sync(
        self, agent: Agent[Any], input: str | list[TResponseInputItem], **kwargs: Any
    ) -> RunResult:
        """`run` from sync code (its own event loop, as `Runner.run_sync`)."""
        return ad.run_sync(self.run(agent, input, **kwargs))

    # -- hooks ---------------------------------------------------------------------------
    def _before_tool(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        note = self.guard.before_tool(data.agent.name, ctx.tool_name, ctx.tool_arguments)
        if note is None:
            return ToolGuardrailFunctionOutput.allow()
        return ToolGuardrailFunctionOutput.reject_content(note, output_info="overseer: blocked")

    async def _after_tool(self, data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx, text = data.context, _text(data.output)
        shown = await self.guard.aafter_tool(
            data.agent.name, ctx.tool_name, ctx.tool_arguments, text
        )
        if shown == text:
            return ToolGuardrailFunctionOutput.allow()
        return ToolGuardrailFunctionOutput.reject_content(shown, output_info="overseer: rewritten")

    def _mask(self, data: CallModelData[Any]) -> ModelInputData:
        """The model input with older tool outputs replaced by one-line stubs."""
        items: list[Any] = list(data.model_data.input)
        run = self.guard.get() if self.guard.runs else self.guard.start_run(_task(items))
        self._speaking[run.id] = data.agent.name
        closed = run.refusals_acted(data.agent.name) == "answer"
        calls = {_get(i, "call_id"): i for i in items if _get(i, "type") == "function_call"}
        where = [k for k, i in enumerate(items) if _get(i, "type") == "function_call_output"]
        if not where:
            return data.model_data
        records: list[ad.ToolRecord] = []
        for k in where:
            call = calls.get(_get(items[k], "call_id"))
            name = str(_get(call, "name") or "tool") if call is not None else "tool"
            args = ad.args_text(_get(call, "arguments")) if call is not None else ""
            records.append(ad.ToolRecord(name, args, _text(_get(items[k], "output"))))
        shown = {n: r.text for n, r in enumerate(records)}
        shown |= ad.masked_texts(run, data.agent.name, records)
        for n, text in shown.items():
            if text == records[n].text:
                continue
            item = items[where[n]]
            plain = dict(item) if isinstance(item, Mapping) else item.model_dump(exclude_unset=True)
            items[where[n]] = {**plain, "output": text}
        if closed:  # the tools are closed: a user turn restating the question
            items.append({"role": "user", "content": ad.closed_turn(run.task)})
        return ModelInputData(input=items, instructions=data.model_data.instructions)
