"""pydantic-ai agents with and without the overseer capability, end to end over HTTP.

The agents run unmodified on `OpenAIChatModel` against the scripted loopback server (a real
HTTP chat-completions server: it records what reached the model and reports usage), and once
against the embedded model's own llama.cpp server.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings

from overseer.integrations.pydantic_ai import (
    BudgetExceeded,
    Guard,
    GuardSettings,
    OverseerCapability,
)
from overseer.models import LlamaCppModel, OpenAIModel, ScriptedModel
from overseer.runtime import read_trace
from overseer.supervise import SupervisorSettings, reply_template
from overseer.supervise.rules import RuleSettings

from .loopback import (
    PAGE_QUESTION,
    LoopbackServer,
    Reply,
    Script,
    ToolCall,
    long_page,
    messages_text,
    page_at,
    page_script,
    scripted,
    status_loop,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("loopback_only")]

PAGE = long_page()
Start = Callable[[Script], LoopbackServer]


def _model(base_url: str, name: str = "scripted") -> OpenAIChatModel:
    return OpenAIChatModel(name, provider=OpenAIProvider(base_url=base_url, api_key="none"))


def _page_agent(srv: LoopbackServer, name: str = "researcher", **kw: Any) -> Agent[None, str]:
    agent = Agent(_model(srv.base_url), name=name, **kw)

    @agent.tool_plain
    def fetch_page(url: str) -> str:
        """Open a web page and return its text."""
        return page_at(url)

    return agent


def _tool_returns(result: Any) -> list[str]:
    return [
        str(p.content)
        for m in result.all_messages()
        for p in m.parts
        if p.part_kind == "tool-return"
    ]


def test_without_overseer_the_whole_page_reaches_the_model(loopback: Start) -> None:
    srv = loopback(page_script())
    _page_agent(srv).run_sync(PAGE_QUESTION)
    assert len(srv.requests) == 2
    assert messages_text(srv.requests[1], "tool") == [PAGE]


def test_with_overseer_the_page_is_purified_and_calls_are_booked(loopback: Start) -> None:
    srv = loopback(page_script())
    cap = OverseerCapability()
    result = _page_agent(srv).run_sync(PAGE_QUESTION, capabilities=[cap])
    assert result.output == "240 cm"
    (seen,) = messages_text(srv.requests[1], "tool")
    assert len(seen) <= 3000 < len(PAGE)  # purify_keep is about 1,500 chars, plus its note
    assert "240 cm" in seen  # the passage that answers the task is kept verbatim
    assert cap.stats["rules"]["purification"] == 1
    # the ledger holds pydantic-ai's two model requests with the server's own counts
    ledger = cap.guard.ledger
    assert ledger.calls_by_actor() == {"agent:researcher": 2}
    assert ledger.total.prompt_tokens == srv.prompt_tokens
    assert ledger.total.completion_tokens == srv.completion_tokens
    assert ledger.total.prompt_tokens == result.usage.input_tokens
    # the history holds the purified text, so a later request does not get the page either
    assert _tool_returns(result) == [seen]


def test_page_saving_in_prompt_tokens(loopback: Start) -> None:
    plain, guarded = loopback(page_script()), loopback(page_script())
    _page_agent(plain).run_sync(PAGE_QUESTION)
    _page_agent(guarded).run_sync(PAGE_QUESTION, capabilities=[OverseerCapability()])
    assert plain.usages[1]["prompt_tokens"] > 12_000  # 50,000 chars at 4 a token
    assert guarded.usages[1]["prompt_tokens"] < plain.usages[1]["prompt_tokens"] // 10


def _repeat_agent(srv: LoopbackServer, runs: list[int], **kw: Any) -> Agent[None, str]:
    agent = Agent(_model(srv.base_url), name="worker", **kw)

    @agent.tool_plain
    def job_status(job: str) -> str:
        """Check whether a job has finished."""
        runs.append(1)
        return f"job {job} is still pending; check job_status again"

    return agent


def test_without_overseer_the_repeated_call_goes_on(loopback: Start) -> None:
    runs: list[int] = []
    srv = loopback(status_loop())
    _repeat_agent(srv, runs).run_sync("Is job 42 done?")
    assert len(runs) == 8 and len(srv.requests) == 9


async def test_with_overseer_the_repeated_call_is_stopped(loopback: Start, tmp_path: Path) -> None:
    runs: list[int] = []
    srv = loopback(status_loop())
    cap = OverseerCapability(GuardSettings(rules=RuleSettings(loop_limit=2)), trace_dir=tmp_path)
    result = await _repeat_agent(srv, runs).run("Is job 42 done?", capabilities=[cap])
    assert len(runs) == 2  # the third identical call was not run
    assert len(srv.requests) == 4 and result.output == "done"
    note = messages_text(srv.requests[3], "tool")[-1]
    assert note.startswith("[overseer]") and "job_status" in note
    assert cap.stats["blocked"] == 1 and cap.stats["rules"]["loop_breaker"] == 1
    assert cap.guard.ledger.total.prompt_tokens == srv.prompt_tokens
    (trace,) = tmp_path.glob("*.jsonl")
    events = [e["event"] for e in read_trace(trace, validate=True)]
    assert events[0] == "run_start" and events[-1] == "run_end"
    assert events.count("model_call") == 4 and "rule" in events


async def test_older_tool_outputs_are_masked_in_the_model_input(loopback: Start) -> None:
    pages = [ToolCall("fetch_page", {"url": f"https://wiki.local/{i}"}) for i in range(3)]
    srv = loopback(scripted([Reply(calls=(c,)) for c in pages] + [Reply("240 cm")]))
    cap = OverseerCapability(GuardSettings(rules=RuleSettings(mask_keep=2, purify=False)))
    result = await _page_agent(srv).run(PAGE_QUESTION, capabilities=[cap])
    last = messages_text(srv.requests[3], "tool")
    urls = [str(c.args["url"]) for c in pages]
    assert len(last) == 3 and last[1:] == [page_at(u) for u in urls[1:]]
    assert len(last[0]) < 200 and "fetch_page" in last[0]  # the oldest: a one-line stub
    assert cap.stats["rules"]["masking"] == 1
    # the run's history still holds every output whole: only the request was shortened
    assert _tool_returns(result) == [page_at(u) for u in urls]


async def test_team_budget_stops_the_run(loopback: Start, tmp_path: Path) -> None:
    srv = loopback(status_loop())
    cap = OverseerCapability(GuardSettings(budget_tokens=150), trace_dir=tmp_path)
    with pytest.raises(BudgetExceeded, match="tokens"):
        await _repeat_agent(srv, []).run("Is job 42 done?", capabilities=[cap])
    assert cap.guard.ledger.total.total_tokens >= 150
    assert len(srv.requests) < 8
    (trace,) = tmp_path.glob("*.jsonl")
    end = list(read_trace(trace, validate=True))[-1]
    assert end["event"] == "run_end" and end["stop_reason"] == "budget"


def test_agent_level_capability_makes_each_run_a_guard_run(loopback: Start) -> None:
    srv = loopback(page_script())
    cap = OverseerCapability()
    agent = _page_agent(srv, capabilities=[cap])  # attached once, at construction
    agent.run_sync(PAGE_QUESTION)
    first = cap.guard.ledger.total.prompt_tokens
    agent.run_sync(PAGE_QUESTION)
    assert cap.guard.runs == 2 and cap.stats["rules"]["purification"] == 1
    assert cap.guard.ledger.total.prompt_tokens == srv.prompt_tokens - first


def test_two_agents_share_one_guard_and_are_booked_apart(loopback: Start) -> None:
    guard = Guard()
    guard.start_run(PAGE_QUESTION)
    a, b = loopback(page_script()), loopback(page_script())
    for srv, name in ((a, "a"), (b, "b")):
        _page_agent(srv).run_sync(
            PAGE_QUESTION, capabilities=[OverseerCapability(guard=guard, agent=name)]
        )
    assert guard.runs == 1
    assert guard.ledger.calls_by_actor() == {"agent:a": 2, "agent:b": 2}
    assert guard.ledger.by_actor()["agent:b"].prompt_tokens == b.prompt_tokens


def test_bad_options_are_one_clear_line() -> None:
    with pytest.raises(ValueError, match="either"):
        OverseerCapability(guard=Guard(), trace_dir="x")


async def test_llm_supervisor_rewrites_what_the_rules_leave(loopback: Start) -> None:
    srv = loopback(page_script())
    fix = reply_template("correct_observation", "noise", "Tinbel telescope aperture: 240 cm")
    settings = GuardSettings(rules=RuleSettings(purify=False), supervisor=SupervisorSettings())
    cap = OverseerCapability(settings, supervisor_model=ScriptedModel([fix]))
    await _page_agent(srv).run(PAGE_QUESTION, capabilities=[cap])
    (shown,) = messages_text(srv.requests[1], "tool")  # the correction, with the bus's note
    assert shown.startswith("Tinbel telescope aperture: 240 cm\n\n[observation replaced by ")
    assert cap.stats["supervisor"]["actions"] == {"correct_observation": 1}
    by_kind = cap.guard.ledger.by_kind()
    assert by_kind["agent"].prompt_tokens == srv.prompt_tokens
    assert by_kind["supervisor"].prompt_tokens > 0


def test_real_model_call_is_booked_with_the_servers_usage(embedded_model: LlamaCppModel) -> None:
    question = "Name one primary colour."
    agent = Agent(_model(embedded_model.base_url, embedded_model.name), name="painter")
    cap = OverseerCapability()
    settings = ModelSettings(max_tokens=12, temperature=0.0)
    result = agent.run_sync(question, capabilities=[cap], model_settings=settings)
    booked = cap.guard.ledger.by_actor()["agent:painter"]
    assert booked.prompt_tokens > 5 and 0 < booked.completion_tokens <= 12
    assert result.usage.input_tokens == booked.prompt_tokens
    # the same prompt sent by overseer's own client is billed the same by the server
    direct = OpenAIModel(embedded_model.name, base_url=embedded_model.base_url).complete(
        [{"role": "user", "content": question}], max_tokens=1
    )
    assert direct.usage.prompt_tokens == booked.prompt_tokens


async def test_streamed_run_is_guarded_and_booked(loopback: Start) -> None:
    srv = loopback(page_script())
    cap = OverseerCapability()
    async with _page_agent(srv).run_stream(PAGE_QUESTION, capabilities=[cap]) as streamed:
        assert await streamed.get_output() == "240 cm"
    assert [r.get("stream") for r in srv.requests] == [True, True]
    assert len(messages_text(srv.requests[1], "tool")[0]) <= 3000
    assert cap.guard.ledger.total.prompt_tokens == srv.prompt_tokens  # usage of the last chunk
