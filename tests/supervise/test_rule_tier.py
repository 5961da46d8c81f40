"""The rule tier's plug-ins on the bus, alone and before the SupervisorAgent's LLM tier, and
the LLM-supervisor fixes (issue 18), with scripted agents and a scripted supervisor."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from overseer.models import Completion, Request, ScriptedModel
from overseer.runtime import Executor, RunResult, read_trace
from overseer.supervise import FilterConfig, Step, SupervisorAgent, SupervisorCore
from overseer.supervise import SupervisorSettings as Settings
from overseer.supervise._check import reply_budget, rewrite_problem
from overseer.supervise._decide import decide, reply_template
from overseer.supervise.modes import supervision_plugins
from overseer.supervise.rules import RuleSettings, fired, rule_plugins

from .test_supervisor import FakeTool, is_supervisor, solo, stats_of

PAGE = (
    "Title: Towers of Europe\nURL: https://example.org/towers\n\n"
    + "\n\n".join(
        f"Paragraph {i}: the town fair sold bread and cheese to visitors on day {i}."
        for i in range(60)
    )
    + "\n\nThe Eiffel Tower is 330 metres tall and opened in 1889.\n\n"
    + "\n\n".join(f"Footer {i}: cookie settings and newsletter sign-up." for i in range(20))
)


def agent_then_answer(calls: list[dict[str, Any]]):
    """An agent model that makes the given tool calls in order, then answers."""
    seen: list[str] = []

    def reply(messages: list) -> object:
        if is_supervisor(messages):
            raise AssertionError("the supervisor model should not be asked")
        seen.append("\n".join(m["content"] for m in messages[-2:]))  # a closing turn may be last
        n = len(seen)
        if n <= len(calls):
            return {"thought": "look", "action": "lookup", "args": calls[n - 1]}
        return {"thought": "done", "action": "answer", "answer": "330"}

    return reply, seen


def rule_events(res: RunResult) -> list[dict[str, Any]]:
    return [e for e in read_trace(res.trace_path) if e["event"] == "rule"]


async def test_loop_breaker_refuses_the_third_identical_call_without_an_llm(
    tmp_path: Path,
) -> None:
    reply, seen = agent_then_answer([{"q": "tower"}] * 3)
    tool = FakeTool([("Try again later.", None)])
    rules = rule_plugins(RuleSettings(loop_limit=2))
    res = await Executor(
        ScriptedModel(reply), supervisors=rules, tools={"lookup": tool}, trace_dir=tmp_path
    ).run(solo(["lookup"]), "How tall is the tower?")
    assert tool.calls == 2 and res.answer == "330"
    assert "Try again later." in seen[2]  # the earlier output is still in view, so ...
    assert "Not run again" in seen[3] and "shown above" in seen[3]  # ... pointed to, not quoted
    assert [(e["rule"], e["by"]) for e in rule_events(res)] == [("loop_breaker", "loop_breaker")]
    assert res.plugin_stats["loop_breaker"] == {"rules": {"loop_breaker": 1}}
    assert fired(res.plugin_stats) == {"loop_breaker": 1}
    assert "supervisor:supervisor" not in res.usage_by_actor


async def test_long_page_is_purified_extractively_without_an_llm(tmp_path: Path) -> None:
    reply, seen = agent_then_answer([{"q": "Eiffel tower height"}])
    chain = supervision_plugins("rules+llm", rules=RuleSettings(purify_keep=600))
    res = await Executor(
        ScriptedModel(reply),
        supervisors=chain,
        tools={"lookup": FakeTool([(PAGE, None)])},
        trace_dir=tmp_path,
    ).run(solo(["lookup"]), "How tall is the Eiffel Tower?")
    assert "330 metres tall" in seen[1] and "URL: https://example.org/towers" in seen[1]
    assert "purified extractively (rules)" in seen[1]
    assert len(seen[1]) < len(PAGE) // 2
    (ev,) = rule_events(res)
    assert ev["rule"] == "purification" and ev["before_chars"] == len(PAGE)
    assert fired(res.plugin_stats) == {"purification": 1}
    assert stats_of(res)["actions"] == {}  # the LLM tier read the extract: nothing to flag


async def test_masking_stubs_older_observations_in_the_agents_prompt(tmp_path: Path) -> None:
    reply, _seen = agent_then_answer([{"q": f"page {i}"} for i in range(4)])
    tool = FakeTool([(" ".join(f"w{i}x{j:03d}" for j in range(150)), None) for i in range(4)])
    rules = rule_plugins(RuleSettings(mask_keep=1))
    model = ScriptedModel(reply)
    res = await Executor(
        model, supervisors=rules, tools={"lookup": tool}, trace_dir=tmp_path, max_steps=6
    ).run(solo(["lookup"]), "Q")
    last = [m["content"] for m in model.calls[-1]["messages"]]
    assert sum("lookup(" in c and " hidden]" in c for c in last) == 3
    assert sum("w3x149" in c for c in last) == 1 and not any("w2x149" in c for c in last)
    assert fired(res.plugin_stats) == {"masking": 3}  # each record stubbed (and counted) once


async def test_step_budget_refuses_calls_after_the_budget(tmp_path: Path) -> None:
    reply, seen = agent_then_answer([{"q": str(i)} for i in range(3)])
    tool = FakeTool([(f"ok {i}", None) for i in range(3)])
    res = await Executor(
        ScriptedModel(reply),
        supervisors=rule_plugins(RuleSettings(budget_steps=2)),
        tools={"lookup": tool},
        trace_dir=tmp_path,
    ).run(solo(["lookup"]), "Q")
    assert tool.calls == 2 and "step budget is spent" in seen[3]
    assert fired(res.plugin_stats) == {"budget": 1}


async def test_rules_plus_llm_asks_only_about_new_errors(tmp_path: Path) -> None:
    sup_calls: list = []

    def reply(messages: list) -> object:
        if is_supervisor(messages):
            sup_calls.append(messages)
            return reply_template("provide_guidance", "bad query", "use another query")
        return {"thought": "again", "action": "lookup", "args": {"q": "same"}}

    chain = supervision_plugins("rules+llm", rules=RuleSettings(loop_limit=3))
    res = await Executor(
        ScriptedModel(reply),
        supervisors=chain,
        tools={"lookup": FakeTool([("", "HTTP 500")])},
        trace_dir=tmp_path,
        max_steps=5,
    ).run(solo(["lookup"]), "Q")
    assert len(sup_calls) == 1  # the first error only; its repeats are the loop breaker's
    st = stats_of(res)
    assert st["skipped"] == {"repeated error: left to the loop breaker": 2}
    assert fired(res.plugin_stats) == {"loop_breaker": 1}  # the 5th and last step may only answer


# -- the LLM supervisor's fixes --------------------------------------------------------------


class CutModel(ScriptedModel):
    """A scripted model that cuts replies at max_tokens (~4 chars a token), as servers do."""

    def _respond(self, request: Request) -> Completion:
        c = super()._respond(request)
        if len(c.text) <= 4 * request.max_tokens:
            return c
        return replace(c, text=c.text[: 4 * request.max_tokens], finish_reason="length")


async def test_a_cut_off_reply_is_never_asked_again_with_the_same_limit() -> None:
    long = reply_template("correct_observation", "x", "y " * 1200)  # ~2,400 chars
    model = CutModel(lambda m: long)
    d = await decide(
        model, "excessive", ("correct_observation",), "page", max_tokens=150, max_tokens_cap=500
    )
    limits = [c["max_tokens"] for c in model.calls]
    assert limits == [150, 300, 500]  # doubled, then the cap; never the same limit twice
    assert d.action == "approve" and "cut off at the 500-token cap" in d.fallback
    ok = CutModel(lambda m: reply_template("correct_observation", "x", "y " * 200))
    d = await decide(
        ok, "excessive", ("correct_observation",), "page", max_tokens=100, max_tokens_cap=400
    )
    assert d.action == "correct_observation" and d.attempts == 2
    assert [c["max_tokens"] for c in ok.calls] == [100, 200]


async def test_an_observation_whose_purification_failed_is_not_sent_again(
    tmp_path: Path,
) -> None:
    sup_calls: list = []

    def reply(messages: list) -> object:
        if is_supervisor(messages):
            sup_calls.append(messages)
            return "not json"
        n = sum(1 for m in messages if m["role"] == "assistant")
        if n < 2:
            return {"thought": "", "action": "lookup", "args": {"q": str(n)}}
        return {"thought": "", "action": "answer", "answer": "done"}

    sup = SupervisorAgent(settings=Settings(max_reasks=1))
    res = await Executor(
        ScriptedModel(reply),
        supervisors=[sup],
        tools={"lookup": FakeTool([(PAGE, None)])},
        trace_dir=tmp_path,
    ).run(solo(["lookup"]), "Q")
    assert len(sup_calls) == 2  # one decision (2 replies) for the first visit, none after
    assert stats_of(res)["skipped"] == {"purification failed before": 1}


async def test_reply_limit_follows_what_must_be_written() -> None:
    calls: list[int] = []

    class Recorder(ScriptedModel):
        def _respond(self, request: Request) -> Completion:
            calls.append(request.max_tokens)
            return super()._respond(request)

    model = Recorder(lambda m: reply_template("approve", "fine"))
    core = SupervisorCore(Settings(filter=FilterConfig(tau_step=1), max_tokens=2000))
    step = Step(agent="a", subtask="t", kind="tool", tool="t", args="{}", observation="ok")
    await core.review(step, global_task="g", local_task="t", model=model)
    page = Step(agent="a", subtask="u", kind="tool", tool="t", args="{}", observation="p" * 7000)
    core2 = SupervisorCore(Settings(max_tokens=2000))
    await core2.review(page, global_task="g", local_task="t", model=model)
    assert calls[0] == reply_budget(("approve", "provide_guidance"), "inefficient", 2, 2000) < 400
    assert calls[1] == 160 + 1000  # half of 7,000 chars at 3.5 chars a token
    assert reply_budget(("correct_observation",), "excessive", 100_000, 768) == 768


def test_rewrite_check_refuses_invented_facts_and_instructions() -> None:
    src = "Title: T\nURL: https://a.org/p\nThe tower is 330 m tall, built 1889 by Gustave Eiffel."
    assert rewrite_problem("The tower is 330 m tall (built 1889) https://a.org/p", src) == ""
    assert "numbers" in rewrite_problem("The tower is 324 m tall.", src)
    assert "links" in rewrite_problem("See https://b.org/q", src)
    assert "names" in rewrite_problem("Built by Alexandre Dumas and Victor Hugo.", src)
    instructions = "Keep the structure, every link and number; drop scripts and navigation."
    assert "words" in rewrite_problem(instructions, src)


async def test_a_rewrite_that_fails_the_check_is_replaced_by_the_extract(tmp_path: Path) -> None:
    seen: list[str] = []

    def reply(messages: list) -> object:
        if is_supervisor(messages):
            return reply_template("correct_observation", "x", "The Eiffel Tower is 312 m tall.")
        seen.append(messages[-1]["content"])
        if len(seen) == 1:
            return {"thought": "", "action": "lookup", "args": {"q": "Eiffel tower height"}}
        return {"thought": "", "action": "answer", "answer": "330"}

    res = await Executor(
        ScriptedModel(reply),
        supervisors=[SupervisorAgent()],
        tools={"lookup": FakeTool([(PAGE, None)])},
        trace_dir=tmp_path,
    ).run(solo(["lookup"]), "How tall is the Eiffel Tower?")
    assert "312" not in seen[1] and "330 metres tall" in seen[1]
    assert "failed the fact check" in seen[1]
    assert stats_of(res)["rejected"] == {"excessive": 1}


@pytest.mark.parametrize(("verify", "observation"), [(True, ""), (False, "partial output")])
async def test_only_actions_that_can_run_are_offered(verify: bool, observation: str) -> None:
    model = ScriptedModel(lambda m: reply_template("provide_guidance", "x", "retry"))
    core = SupervisorCore(Settings(verify=verify))
    step = Step(
        agent="a",
        subtask="t",
        kind="tool",
        tool="visit",
        args="{}",
        observation=observation,
        error="404",
    )
    await core.review(step, global_task="g", local_task="t", model=model)
    offered = set(model.calls[0]["schema"]["properties"]["action"]["enum"])
    assert ("run_verification" in offered) == verify
    assert ("correct_observation" in offered) == bool(observation)


def test_a_modes_chain_is_the_rule_plugins_then_the_llm_tier() -> None:
    names = ["purification", "grounding", "loop_breaker", "masking"]
    assert [p.name for p in supervision_plugins("rules")] == names
    chain = supervision_plugins("rules+llm")
    assert [p.name for p in chain] == [*names, "supervisor"]
    assert isinstance(chain[-1], SupervisorAgent) and chain[-1].settings.rules == RuleSettings()
    assert [p.name for p in supervision_plugins("llm")] == ["supervisor"]
    budgets = rule_plugins(RuleSettings(budget_steps=3, masking=False, grounding=False))
    assert [p.name for p in budgets] == ["purification", "budget", "loop_breaker"]
    with pytest.raises(ValueError, match="expected one of: llm, rules"):
        supervision_plugins("rule")
