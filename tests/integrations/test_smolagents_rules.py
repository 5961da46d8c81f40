"""The rule tier in the smolagents callback: loop breaker before the tool runs, extractive
purification, masking of older steps, budgets inherited by managed agents, and the modes;
on smolagents' ToolCallingAgent and CodeAgent with scripted smolagents models."""

from __future__ import annotations

from typing import Any

import pytest
from smolagents import CodeAgent, ToolCallingAgent, tool
from smolagents.memory import ActionStep

from overseer.integrations.smolagents import OverseerSupervisor
from overseer.models import ScriptedModel
from overseer.supervise import reply_template
from overseer.supervise.rules import RuleSettings

from .smol_scripted import ScriptedSmolModel, code, prompt_text

CALLS: list[str] = []
ANSWER = "The tower is 312 metres tall."


@tool
def fetch(url: str) -> str:
    """Fetch a page.

    Args:
        url: the address to fetch
    """
    CALLS.append(url)
    if "long" in url:
        return "<p>Menu | Shop | Login | Help</p>\n" * 150 + ANSWER
    n = int(url[-1]) if url[-1].isdigit() else 0  # pages of other lengths: not one page again
    return f"Page {url}: " + "plain text about towers and bridges. " * (16 + 4 * n)


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLS.clear()


def action_steps(agent: Any) -> list[ActionStep]:
    return [s for s in agent.memory.steps if isinstance(s, ActionStep)]


def tool_agent(replies: list[Any], max_steps: int = 5, **kw: Any) -> ToolCallingAgent:
    return ToolCallingAgent(
        tools=[fetch],
        model=ScriptedSmolModel(replies),
        max_steps=max_steps,
        verbosity_level=0,
        **kw,
    )


def test_loop_breaker_stops_a_repeat_before_the_tool_runs() -> None:
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(loop_limit=2, masking=False))
    agent = sup.attach(tool_agent([("fetch", {"url": "https://x/a"})] * 4 + ["done"], 4))
    agent.run("Find the tower's height.")
    assert CALLS == ["https://x/a", "https://x/a"]  # calls 3 and 4 never ran
    steps = action_steps(agent)
    assert "Not run again" in (steps[2].observations or "")
    assert "Not run again" in prompt_text(agent.model, 3)
    assert sup.stats["rules"] == {"loop_breaker": 2}
    # the two refusals in a row end the agent's tool use (at its step limit here anyway)
    assert [e.action for e in sup.log if e.context == "rule"] == ["loop_breaker"] * 2 + ["refusals"]


def test_loop_breaker_on_a_code_agent_repeating_the_same_code() -> None:
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(masking=False, loop_limit=2))
    src = 'print(fetch(url="https://x/a"))'
    model = ScriptedSmolModel([code(src)] * 3 + [code('final_answer("312")')])
    agent = sup.attach(CodeAgent(tools=[fetch], model=model, max_steps=5, verbosity_level=0))
    assert agent.run("Find the tower's height.") == "312"
    assert CALLS == ["https://x/a", "https://x/a"]
    assert "Not run again" in (action_steps(agent)[2].observations or "")
    assert sup.stats["rules"] == {"loop_breaker": 1}


def test_rules_purify_a_long_page_without_a_model() -> None:
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(purify_over=2000, purify_keep=600))
    agent = sup.attach(
        tool_agent([("fetch", {"url": "https://x/long"}), ("final_answer", {"answer": "312"})])
    )
    agent.run("How tall is the tower?")
    seen = action_steps(agent)[0].observations or ""
    assert ANSWER in seen and len(seen) < 1200 and "[overseer" in seen
    prompt = prompt_text(agent.model, 1)
    assert ANSWER in prompt and prompt.count("Menu | Shop") <= 20  # the page had 150
    assert sup.stats["rules"] == {"purification": 1}
    assert sup.stats["supervisor_tokens"] == 0


def test_masking_hides_older_outputs_in_the_agents_memory() -> None:
    urls = [f"https://x/p{i}" for i in range(4)]
    replies: list[Any] = [("fetch", {"url": u}) for u in urls] + [("final_answer", {"answer": "x"})]
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(mask_keep=2))
    agent = sup.attach(tool_agent(replies, 6))
    agent.run("Read the four pages.")
    obs = [s.observations or "" for s in action_steps(agent)[:4]]
    assert obs[0].startswith("[older output of fetch(") and obs[1].startswith("[older output")
    assert obs[2].startswith("Page https://x/p2") and obs[3].startswith("Page https://x/p3")
    last = prompt_text(agent.model, 4)
    assert "Page https://x/p0" not in last and "[older output of fetch(" in last
    assert sup.stats["rules"] == {"masking": 2}  # each older output counted once


def manager_with_helper(sup: OverseerSupervisor, helper_replies: list[Any]) -> CodeAgent:
    helper = ToolCallingAgent(
        tools=[fetch],
        model=ScriptedSmolModel(helper_replies),
        max_steps=4,
        verbosity_level=0,
        name="helper",
        description="Fetches pages.",
    )
    manager_model = ScriptedSmolModel(
        [code('r = helper(task="Fetch the tower pages.")\nprint(r)'), code('final_answer("312")')]
    )
    manager = CodeAgent(
        tools=[], model=manager_model, managed_agents=[helper], max_steps=3, verbosity_level=0
    )
    return sup.attach(manager)


def test_step_budget_is_inherited_by_a_managed_agent() -> None:
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(budget_steps=1, masking=False))
    replies: list[Any] = [("fetch", {"url": f"https://x/{c}"}) for c in "abc"]
    manager = manager_with_helper(sup, [*replies, ("final_answer", {"answer": "312"})])
    assert manager.run("How tall is the tower?") == "312"
    assert CALLS == ["https://x/a"]  # the helper's 2nd and 3rd tool steps are over budget
    helper = manager.managed_agents["helper"]
    assert "step budget is spent" in (action_steps(helper)[1].observations or "")
    assert sup.stats["rules"] == {"budget": 2}
    # the helper's run nested in the manager's: one run, both agents in one history
    assert sup.runs == 1 and {i.agent for i in sup.run.run.interactions} == {"agent", "helper"}


def test_token_budget_tells_the_agent_to_answer_and_refuses_more_tools() -> None:
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(budget_tokens=30, masking=False))
    replies: list[Any] = [("fetch", {"url": f"https://x/{c}"}) for c in "abc"]
    agent = sup.attach(tool_agent([*replies, ("final_answer", {"answer": "312"})], 5))
    assert agent.run("How tall is the tower?") == "312"
    obs = [s.observations or "" for s in action_steps(agent)]
    assert "token budget is spent" in obs[1]  # 15 tokens a step: spent at step 2
    assert CALLS == ["https://x/a", "https://x/b"]
    assert "Not run" in obs[2]
    assert sup.stats["rules"] == {"budget": 2}  # crossed once, one refused call


def test_token_budget_note_survives_the_purification_of_its_step() -> None:
    # the budget is spent at step 1, whose long page the rule tier purifies: the note was
    # appended before the purified text replaced the observation, and so was lost (CI, stop 56)
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(budget_tokens=10, masking=False))
    agent = sup.attach(
        tool_agent([("fetch", {"url": "https://x/long"}), ("final_answer", {"answer": "312"})], 3)
    )
    assert agent.run("How tall is the tower?") == "312"
    first = action_steps(agent)[0].observations or ""
    assert "observation replaced by purification" in first
    assert "token budget is spent" in first and ANSWER in first


def test_modes_are_chosen_from_python() -> None:
    assert OverseerSupervisor(mode="rules").settings is None  # the rule plug-ins, no LLM tier
    with pytest.raises(ValueError, match="expected a supervisor model"):
        OverseerSupervisor(mode="rules+llm")
    with pytest.raises(ValueError, match="expected one of: llm, rules, rules"):
        OverseerSupervisor(ScriptedModel([]), mode="learned-by-heart")
    llm = OverseerSupervisor(ScriptedModel([]))
    assert llm.settings is not None and llm.settings.rules is None
    assert llm.stats.get("rules") in (None, {})
    both = OverseerSupervisor(ScriptedModel([]), mode="rules+llm", filter_preset="gaia")
    assert both.settings is not None and both.settings.rules is not None


def test_rules_plus_llm_leaves_loops_to_the_rules() -> None:
    # any supervisor call would fail the test: the scripted model has no reply
    sup_model = ScriptedModel([])
    sup = OverseerSupervisor(sup_model, mode="rules+llm", rules=RuleSettings(masking=False))
    agent = sup.attach(tool_agent([("fetch", {"url": "https://x/a"})] * 5, 5))
    agent.run("Find the tower's height.")
    assert sup_model.calls == []
    # calls 3 and 4 are refused; two refusals in a row send the agent to its final answer
    assert sup.stats["rules"]["loop_breaker"] == 2 and sup.stats["escalations"] == 1
    assert sup.stats["fallbacks"] == 0


def test_a_managed_agents_error_is_reviewed_with_the_managers_task() -> None:
    sup_model = ScriptedModel(lambda msgs: reply_template("approve", "fine"))
    sup = OverseerSupervisor(sup_model, mode="rules+llm", rules=RuleSettings(masking=False))
    manager = manager_with_helper(sup, [("nosuch", {"q": "x"}), ("final_answer", {"answer": "1"})])
    manager.run("How tall is the Tinbel tower?")
    # the helper's failed call, then its report as the manager reads it
    assert [(e.agent, e.context) for e in sup.log] == [("helper", "error"), ("agent", "synthesis")]
    asked = "\n".join(m["content"] for m in sup_model.calls[0]["messages"])
    assert "How tall is the Tinbel tower?" in asked and "Fetch the tower pages." in asked


def test_a_streamed_run_is_one_run() -> None:
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(masking=False, loop_limit=2))
    agent = sup.attach(tool_agent([("fetch", {"url": "https://x/a"})] * 3, 3))
    for _ in range(2):
        list(agent.run("Find it.", stream=True))
        assert sup.runs == 1 or sup.stats["rules"] == {"loop_breaker": 1}
    assert sup.runs == 2 and sup.stats["rules"] == {"loop_breaker": 1}  # counts of run 2 only
    assert sup._depth == 0
