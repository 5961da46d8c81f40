"""LangChain v1 `create_agent` with and without the overseer middleware, end to end over HTTP.

The agents run unmodified on ChatOpenAI against the scripted loopback server (a real HTTP
chat-completions server: it records what reached the model and reports usage), and once
against the embedded model's own llama.cpp server.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from overseer.integrations.langgraph import (
    BudgetExceeded,
    Guard,
    GuardSettings,
    OverseerMiddleware,
)
from overseer.models import LlamaCppModel, OpenAIModel, ScriptedModel
from overseer.runtime import read_trace
from overseer.supervise import SupervisorSettings, reply_template
from overseer.supervise.rules import RuleSettings

from .loopback import (
    PAGE_FACT,
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

pytestmark = pytest.mark.e2e

PAGE = long_page()
Start = Callable[[Script], LoopbackServer]


def _chat(srv: LoopbackServer) -> ChatOpenAI:
    return ChatOpenAI(model="scripted", base_url=srv.base_url, api_key="none", max_retries=0)


@tool
def fetch_page(url: str) -> str:
    """Open a web page and return its text."""
    return page_at(url)


def _page_agent(srv: LoopbackServer, middleware: list[Any]) -> Any:
    return create_agent(_chat(srv), [fetch_page], middleware=middleware, name="researcher")


def _ask(agent: Any, question: str = PAGE_QUESTION) -> dict[str, Any]:
    return agent.invoke({"messages": [{"role": "user", "content": question}]})


def test_without_overseer_the_whole_page_reaches_the_model(loopback: Start) -> None:
    srv = loopback(page_script())
    _ask(_page_agent(srv, []))
    assert len(srv.requests) == 2
    assert messages_text(srv.requests[1], "tool") == [PAGE]


def test_with_overseer_the_page_is_purified_and_calls_are_booked(loopback: Start) -> None:
    srv = loopback(page_script())
    mw = OverseerMiddleware()
    out = _ask(_page_agent(srv, [mw]))
    assert out["messages"][-1].content == "240 cm"
    (seen,) = messages_text(srv.requests[1], "tool")
    assert len(seen) <= 3000 < len(PAGE)  # purify_keep is about 1,500 chars, plus its note
    assert "240 cm" in seen  # the passage that answers the task is kept verbatim
    assert mw.stats["rules"]["purification"] == 1
    # the ledger holds the framework's two model calls with the server's own counts
    ledger = mw.guard.ledger
    assert ledger.calls_by_actor() == {"agent:researcher": 2}
    assert ledger.total.prompt_tokens == srv.prompt_tokens
    assert ledger.total.completion_tokens == srv.completion_tokens
    # the state keeps the purified text, so a later model call does not get the page either
    tool_msgs = [m for m in out["messages"] if m.type == "tool"]
    assert tool_msgs[0].content == seen


def test_page_saving_in_prompt_tokens(loopback: Start) -> None:
    plain, guarded = loopback(page_script()), loopback(page_script())
    _ask(_page_agent(plain, []))
    _ask(_page_agent(guarded, [OverseerMiddleware()]))
    assert plain.usages[1]["prompt_tokens"] > 12_000  # 50,000 chars at 4 a token
    assert guarded.usages[1]["prompt_tokens"] < plain.usages[1]["prompt_tokens"] // 10


def _repeat_agent(srv: LoopbackServer, middleware: list[Any], runs: list[int]) -> Any:
    @tool
    def job_status(job: str) -> str:
        """Check whether a job has finished."""
        runs.append(1)
        return f"job {job} is still pending; check job_status again"

    return create_agent(_chat(srv), [job_status], middleware=middleware)


def test_without_overseer_the_repeated_call_goes_on(loopback: Start) -> None:
    runs: list[int] = []
    srv = loopback(status_loop())
    _ask(_repeat_agent(srv, [], runs), "Is job 42 done?")
    assert len(runs) == 8 and len(srv.requests) == 9


def test_with_overseer_the_repeated_call_is_stopped(loopback: Start, tmp_path: Path) -> None:
    runs: list[int] = []
    srv = loopback(status_loop())
    mw = OverseerMiddleware(GuardSettings(rules=RuleSettings(loop_limit=2)), trace_dir=tmp_path)
    out = _ask(_repeat_agent(srv, [mw], runs), "Is job 42 done?")
    assert len(runs) == 2  # the third identical call was not run
    assert len(srv.requests) == 4 and out["messages"][-1].content == "done"
    note = messages_text(srv.requests[3], "tool")[-1]
    assert note.startswith("[overseer]") and "job_status" in note
    assert mw.stats["blocked"] == 1 and mw.stats["rules"]["loop_breaker"] == 1
    assert mw.guard.ledger.total.prompt_tokens == srv.prompt_tokens
    (trace,) = tmp_path.glob("*.jsonl")
    events = [e["event"] for e in read_trace(trace, validate=True)]
    assert events[0] == "run_start" and events[-1] == "run_end"
    assert events.count("model_call") == 4 and "rule" in events


def test_older_tool_outputs_are_masked_in_the_model_input(loopback: Start) -> None:
    pages = [ToolCall("fetch_page", {"url": f"https://wiki.local/{i}"}) for i in range(3)]
    srv = loopback(scripted([Reply(calls=(c,)) for c in pages] + [Reply("240 cm")]))
    mw = OverseerMiddleware(GuardSettings(rules=RuleSettings(mask_keep=2, purify=False)))
    out = _ask(_page_agent(srv, [mw]))
    last = messages_text(srv.requests[3], "tool")
    urls = [str(c.args["url"]) for c in pages]
    assert len(last) == 3 and last[1:] == [page_at(u) for u in urls[1:]]
    assert len(last[0]) < 200 and "fetch_page" in last[0]  # the oldest: a one-line stub
    assert mw.stats["rules"]["masking"] == 1
    # the graph state still holds every output whole: only the model's input was shortened
    assert [m.content for m in out["messages"] if m.type == "tool"] == [page_at(u) for u in urls]


def test_team_budget_stops_the_run(loopback: Start) -> None:
    srv = loopback(status_loop())
    guard = Guard(GuardSettings(budget_tokens=150))
    agent = _repeat_agent(srv, [OverseerMiddleware(guard=guard, agent="worker")], [])
    with pytest.raises(BudgetExceeded, match="tokens"):
        _ask(agent, "Is job 42 done?")
    assert guard.ledger.total.total_tokens >= 150
    assert len(srv.requests) < 8


def test_budget_end_returns_a_final_message(loopback: Start) -> None:
    srv = loopback(status_loop())
    mw = OverseerMiddleware(GuardSettings(budget_calls=2), on_budget="end")
    out = _ask(_repeat_agent(srv, [mw], []), "Is job 42 done?")
    assert len(srv.requests) == 2
    assert "budget" in out["messages"][-1].content


def test_two_agents_share_one_guard_and_are_booked_apart(loopback: Start) -> None:
    guard = Guard()
    guard.start_run(PAGE_QUESTION)
    a, b = loopback(page_script()), loopback(page_script())
    for srv, name in ((a, "a"), (b, "b")):
        mw = OverseerMiddleware(guard=guard, agent=name)
        _ask(create_agent(_chat(srv), [fetch_page], middleware=[mw]))
    calls = guard.ledger.calls_by_actor()
    assert calls == {"agent:a": 2, "agent:b": 2}
    assert guard.ledger.by_actor()["agent:b"].prompt_tokens == b.prompt_tokens


@pytest.mark.parametrize(
    ("kw", "msg"),
    [({"on_budget": "stop"}, "on_budget"), ({"guard": Guard(), "trace_dir": "x"}, "either")],
)
def test_bad_options_are_one_clear_line(kw: dict[str, Any], msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        OverseerMiddleware(**kw)


async def test_async_agent_is_guarded_too(loopback: Start) -> None:
    srv = loopback(page_script())
    mw = OverseerMiddleware()
    out = await _page_agent(srv, [mw]).ainvoke(
        {"messages": [{"role": "user", "content": PAGE_QUESTION}]}
    )
    assert out["messages"][-1].content == "240 cm"
    assert len(messages_text(srv.requests[1], "tool")[0]) < 3000
    assert mw.guard.ledger.total.prompt_tokens == srv.prompt_tokens


def test_real_model_call_is_booked_with_the_servers_usage(embedded_model: LlamaCppModel) -> None:
    question = "Name one primary colour."
    chat = ChatOpenAI(
        model=embedded_model.name,
        base_url=embedded_model.base_url,
        api_key="none",
        max_completion_tokens=12,
        temperature=0.0,
        max_retries=0,
    )
    mw = OverseerMiddleware(agent="painter")
    out = create_agent(chat, [], middleware=[mw]).invoke(
        {"messages": [{"role": "user", "content": question}]}
    )
    booked = mw.guard.ledger.by_actor()["agent:painter"]
    assert booked.prompt_tokens > 5 and 0 < booked.completion_tokens <= 12
    assert out["messages"][-1].usage_metadata["input_tokens"] == booked.prompt_tokens
    # the same prompt sent by overseer's own client is billed the same by the server
    direct = OpenAIModel(embedded_model.name, base_url=embedded_model.base_url).complete(
        [{"role": "user", "content": question}], max_tokens=1
    )
    assert direct.usage.prompt_tokens == booked.prompt_tokens


def test_llm_supervisor_rewrites_what_the_rules_leave(loopback: Start) -> None:
    srv = loopback(page_script())
    fix = reply_template("correct_observation", "noise", "Tinbel telescope aperture: 240 cm")
    sup = ScriptedModel([fix])
    settings = GuardSettings(rules=RuleSettings(purify=False), supervisor=SupervisorSettings())
    mw = OverseerMiddleware(settings, supervisor_model=sup)
    _ask(_page_agent(srv, [mw]))
    (shown,) = messages_text(srv.requests[1], "tool")  # the correction, with the bus's note
    assert shown.startswith("Tinbel telescope aperture: 240 cm\n\n[observation replaced by ")
    assert mw.stats["supervisor"]["actions"] == {"correct_observation": 1}
    by_kind = mw.guard.ledger.by_kind()
    assert by_kind["agent"].prompt_tokens == srv.prompt_tokens
    assert by_kind["supervisor"].prompt_tokens > 0  # net tokens include the supervisor's


def test_a_refused_repeat_says_the_truth_and_quotes_no_raw_page(loopback: Start) -> None:
    """Issues 32 and 39: the page fetched twice (purified both times), a third fetch refused:
    the note points to its output, still in view (the later copy; the older one is masked as a
    repeat), and quotes no page text at all (a small model copied quoted filler)."""
    call = ToolCall("fetch_page", {"url": "https://wiki.local/Tinbel"})
    srv = loopback(scripted([Reply(calls=(call,))] * 3 + [Reply("240 cm")]))
    mw = OverseerMiddleware(GuardSettings(rules=RuleSettings(loop_limit=2)))
    out = _ask(_page_agent(srv, [mw]))
    assert out["messages"][-1].content == "240 cm" and len(srv.requests) == 4
    tools = messages_text(srv.requests[3], "tool")
    refusal = tools[-1]
    assert refusal.startswith("[overseer] Not run again") and "ran twice" in refusal
    assert "shown above" in refusal and PAGE_FACT not in refusal and len(refusal) < 400
    assert "hidden here: the same" in tools[0]  # the older copy masked as a repeat ...
    assert PAGE_FACT in tools[1] and len(tools[1]) < 3000  # ... the purified one kept
    assert mw.stats["rules"]["loop_breaker"] == 1
