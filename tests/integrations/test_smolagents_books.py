"""Issue 49 on smolagents: one `OverseerSupervisor` attached to 20 agents that run at once
(threads) gives 20 runs, each with its own ledger, trace, refusal counts and log; a managed
agent's run stays part of its manager's; and each run's ledger equals what the server billed
for that run's requests: every call (the final answer's, the one smolagents adds at
`max_steps`) and the cached prompt tokens. On smolagents' own `OpenAIServerModel` talking to
a scripted OpenAI-compatible server on loopback (`LoopbackServer`), one model instance shared
by all agents."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent, tool

from overseer.integrations.smolagents import OverseerSupervisor
from overseer.runtime import read_trace
from overseer.supervise.rules import RuleSettings

from .loopback import LoopbackServer, Reply, ToolCall, cached_tokens, prompt_tokens

RUNS = 20
TAG = re.compile(r"\[run (\d+)\]")


@tool
def lookup(q: str) -> str:
    """Look a query up (the service is down).

    Args:
        q: the query
    """
    raise ConnectionError("lookup service unavailable")


@tool
def job_status(job: str) -> str:
    """Check whether a job has finished.

    Args:
        job: the job's number
    """
    return f"job {job} is still pending"


def tag(body: Mapping[str, Any]) -> int:
    """The run a request belongs to: the `[run k]` its messages carry."""
    m = TAG.search(json.dumps(body.get("messages", [])))
    assert m is not None, "a request without its run's tag"
    return int(m.group(1))


def tools_offered(body: Mapping[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or []}


def looked_up(body: Mapping[str, Any]) -> bool:
    """Whether the lookup's failure is in the request (smolagents records no call of a failed
    step, only its error)."""
    return "unavailable" in json.dumps(body.get("messages", []))


def asked_helper(body: Mapping[str, Any]) -> bool:
    """Whether the helper's report is in the request (smolagents writes calls as text)."""
    return "from your managed agent" in json.dumps(body.get("messages", []))


def solo_script(body: Mapping[str, Any], n: int) -> Reply:
    """Even runs: a failing lookup, then the answer. Odd runs: job_status(k) again and again
    (the loop breaker refuses the repeats; the agent is sent to its final answer, no tools)."""
    k = tag(body)
    if not body.get("tools"):  # smolagents' final-answer call
        return Reply(text=f"answer {k}")
    if k % 2:
        return Reply(calls=(ToolCall("job_status", {"job": str(k)}),))
    if not looked_up(body):
        return Reply(calls=(ToolCall("lookup", {"q": f"q{k}"}),))
    return Reply(calls=(ToolCall("final_answer", {"answer": f"answer {k}"}),))


def server_books(srv: LoopbackServer) -> dict[int, tuple[int, int, int]]:
    """Run -> (calls, prompt tokens, cached tokens) as the server billed them (the server
    computes a request's cached tokens against the request it received before it)."""
    out: dict[int, tuple[int, int, int]] = {}
    for i, body in enumerate(srv.requests):
        calls, prompt, cached = out.get(tag(body), (0, 0, 0))
        before = srv.requests[i - 1] if i else None
        out[tag(body)] = (
            calls + 1,
            prompt + prompt_tokens(body),
            cached + cached_tokens(body, before),
        )
    assert sum(c for c, _, _ in out.values()) == len(srv.usages)
    assert sum(p for _, p, _ in out.values()) == srv.prompt_tokens
    assert sum(c for _, _, c in out.values()) == srv.cached_tokens
    return out


def ledger_books(run: Any) -> tuple[int, int, int]:
    agent = [e for e in run.ledger.entries if e.kind == "agent"]
    return (len(agent), sum(e.usage.prompt_tokens for e in agent),
            sum(e.usage.cached_prompt_tokens for e in agent))  # fmt: skip


def run_at_once(build: Callable[[int], Any], sup: OverseerSupervisor) -> dict[int, dict[str, Any]]:
    """Run agent k = build(k) on its question in thread k, all at once; what each thread saw
    of its own run (answer, run, log, stats), read in that thread after its run."""
    seen: dict[int, dict[str, Any]] = {}
    start = threading.Barrier(RUNS)

    def one(k: int) -> None:
        agent = build(k)
        start.wait(30)
        answer = agent.run(f"[run {k}] What is the status of job {k}?")
        seen[k] = {"answer": answer, "run": sup.run, "log": list(sup.log), "stats": sup.stats}

    threads = [threading.Thread(target=one, args=(k,)) for k in range(RUNS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(seen) == list(range(RUNS))
    return seen


def check_traces(tmp: Path, seen: Mapping[int, Mapping[str, Any]]) -> None:
    """One trace per run, holding that run's tag only, closed by run_end with its answer."""
    traces = sorted(tmp.glob("*.jsonl"))
    assert len(traces) == RUNS
    for path in traces:
        events = list(read_trace(path, validate=True))
        k = tag({"messages": [events[0]["query"]]})
        assert {int(x) for x in TAG.findall(json.dumps(events))} == {k}
        assert events[0]["event"] == "run_start" and events[-1]["event"] == "run_end"
        assert events[-1]["run"] == seen[k]["run"].id
        assert str(seen[k]["answer"]) in events[-1]["answer"]


def test_twenty_agents_one_supervisor_twenty_runs_each_its_own_books(tmp_path: Path) -> None:
    sup = OverseerSupervisor(
        mode="rules", rules=RuleSettings(loop_limit=2, masking=False), trace_dir=tmp_path
    )
    with LoopbackServer(solo_script) as srv:
        model = OpenAIServerModel(model_id="scripted", api_base=srv.base_url, api_key="none")

        def build(k: int) -> Any:
            tools = [job_status] if k % 2 else [lookup]
            agent = ToolCallingAgent(tools=tools, model=model, max_steps=6, verbosity_level=-1)
            return sup.attach(agent)

        seen = run_at_once(build, sup)
        billed = server_books(srv)
    assert sup.runs == RUNS and len({s["run"].id for s in seen.values()}) == RUNS
    check_traces(tmp_path, seen)
    for k, s in seen.items():
        assert s["answer"] == f"answer {k}"
        assert ledger_books(s["run"]) == billed[k]  # every call, cached tokens included
        if k % 2:  # two refused repeats of its own, then its final answer (no tools)
            assert s["stats"]["rules"] == {"loop_breaker": 2} and s["stats"]["escalations"] == 1
            assert billed[k][0] == 5  # 2 calls run, 2 refused, the final-answer call
            assert [e.action for e in s["log"]] == ["loop_breaker", "loop_breaker", "refusals"]
        else:  # its failing lookup (no rule fired; mode rules has no LLM tier whose filter
            # would flag it) and its answer: 2 calls
            assert s["stats"]["rules"] == {} and billed[k][0] == 2
            assert s["log"] == []
        assert s["run"].ended


def manager_script(body: Mapping[str, Any], n: int) -> Reply:
    """A manager (a ToolCallingAgent for even runs, a CodeAgent for odd ones) hands the
    question to its helper, then answers with its report; the helper looks it up once (the
    service is down), then answers."""
    k, offered = tag(body), tools_offered(body)
    if "lookup" in offered:  # the helper
        if not looked_up(body):
            return Reply(calls=(ToolCall("lookup", {"q": f"q{k}"}),))
        return Reply(calls=(ToolCall("final_answer", {"answer": f"helper {k}: down"}),))
    if "helper" in offered:  # a ToolCallingAgent manager
        if not asked_helper(body):
            return Reply(calls=(ToolCall("helper", {"task": f"[run {k}] look it up"}),))
        return Reply(calls=(ToolCall("final_answer", {"answer": f"answer {k}"}),))
    code = f'r = helper(task="[run {k}] look it up")\nfinal_answer("answer {k}")'
    return Reply(text=f"Thought: ask the helper.\n<code>\n{code}\n</code>")


def test_twenty_managers_at_once_each_one_run_with_its_helper(tmp_path: Path) -> None:
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(masking=False), trace_dir=tmp_path)
    with LoopbackServer(manager_script) as srv:
        model = OpenAIServerModel(model_id="scripted", api_base=srv.base_url, api_key="none")

        def build(k: int) -> Any:
            helper = ToolCallingAgent(tools=[lookup], model=model, max_steps=3, verbosity_level=-1,
                                      name="helper", description="Looks things up.")  # fmt: skip
            kind = CodeAgent if k % 2 else ToolCallingAgent
            return sup.attach(kind(tools=[], model=model, managed_agents=[helper], max_steps=3,
                                   verbosity_level=-1))  # fmt: skip

        seen = run_at_once(build, sup)
        billed = server_books(srv)
    assert sup.runs == RUNS  # the helpers' runs nested in their managers'
    check_traces(tmp_path, seen)
    for k, s in seen.items():
        assert s["answer"] == f"answer {k}"
        assert ledger_books(s["run"]) == billed[k]
        manager = 1 if k % 2 else 2  # a CodeAgent answers in the code that asked the helper
        assert s["run"].stats["calls"] == {"agent:agent": manager, "agent:helper": 2}


def test_one_run_with_a_failing_tool_books_what_the_server_billed() -> None:
    """The issue's case: a failing tool, then the answer: 2 calls served, 2 booked, with the
    second call's cached prefix."""
    sup = OverseerSupervisor(mode="rules")
    with LoopbackServer(solo_script) as srv:
        model = OpenAIServerModel(model_id="scripted", api_base=srv.base_url, api_key="none")
        agent = sup.attach(ToolCallingAgent(tools=[lookup], model=model, verbosity_level=-1))
        assert agent.run("[run 0] Look it up.") == "answer 0"
        assert ledger_books(sup.run) == (2, srv.prompt_tokens, srv.cached_tokens)
    assert srv.cached_tokens > 0 and sup.run.ledger.total.completion_tokens == srv.completion_tokens
