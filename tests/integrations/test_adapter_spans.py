"""Adapter runs exported as OpenTelemetry spans (issue 32, item 5): the runtime's tree for
LangGraph, the OpenAI Agents SDK and pydantic-ai on the scripted loopback server, in the SDK's
in-memory exporter: the run, an `invoke_agent` span per agent step holding its `chat` call and
its `execute_tool` call, the root's model set, no span named after a GGUF path."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from overseer.integrations._guard import GuardSettings
from overseer.integrations.otel import TraceSpans
from overseer.supervise.rules import RuleSettings

from .frameworks import FRAMEWORKS, run_agent
from .loopback import PAGE_QUESTION, LoopbackServer, Script, page_script, stubborn
from .test_adapter_runs import fetch_page


def job_status(job: str) -> str:
    """Check whether a job has finished."""
    return f"job {job} is still pending"


pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("loopback_only")]

Start = Callable[[Script], LoopbackServer]
GGUF = "/root/.cache/overseer/models/qwen2.5-coder-0.5b-instruct-q8_0.gguf"
ASKED = "qwen2.5-coder-0.5b"


@pytest.fixture(autouse=True, scope="module")
def _no_sdk_tracing() -> Iterator[None]:
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def _parent(spans: list[ReadableSpan], s: ReadableSpan) -> ReadableSpan:
    assert s.parent is not None, s.name
    return next(p for p in spans if p.context.span_id == s.parent.span_id)


def _children(spans: list[ReadableSpan], s: ReadableSpan) -> list[str]:
    return [c.name for c in spans if c.parent is not None and c.parent.span_id == s.context.span_id]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_adapter_run_has_the_runtimes_span_tree(loopback: Start, framework: str) -> None:
    srv = loopback(page_script())
    srv.model = GGUF  # llama.cpp's server reports the model file's path
    mem = InMemorySpanExporter()
    with TraceSpans(mem, batch=False) as spans:
        out = run_agent(framework, srv.base_url, [fetch_page], PAGE_QUESTION, model=ASKED)
    assert out.error is None and out.answer == "240 cm" and spans.status and spans.status.ok
    got = list(mem.get_finished_spans())
    (root,) = [s for s in got if s.parent is None]
    assert root.name == "overseer.run" and root.attributes is not None
    assert root.attributes["gen_ai.request.model"] == ASKED
    assert root.attributes["gen_ai.conversation.id"] == out.guard.ledger.run
    assert root.attributes["gen_ai.usage.cache_read_input_tokens"] == srv.cached_tokens > 0
    assert root.attributes["overseer.stop_reason"] == "done"
    # two steps of the agent: the tool call, then the answer; each holds its model call
    steps = [s for s in got if s.name == "invoke_agent researcher"]
    assert len(steps) == 2 and all(_parent(got, s) is root for s in steps)
    assert sorted(_children(got, steps[0])) == [f"chat {ASKED}", "execute_tool fetch_page"]
    assert _children(got, steps[1]) == [f"chat {ASKED}"]
    assert [s.attributes["overseer.kind"] for s in steps] == ["tool", "message"]  # type: ignore[index]
    chats = [s for s in got if s.name.startswith("chat ")]
    assert len(chats) == 2 and not any(".gguf" in s.name for s in got)
    assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats) == srv.prompt_tokens  # type: ignore[index,misc]
    cached = [c.attributes["gen_ai.usage.cache_read_input_tokens"] for c in chats]  # type: ignore[index]
    assert sum(cached) == srv.cached_tokens  # type: ignore[arg-type]
    for s in got:  # every child inside its parent in time
        if s.parent is not None:
            p = _parent(got, s)
            assert p.start_time <= s.start_time and s.end_time <= p.end_time, (s.name, p.name)  # type: ignore[operator]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_refused_calls_are_steps_with_a_verdict_linked_to_them(
    loopback: Start, framework: str
) -> None:
    srv = loopback(stubborn("job_status", {"job": "42"}, answer="pending"))
    mem = InMemorySpanExporter()
    settings = GuardSettings(rules=RuleSettings(loop_limit=2))
    with TraceSpans(mem, batch=False):
        out = run_agent(framework, srv.base_url, [job_status], "Is job 42 done?", settings)
    assert out.error is None and out.answer == "pending"
    got = list(mem.get_finished_spans())
    steps = [s for s in got if s.name == "invoke_agent researcher"]
    kinds = [s.attributes["overseer.kind"] for s in steps]  # type: ignore[index]
    assert kinds == ["tool"] * 4 + ["message"]  # two calls ran, two refused, the answer
    assert all("execute_tool job_status" in _children(got, s) for s in steps[:4])
    verdicts = [s for s in got if s.name == "overseer.verdict replace"]
    assert len(verdicts) == 2
    linked = [v.links[0].context.span_id for v in verdicts]
    assert linked == [steps[2].context.span_id, steps[3].context.span_id]
    assert {v.attributes["overseer.verdict.by"] for v in verdicts} == {"loop_breaker"}  # type: ignore[index]
