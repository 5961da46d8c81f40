"""OpenAI Agents SDK runs with and without overseer, end to end over HTTP.

The agents run unmodified on `OpenAIChatCompletionsModel` against the scripted loopback server
(a real HTTP chat-completions server: it records what reached the model and reports usage),
and once against the embedded model's own llama.cpp server. The SDK's tracing is disabled so
nothing is sent to api.openai.com.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunConfig,
    RunHooks,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from overseer.integrations.openai_agents import (
    BudgetExceeded,
    Guard,
    GuardSettings,
    Overseer,
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
NO_TRACING = RunConfig(tracing_disabled=True)


@pytest.fixture(autouse=True, scope="module")
def _no_sdk_tracing() -> Iterator[None]:
    """The SDK's trace exporter would post to api.openai.com: off for the whole module."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def _model(base_url: str, name: str = "scripted") -> OpenAIChatCompletionsModel:
    return OpenAIChatCompletionsModel(
        name, AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0)
    )


@function_tool
def fetch_page(url: str) -> str:
    """Open a web page and return its text."""
    return page_at(url)


def _page_agent(srv: LoopbackServer, name: str = "researcher") -> Agent[Any]:
    return Agent(
        name=name, instructions="Answer briefly.", model=_model(srv.base_url), tools=[fetch_page]
    )


def test_without_overseer_the_whole_page_reaches_the_model(loopback: Start) -> None:
    srv = loopback(page_script())
    Runner.run_sync(_page_agent(srv), PAGE_QUESTION, run_config=NO_TRACING)
    assert len(srv.requests) == 2
    assert messages_text(srv.requests[1], "tool") == [PAGE]


def test_with_overseer_the_page_is_purified_and_calls_are_booked(loopback: Start) -> None:
    srv = loopback(page_script())
    agent = _page_agent(srv)
    ov = Overseer()
    result = ov.run_sync(agent, PAGE_QUESTION, run_config=NO_TRACING)
    assert result.final_output == "240 cm"
    (seen,) = messages_text(srv.requests[1], "tool")
    assert len(seen) <= 3000 < len(PAGE)  # purify_keep is about 1,500 chars, plus its note
    assert "240 cm" in seen  # the passage that answers the task is kept verbatim
    assert ov.stats["rules"]["purification"] == 1
    # the ledger holds the SDK's two model calls with the server's own counts
    ledger = ov.guard.ledger
    assert ledger.calls_by_actor() == {"agent:researcher": 2}
    assert ledger.total.prompt_tokens == srv.prompt_tokens
    assert ledger.total.completion_tokens == srv.completion_tokens
    assert ledger.total.prompt_tokens == result.context_wrapper.usage.input_tokens
    # the user's agent is unchanged: overseer ran a clone with guarded tools
    assert agent.tools == [fetch_page] and not fetch_page.tool_output_guardrails
    # the run's history holds the purified text, so a later model call does not get the page
    outputs = [i for i in result.to_input_list() if i.get("type") == "function_call_output"]
    assert outputs[0]["output"] == seen


def test_page_saving_in_prompt_tokens(loopback: Start) -> None:
    plain, guarded = loopback(page_script()), loopback(page_script())
    Runner.run_sync(_page_agent(plain), PAGE_QUESTION, run_config=NO_TRACING)
    Overseer().run_sync(_page_agent(guarded), PAGE_QUESTION, run_config=NO_TRACING)
    assert plain.usages[1]["prompt_tokens"] > 12_000  # 50,000 chars at 4 a token
    assert guarded.usages[1]["prompt_tokens"] < plain.usages[1]["prompt_tokens"] // 10


def _repeat_agent(srv: LoopbackServer, runs: list[int], name: str = "worker") -> Agent[Any]:
    @function_tool
    def job_status(job: str) -> str:
        """Check whether a job has finished."""
        runs.append(1)
        return f"job {job} is still pending; check job_status again"

    return Agent(name=name, model=_model(srv.base_url), tools=[job_status])


def test_without_overseer_the_repeated_call_goes_on(loopback: Start) -> None:
    runs: list[int] = []
    srv = loopback(status_loop())
    Runner.run_sync(
        _repeat_agent(srv, runs), "Is job 42 done?", run_config=NO_TRACING, max_turns=20
    )
    assert len(runs) == 8 and len(srv.requests) == 9


async def test_with_overseer_the_repeated_call_is_stopped(loopback: Start, tmp_path: Path) -> None:
    runs: list[int] = []
    srv = loopback(status_loop())
    ov = Overseer(GuardSettings(rules=RuleSettings(loop_limit=2)), trace_dir=tmp_path)
    result = await ov.run(_repeat_agent(srv, runs), "Is job 42 done?", run_config=NO_TRACING)
    assert len(runs) == 2  # the third identical call was not run
    assert len(srv.requests) == 4 and result.final_output == "done"
    note = messages_text(srv.requests[3], "tool")[-1]
    assert note.startswith("[overseer]") and "job_status" in note
    assert ov.stats["blocked"] == 1 and ov.stats["rules"]["loop_breaker"] == 1
    assert ov.guard.ledger.total.prompt_tokens == srv.prompt_tokens
    (trace,) = tmp_path.glob("*.jsonl")
    events = [e["event"] for e in read_trace(trace, validate=True)]
    assert events[0] == "run_start" and events[-1] == "run_end"
    assert events.count("model_call") == 4 and "rule" in events


async def test_older_tool_outputs_are_masked_in_the_model_input(loopback: Start) -> None:
    pages = [ToolCall("fetch_page", {"url": f"https://wiki.local/{i}"}) for i in range(3)]
    srv = loopback(scripted([Reply(calls=(c,)) for c in pages] + [Reply("240 cm")]))
    ov = Overseer(GuardSettings(rules=RuleSettings(mask_keep=2, purify=False)))
    result = await ov.run(_page_agent(srv), PAGE_QUESTION, run_config=NO_TRACING)
    last = messages_text(srv.requests[3], "tool")
    urls = [str(c.args["url"]) for c in pages]
    assert len(last) == 3 and last[1:] == [page_at(u) for u in urls[1:]]
    assert len(last[0]) < 200 and "fetch_page" in last[0]  # the oldest: a one-line stub
    assert ov.stats["rules"]["masking"] == 1
    # the run's items still hold every output whole: only the model's input was shortened
    items = result.to_input_list()
    outputs = [i["output"] for i in items if i.get("type") == "function_call_output"]
    assert outputs == [page_at(u) for u in urls]


async def test_team_budget_stops_the_run(loopback: Start, tmp_path: Path) -> None:
    srv = loopback(status_loop())
    ov = Overseer(GuardSettings(budget_tokens=150), trace_dir=tmp_path)
    with pytest.raises(BudgetExceeded, match="tokens"):
        await ov.run(_repeat_agent(srv, []), "Is job 42 done?", run_config=NO_TRACING)
    assert ov.guard.ledger.total.total_tokens >= 150
    assert len(srv.requests) < 8
    (trace,) = tmp_path.glob("*.jsonl")
    end = list(read_trace(trace, validate=True))[-1]
    assert end["event"] == "run_end" and end["stop_reason"] == "budget"


async def test_handoff_target_is_guarded_and_booked_apart(loopback: Start) -> None:
    steps = [
        Reply(calls=(ToolCall("transfer_to_researcher"),)),
        Reply(calls=(ToolCall("fetch_page", {"url": "https://wiki.local/Tinbel"}),)),
        Reply("240 cm"),
    ]
    srv = loopback(scripted(steps))
    researcher = _page_agent(srv)
    triage = Agent(name="triage", model=_model(srv.base_url), handoffs=[researcher])
    ov = Overseer()
    result = await ov.run(triage, PAGE_QUESTION, run_config=NO_TRACING)
    assert result.final_output == "240 cm" and result.last_agent.name == "researcher"
    assert len(messages_text(srv.requests[2], "tool")[-1]) <= 3000  # purified after the handoff
    by_actor = ov.guard.ledger.by_actor()
    assert ov.guard.ledger.calls_by_actor() == {"agent:triage": 1, "agent:researcher": 2}
    assert by_actor["agent:triage"].prompt_tokens == srv.usages[0]["prompt_tokens"]
    assert ov.guard.ledger.total.prompt_tokens == srv.prompt_tokens


async def test_own_runner_call_with_the_attachments_and_own_hooks(loopback: Start) -> None:
    seen: list[str] = []

    class Mine(RunHooks[Any]):
        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            seen.append(agent.name)

    srv = loopback(page_script())
    guard = Guard()
    ov = Overseer(guard=guard)
    guard.start_run(PAGE_QUESTION)
    await Runner.run(
        ov.agent(_page_agent(srv)),
        PAGE_QUESTION,
        run_config=ov.run_config(NO_TRACING),
        hooks=ov.hooks.chained(Mine()),
    )
    assert seen == ["researcher", "researcher"]
    assert len(messages_text(srv.requests[1], "tool")[0]) <= 3000
    assert guard.ledger.total.prompt_tokens == srv.prompt_tokens


def test_bad_options_are_one_clear_line() -> None:
    with pytest.raises(ValueError, match="either"):
        Overseer(guard=Guard(), trace_dir="x")


async def test_llm_supervisor_rewrites_what_the_rules_leave(loopback: Start) -> None:
    srv = loopback(page_script())
    fix = reply_template("correct_observation", "noise", "Tinbel telescope aperture: 240 cm")
    settings = GuardSettings(rules=RuleSettings(purify=False), supervisor=SupervisorSettings())
    ov = Overseer(settings, supervisor_model=ScriptedModel([fix]))
    await ov.run(_page_agent(srv), PAGE_QUESTION, run_config=NO_TRACING)
    (shown,) = messages_text(srv.requests[1], "tool")  # the correction, with the bus's note
    assert shown.startswith("Tinbel telescope aperture: 240 cm\n\n[observation replaced by ")
    assert ov.stats["supervisor"]["actions"] == {"correct_observation": 1}
    by_kind = ov.guard.ledger.by_kind()
    assert by_kind["agent"].prompt_tokens == srv.prompt_tokens
    assert by_kind["supervisor"].prompt_tokens > 0


def test_real_model_call_is_booked_with_the_servers_usage(embedded_model: LlamaCppModel) -> None:
    question = "Name one primary colour."
    agent = Agent(name="painter", model=_model(embedded_model.base_url, embedded_model.name))
    cfg = RunConfig(
        tracing_disabled=True, model_settings=ModelSettings(max_tokens=12, temperature=0.0)
    )
    ov = Overseer()
    result = ov.run_sync(agent, question, run_config=cfg)
    booked = ov.guard.ledger.by_actor()["agent:painter"]
    assert booked.prompt_tokens > 5 and 0 < booked.completion_tokens <= 12
    assert result.context_wrapper.usage.input_tokens == booked.prompt_tokens
    # the same prompt sent by overseer's own client is billed the same by the server
    direct = OpenAIModel(embedded_model.name, base_url=embedded_model.base_url).complete(
        [{"role": "user", "content": question}], max_tokens=1
    )
    assert direct.usage.prompt_tokens == booked.prompt_tokens


async def test_streamed_run_is_guarded_and_booked(loopback: Start) -> None:
    srv = loopback(page_script())
    ov = Overseer()
    ov.guard.start_run(PAGE_QUESTION)
    streamed = Runner.run_streamed(
        ov.agent(_page_agent(srv)),
        PAGE_QUESTION,
        run_config=ov.run_config(NO_TRACING),
        hooks=ov.hooks,
    )
    async for _ in streamed.stream_events():
        pass
    assert streamed.final_output == "240 cm"
    assert [r.get("stream") for r in srv.requests] == [True, True]
    assert len(messages_text(srv.requests[1], "tool")[0]) <= 3000
    assert ov.guard.ledger.total.prompt_tokens == srv.prompt_tokens  # usage of the last chunk
