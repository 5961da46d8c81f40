"""One run's trace events turned into OpenTelemetry spans (GenAI semantic conventions).

The trace is written after the fact (a model call's event follows its completion, an agent
step's `interaction` follows its model calls and tool), so spans are built with the times the
events carry: an agent's model calls wait until its step's `interaction` (or failure) arrives,
then the step span is made with the calls (and the tool call) as its children.

    run            overseer.run               gen_ai.operation.name=invoke_agent (the team)
      agent step   invoke_agent {agent}       gen_ai.agent.name, overseer.round/step
        model call chat {model}               gen_ai.request.model, gen_ai.usage.*
        tool call  execute_tool {tool}        gen_ai.tool.name, error.type
      verdict      overseer.verdict {action}  overseer.verdict.action/by/reason, a link to the
                                              step it judged (from the step's end: judging time)
      rollback     overseer.rollback          overseer.rollback.by/reason/removed/count
      other calls  chat {model}               supervisors, decision, verifier, trainer
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from opentelemetry import trace as otel
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, Tracer

Record = Mapping[str, Any]
_SCALARS = (str, bool, int, float)
_ERROR_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_. ]{0,47}")


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def error_type(error: str) -> str:
    """A low-cardinality `error.type` from an error text: the part before its first colon
    ("ValueError: x" -> "ValueError", "invalid move: ..." -> "invalid_move"), else _OTHER."""
    head = error.split(":", 1)[0].strip()
    return head.replace(" ", "_") if _ERROR_TYPE.fullmatch(head) else "_OTHER"


def _fail(span: Span, error: str, kind: str | None = None) -> None:
    span.set_attribute("error.type", kind or error_type(error))
    span.set_status(Status(StatusCode.ERROR, error[:500]))


def _scalars(record: Record) -> dict[str, Any]:
    """The plain fields of an event, as span-event attributes (long strings cut)."""
    skip = {"v", "ts", "run", "event"}
    out: dict[str, Any] = {}
    for k, v in record.items():
        if k in skip or v is None:
            continue
        if isinstance(v, _SCALARS):
            out[k] = v[:1000] if isinstance(v, str) else v
    return out


class RunSpans:
    """The span builder of one run: a `TraceSink` (see `runtime._trace`)."""

    def __init__(
        self, tracer: Tracer, run: str, *, content: bool, closed: Callable[[RunSpans], None]
    ) -> None:
        self._tracer = tracer
        self.run = run
        self._content = content
        self._closed = closed
        self._root: Span | None = None
        self._root_ctx: Context | None = None
        self._pending: dict[str, list[Record]] = {}  # an agent's model calls awaiting its step
        self._steps: dict[tuple[str, int, int], tuple[SpanContext, float]] = {}  # -> step, end
        self._error: str | None = None
        self._model = ""  # the root's model: run_start's, else the first agent call's

    # -- the sink ----------------------------------------------------------------------------
    def event(self, record: Record) -> None:
        name = record["event"]
        handler = self._HANDLERS.get(name)
        if self._root is None:
            self._open_root(record)
        if handler is not None:
            handler(self, record)
        elif name != "run_start":
            assert self._root is not None
            self._root.add_event(name, _scalars(record), _ns(record["ts"]))

    def close(self) -> None:
        """End what is still open (a run that stopped without `run_end`)."""
        if self._root is not None and self._root.is_recording():
            self._flush_pending()
            self._root.end()
        self._closed(self)

    # -- the run -----------------------------------------------------------------------------
    def _open_root(self, r: Record) -> None:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "team",
            "gen_ai.conversation.id": self.run,
        }
        if r["event"] == "run_start":
            self._model = r["model"]
            attrs["gen_ai.request.model"] = r["model"]
            attrs["overseer.team.agents"] = [a["name"] for a in r["team"].get("agents", [])]
            attrs["overseer.supervisors"] = list(r["supervisors"])
            if self._content:
                attrs["overseer.query"] = r["query"]
        self._root = self._tracer.start_span(
            "overseer.run", kind=SpanKind.INTERNAL, attributes=attrs, start_time=_ns(r["ts"])
        )
        self._root_ctx = otel.set_span_in_context(self._root)

    def _run_end(self, r: Record) -> None:
        assert self._root is not None
        self._flush_pending()
        usage = r["usage"]
        self._root.set_attributes(
            {
                "gen_ai.usage.input_tokens": usage["input_tokens"],
                "gen_ai.usage.output_tokens": usage["output_tokens"],
                "gen_ai.usage.cache_read_input_tokens": usage.get("cached_input_tokens", 0),
                "overseer.stop_reason": r["stop_reason"],
            }
        )
        if r["error"] is not None:
            kind = self._error if r["stop_reason"] == "error" else r["stop_reason"]
            _fail(self._root, r["error"], kind)
        self._root.end(_ns(r["ts"]))

    def _error_event(self, r: Record) -> None:
        assert self._root is not None
        self._error = error_type(r["error"])
        self._root.add_event(
            "exception",
            {"exception.type": self._error, "exception.message": r["error"][:1000]},
            _ns(r["ts"]),
        )

    # -- model calls and agent steps ---------------------------------------------------------
    def _model_call(self, r: Record) -> None:
        if not self._model and r["overseer.actor.kind"] == "agent":
            # a framework guard's run does not know its agents' model up front
            self._model = r["gen_ai.request.model"]
            assert self._root is not None
            self._root.set_attribute("gen_ai.request.model", self._model)
        if r["overseer.actor.kind"] == "agent":
            self._pending.setdefault(r["gen_ai.agent.name"], []).append(r)
        else:
            self._chat(r, self._root_ctx)

    def _chat(self, r: Record, parent: Context | None) -> None:
        attrs: dict[str, Any] = {
            k: r[k]
            for k in (
                "gen_ai.operation.name",
                "gen_ai.agent.name",
                "gen_ai.request.model",
                "gen_ai.usage.input_tokens",
                "gen_ai.usage.output_tokens",
                "gen_ai.usage.cache_read_input_tokens",
                "gen_ai.response.finish_reasons",
                "overseer.actor.kind",
            )
        }
        if self._content:
            attrs["gen_ai.input.messages"] = json.dumps(r["input"], ensure_ascii=False)
            attrs["gen_ai.output.messages"] = json.dumps(
                [{"role": "assistant", "content": r["output"]}], ensure_ascii=False
            )
        span = self._tracer.start_span(
            f"chat {r['gen_ai.request.model']}",
            context=parent,
            kind=SpanKind.CLIENT,
            attributes=attrs,
            start_time=_ns(r["ts"] - r["latency_s"]),
        )
        span.end(_ns(r["ts"]))

    def _step(self, agent: str, end: float, attrs: dict[str, Any]) -> tuple[Span, list[Record]]:
        """An agent step span holding the agent's pending model calls (not yet ended)."""
        calls = self._pending.pop(agent, [])
        start = min([c["ts"] - c["latency_s"] for c in calls] + [end])
        span = self._tracer.start_span(
            f"invoke_agent {agent}",
            context=self._root_ctx,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                **attrs,
            },
            start_time=_ns(start),
        )
        ctx = otel.set_span_in_context(span)
        for c in calls:
            self._chat(c, ctx)
        return span, calls

    def _interaction(self, r: Record) -> None:
        agent, ts = r["agent"], r["ts"]
        span, calls = self._step(
            agent,
            ts,
            {"overseer.round": r["round"], "overseer.step": r["step"], "overseer.kind": r["kind"]},
        )
        ctx = otel.set_span_in_context(span)
        if r["tool"]:
            tool = self._tracer.start_span(
                f"execute_tool {r['tool']}",
                context=ctx,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": r["tool"],
                    "gen_ai.agent.name": agent,
                },
                start_time=_ns(calls[-1]["ts"] if calls else ts),
            )
            if r["error"]:
                _fail(tool, r["error"])
            tool.end(_ns(ts))
        elif r["error"]:
            _fail(span, r["error"])
        span.end(_ns(ts))
        self._steps[(agent, r["round"], r["step"])] = (span.get_span_context(), ts)

    def _agent_failure(self, r: Record) -> None:
        if r["agent"] not in self._pending:
            assert self._root is not None
            self._root.add_event("agent_failure", _scalars(r), _ns(r["ts"]))
            return
        span, _ = self._step(r["agent"], r["ts"], {"overseer.round": r["round"]})
        _fail(span, r["detail"] or r["reason"], r["reason"])
        span.end(_ns(r["ts"]))

    def _flush_pending(self) -> None:
        """Model calls of agents whose step never came (a stop mid-step): under the run."""
        for calls in self._pending.values():
            for c in calls:
                self._chat(c, self._root_ctx)
        self._pending.clear()

    # -- verdicts and rollbacks --------------------------------------------------------------
    def _verdict(self, r: Record) -> None:
        step = self._steps.get((r.get("agent"), r.get("round"), r.get("step")))  # type: ignore[arg-type]
        attrs: dict[str, Any] = {
            "overseer.verdict.action": r["action"],
            "overseer.verdict.by": r["by"],
            "overseer.verdict.reason": r["reason"],
        }
        for key, name in (("agent", "gen_ai.agent.name"), ("round", "overseer.round")):
            if r.get(key) is not None:
                attrs[name] = r[key]
        span = self._tracer.start_span(
            f"overseer.verdict {r['action']}",
            context=self._root_ctx,
            attributes=attrs,
            links=[Link(step[0])] if step else None,
            start_time=_ns(step[1] if step else r["ts"]),
        )
        span.end(_ns(r["ts"]))

    def _rollback(self, r: Record) -> None:
        attrs = {f"overseer.rollback.{k}": r[k] for k in ("by", "reason", "removed", "count")}
        attrs["overseer.round"] = r["round"]
        if r["agent"]:
            attrs["gen_ai.agent.name"] = r["agent"]
        span = self._tracer.start_span(
            "overseer.rollback", context=self._root_ctx, attributes=attrs, start_time=_ns(r["ts"])
        )
        span.end(_ns(r["ts"]))

    _HANDLERS: ClassVar[dict[str, Callable[[RunSpans, Record], None]]] = {
        "run_end": _run_end,
        "error": _error_event,
        "model_call": _model_call,
        "interaction": _interaction,
        "agent_failure": _agent_failure,
        "verdict": _verdict,
        "rollback": _rollback,
    }
