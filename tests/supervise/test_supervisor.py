"""Decisions and their application on the bus, with scripted agents and a scripted supervisor."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from overseer.models import ScriptedModel
from overseer.models.errors import ModelConnectionError
from overseer.runtime import AgentSpec, Executor, RunResult, TeamSpec, ToolResult, read_trace
from overseer.supervise import FilterConfig, SupervisorAgent, SupervisorSettings, tool_verifier
from overseer.supervise._decide import check_reply, decide, reply_template


class FakeTool:
    """A tool returning scripted outputs (and errors), counting its calls."""

    kind: Literal["tool", "memory"] = "tool"
    description = "look something up"
    parameters: Mapping[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}

    def __init__(self, outputs: list[tuple[str, str | None]], name: str = "lookup") -> None:
        self.name = name
        self.outputs = outputs
        self.calls = 0

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        out, err = self.outputs[min(self.calls, len(self.outputs) - 1)]
        self.calls += 1
        return ToolResult(out, err)


def is_supervisor(messages: list) -> bool:
    return messages[0]["content"].startswith("You supervise one agent")


def stats_of(res: RunResult) -> dict[str, Any]:
    """The supervisor's stats of one run, as its trace records them at the run's end."""
    return next(e for e in read_trace(res.trace_path) if e["event"] == "supervisor_stats")


def solo(tools: list[str], max_rounds: int = 1) -> TeamSpec:
    return TeamSpec(agents=[AgentSpec(name="a", tools=tools)], decision="last", rounds=max_rounds)


# -- decisions -------------------------------------------------------------------------------


def test_check_reply_accepts_repairs_and_rejects() -> None:
    ok = json.dumps(reply_template("provide_guidance", "why", "do X"))
    assert check_reply(ok, ("approve", "provide_guidance")) == (
        "provide_guidance",
        "why",
        "do X",
        "",
    )
    wrong = json.dumps(reply_template("provide_guidance", "why", "do X"))
    action, _, value, note = check_reply(
        wrong.replace("provide_guidance", "run_verification", 1).replace(
            '"guidance"', '"new_observation"'
        ),
        ("correct_observation",),
    )
    assert (action, value) == ("correct_observation", "do X") and "not permitted" in note
    with pytest.raises(ValueError, match="must be one of"):
        check_reply(json.dumps(reply_template("approve", "x")), ("correct_observation",))
    with pytest.raises(ValueError, match=r"needs a non-empty parameters.guidance"):
        check_reply(
            '{"analysis": "", "action": "provide_guidance", "parameters": {}}',
            ("provide_guidance",),
        )
    with pytest.raises(ValueError, match="not JSON"):
        check_reply("approve!", ("approve",))


async def test_decide_reasks_then_falls_back_to_approve_with_reason() -> None:
    good = reply_template("approve", "fine")
    m = ScriptedModel(["nonsense", good])
    d = await decide(m, "inefficient", ("approve", "provide_guidance"), "W")
    assert (d.action, d.attempts, d.fallback) == ("approve", 2, "")
    assert "invalid" in m.calls[1]["messages"][-1]["content"]
    bad = ScriptedModel(["x", "y", "z"])
    d = await decide(bad, "error", ("provide_guidance",), "W", max_reasks=2)
    assert d.action == "approve" and d.attempts == 3 and "no valid decision" in d.fallback
    assert len(bad.calls) == 3 and d.usage.prompt_tokens > 0


async def test_decide_model_error_approves_and_counts_the_failed_call() -> None:
    m = ScriptedModel(["nonsense", ModelConnectionError("server gone")])
    d = await decide(m, "error", ("provide_guidance",), "W")
    assert (d.action, d.attempts) == ("approve", 2)
    assert d.fallback == "model error: server gone"
    assert "one of ['provide_guidance']" in m.calls[1]["messages"][-1]["content"]


async def test_schema_offers_only_permitted_actions() -> None:
    m = ScriptedModel([reply_template("correct_observation", "a", "short")])
    await decide(m, "excessive", ("correct_observation",), "W")
    assert m.calls[0]["schema"]["properties"]["action"]["enum"] == ["correct_observation"]
    assert "approve" not in m.calls[0]["messages"][0]["content"].split("Permitted actions:")[1]


# -- on the bus ------------------------------------------------------------------------------


async def test_long_observation_is_purified_and_the_agent_sees_the_note(tmp_path: Path) -> None:
    page = "Address: http://x\n" + "<div class='ad'>buy</div>" * 200 + "Height: 42 m"
    tool = FakeTool([(page, None)])
    seen: list[str] = []

    def reply(messages: list) -> object:
        if is_supervisor(messages):
            return reply_template("correct_observation", "noise", "Address: http://x\nHeight: 42 m")
        seen.append(messages[-1]["content"])
        if len(seen) == 1:
            return {"thought": "look", "action": "lookup", "args": {"q": "h"}}
        return {"thought": "done", "action": "answer", "answer": "42"}

    sup = SupervisorAgent(settings=SupervisorSettings(filter=FilterConfig(tau_len=3000)))
    ex = Executor(
        ScriptedModel(reply), supervisors=[sup], tools={"lookup": tool}, trace_dir=tmp_path
    )
    res = await ex.run(solo(["lookup"]), "How tall?")
    assert res.answer == "42"
    assert "Height: 42 m" in seen[1] and "observation replaced by supervisor" in seen[1]
    assert "<div" not in seen[1]
    assert res.usage_by_actor["supervisor:supervisor"].prompt_tokens > 0
    assert stats_of(res)["triggers"] == {"excessive": 1}
    assert stats_of(res)["actions"] == {"correct_observation": 1}
    events = [e["event"] for e in read_trace(res.trace_path)]
    assert "supervision" in events and "supervisor_stats" in events


async def test_rewrite_that_is_not_shorter_keeps_the_original(tmp_path: Path) -> None:
    page = "p" * 3500
    seen: list[str] = []

    def reply(messages: list) -> object:
        if is_supervisor(messages):
            return reply_template("correct_observation", "x", "q" * 4000)
        seen.append(messages[-1]["content"])
        if len(seen) == 1:
            return {"thought": "", "action": "lookup", "args": {"q": "h"}}
        return {"thought": "", "action": "answer", "answer": "done"}

    sup = SupervisorAgent()
    ex = Executor(
        ScriptedModel(reply),
        supervisors=[sup],
        tools={"lookup": FakeTool([(page, None)])},
        trace_dir=tmp_path,
    )
    res = await ex.run(solo(["lookup"]), "Q")
    assert page in seen[1] and "replaced" not in seen[1]
    assert stats_of(res)["skipped"] == {"rewrite not shorter": 1}


def looping_executor(tmp_path: Path, sup_calls: list, **settings: Any) -> tuple[Executor, Any]:
    """One agent that repeats the same lookup; the supervisor guides it (calls recorded)."""

    def reply(messages: list) -> object:
        if is_supervisor(messages):
            sup_calls.append(messages)
            return reply_template("provide_guidance", "stuck", "search for 'height' instead")
        return {"thought": "again", "action": "lookup", "args": {"q": "same"}}

    cfg = SupervisorSettings(filter=FilterConfig(tau_loop=2, tau_step=100), **settings)
    sup = SupervisorAgent(settings=cfg)
    ex = Executor(
        ScriptedModel(reply),
        supervisors=[sup],
        tools={"lookup": FakeTool([("x", None)])},
        trace_dir=tmp_path,
        max_steps=6,
    )
    return ex, sup


async def test_loop_gets_guidance_at_most_max_guidance_times(tmp_path: Path) -> None:
    sup_calls: list = []
    ex, _ = looping_executor(tmp_path, sup_calls, max_guidance=2)
    res = await ex.run(solo(["lookup"]), "Q")
    # never answered: the 6th and last step may only answer, and the agent calls the tool again
    assert res.failures and res.failures[0].reason == "unparsable"
    # steps 2..5 are loops (4 triggers); only 2 guidance calls, the rest skipped without an LLM
    assert len(sup_calls) == 2
    st = stats_of(res)
    assert st["triggers"] == {"inefficient": 4} and st["skipped"] == {"guidance cap reached": 2}
    assert "Recent steps of the whole team" in sup_calls[0][1]["content"]  # W_ext for inefficiency


async def test_error_runs_the_verifier_and_appends_its_finding(tmp_path: Path) -> None:
    seen: list[str] = []

    def reply(messages: list) -> object:
        if is_supervisor(messages):
            return reply_template("run_verification", "wrong unit?", "Is 42 m the height?")
        seen.append(messages[-1]["content"])
        if len(seen) == 1:
            return {"thought": "", "action": "lookup", "args": {"q": "h"}}
        return {"thought": "", "action": "answer", "answer": "42"}

    verified = {"thought": "", "action": "answer", "answer": "VERIFIED: yes, 42 m"}
    m = ScriptedModel(reply, by_actor={"verifier": lambda _: verified})
    ex = Executor(
        m,
        supervisors=[SupervisorAgent()],
        tools={"lookup": FakeTool([("", "HTTP 500")])},
        trace_dir=tmp_path,
        verifier=tool_verifier([]),
    )
    res = await ex.run(solo(["lookup"]), "Q")
    assert "VERIFIED: yes, 42 m" in seen[1] and "verification requested by supervisor" in seen[1]
    assert res.usage_by_actor["verifier:verifier"].completion_tokens > 0


@pytest.mark.parametrize(
    ("disable", "supervisor_called"),
    [((), True), (("purification",), False), (("correction", "guidance"), True)],
)
async def test_ablation_switches_off_one_strategy(
    tmp_path: Path, disable: tuple[str, ...], supervisor_called: bool
) -> None:
    calls = []

    def reply(messages: list) -> object:
        if is_supervisor(messages):
            calls.append(1)
            return reply_template("correct_observation", "x", "short")
        if len(messages) == 2:
            return {"thought": "", "action": "lookup", "args": {"q": "h"}}
        return {"thought": "", "action": "answer", "answer": "done"}

    sup = SupervisorAgent(settings=SupervisorSettings.ablation(disable))
    ex = Executor(
        ScriptedModel(reply),
        supervisors=[sup],
        tools={"lookup": FakeTool([("z" * 5000, None)])},
        trace_dir=tmp_path,
    )
    await ex.run(solo(["lookup"]), "Q")
    assert bool(calls) == supervisor_called


def test_unknown_ablation_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown strategies"):
        SupervisorSettings.ablation(["purifcation"])


async def test_short_steps_cost_no_supervisor_call(tmp_path: Path) -> None:
    def reply(messages: list) -> object:
        assert not is_supervisor(messages), "the filter should have approved this step"
        return {"thought": "", "action": "answer", "answer": "4"}

    sup = SupervisorAgent()
    res = await Executor(ScriptedModel(reply), supervisors=[sup], trace_dir=tmp_path).run(
        solo([]), "2+2?"
    )
    assert res.answer == "4" and "supervisor:supervisor" not in res.usage_by_actor
    assert stats_of(res)["steps"] == 1 and stats_of(res)["triggers"] == {}


async def test_verification_cap_and_repeated_error_skip() -> None:
    from overseer.supervise import Step, SupervisorCore

    replies: list[list[str]] = []

    def reply(messages: list) -> dict:
        replies.append([m["content"] for m in messages])
        return reply_template("run_verification", "check it", "Is the page there?")

    core = SupervisorCore(SupervisorSettings(max_verifications=1, max_same_error=2))
    model = ScriptedModel(reply)
    step = Step(agent="a", subtask="t", kind="tool", tool="visit", args='{"url": "x"}', error="404")
    first = await core.review(step, global_task="g", local_task="t", model=model)
    assert first.decision is not None and first.decision.action == "run_verification"
    # second identical error: run_verification is no longer allowed, so the reply is refused
    second = await core.review(step, global_task="g", local_task="t", model=model)
    assert second.decision is not None and second.decision.action != "run_verification"
    # third identical error: no LLM call at all
    calls = len(model.calls)
    third = await core.review(step, global_task="g", local_task="t", model=model)
    assert third.decision is None and third.note == "same error already reviewed"
    assert len(model.calls) == calls
    # a different error is reviewed again
    other = Step(
        agent="a", subtask="t", kind="tool", tool="visit", args='{"url": "y"}', error="500"
    )
    assert (await core.review(other, global_task="g", local_task="t", model=model)).decision
    with pytest.raises(ValueError, match="max_verifications"):
        SupervisorSettings(max_verifications=-1)


async def test_one_instance_gives_each_run_fresh_caps_and_counters(tmp_path: Path) -> None:
    sup_calls: list = []
    ex, sup = looping_executor(tmp_path, sup_calls, max_guidance=2)
    first = await ex.run(solo(["lookup"]), "Q", run_id="one")
    second = await ex.run(solo(["lookup"]), "Q", run_id="two")
    assert len(sup_calls) == 4  # the guidance cap starts again in the second run
    for res in (first, second):
        st = stats_of(res)
        assert st["steps"] == 5 and st["actions"] == {"provide_guidance": 2}  # 6th: answer only
    # nothing of either run is left on the instance
    assert not [k for k, v in vars(sup).items() if isinstance(v, list | dict | set) and v]
