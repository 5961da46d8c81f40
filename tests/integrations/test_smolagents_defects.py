"""The smolagents callback's defects of issue 18, each on smolagents' own agents with a
scripted smolagents model (the small models cannot drive these paths reliably)."""

from __future__ import annotations

from typing import Any

import pytest
from smolagents import ToolCallingAgent, tool
from smolagents.memory import ActionStep
from smolagents.utils import AgentMaxStepsError

from overseer.integrations.smolagents import OverseerSupervisor
from overseer.models import ScriptedModel
from overseer.supervise import FilterConfig, SupervisorSettings, reply_template
from overseer.supervise.rules import RuleSettings

from .smol_scripted import ScriptedSmolModel, prompt_text

LONG_PAGE = "<div class='ad'>buy now</div> " * 150 + "The tower is 312 metres tall."
SHORT = "The tower is 312 metres tall."
CALLS: list[str] = []


@tool
def fetch(url: str) -> str:
    """Fetch a page.

    Args:
        url: the address to fetch
    """
    CALLS.append(url)
    return LONG_PAGE if "tower" in url else "short page"


@tool
def lookup(q: str) -> str:
    """A lookup service that is down.

    Args:
        q: the query
    """
    raise ConnectionError("lookup service unavailable")


def action_steps(agent: Any) -> list[ActionStep]:
    return [s for s in agent.memory.steps if isinstance(s, ActionStep)]


def purifier() -> ScriptedModel:
    return ScriptedModel(lambda msgs: reply_template("correct_observation", "noise", SHORT))


def two_runs(sup: OverseerSupervisor, agent: ToolCallingAgent) -> None:
    agent.run("How tall is the tower?")
    agent.run("And again: how tall is the tower?", reset=False)


def agent_with(model: ScriptedSmolModel, **kw: Any) -> ToolCallingAgent:
    return ToolCallingAgent(
        tools=[fetch, lookup],
        model=model,
        max_steps=kw.pop("max_steps", 4),
        verbosity_level=0,
        **kw,
    )


TOWER = [("fetch", {"url": "https://x/tower"}), ("final_answer", {"answer": "312"})]


@pytest.mark.parametrize("how", ["constructor", "attach", "both"])
def test_supervisor_tokens_are_booked_once_across_runs(how: str) -> None:
    sup = OverseerSupervisor(purifier())
    model = ScriptedSmolModel(TOWER + TOWER)
    agent = agent_with(model, step_callbacks=[sup] if how != "attach" else None)
    if how != "constructor":
        sup.attach(agent)
    two_runs(sup, agent)
    steps = action_steps(agent)
    true_in = sum(s.token_usage.input_tokens for s in steps if s.token_usage)
    true_out = sum(s.token_usage.output_tokens for s in steps if s.token_usage)
    shown = agent.monitor.get_total_token_counts()
    assert (shown.input_tokens, shown.output_tokens) == (true_in, true_out)
    # each run's one long page cost one supervisor call: registered twice, still reviewed once
    fetched = [s for s in steps if s.tool_calls and s.tool_calls[0].name == "fetch"]
    # the corrected page, with the bus's note (reviewed once: one note, no second one)
    shown_text = [s.observations or "" for s in fetched]
    assert len(fetched) == 2 and all(t.startswith(SHORT) for t in shown_text)
    assert all(t.count("[observation replaced by supervisor:") == 1 for t in shown_text)
    assert len(sup.guard.llm.core(sup.run.run).stats.actions) == 1 and sup.stats["actions"] == {
        "correct_observation": 1
    }
    agent_only = 10 * len(model.seen)
    assert true_in == agent_only + 2 * sup.usage.prompt_tokens  # two runs, same review each


def test_failed_calls_are_seen_as_the_action_they_tried() -> None:
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(loop_limit=2))
    model = ScriptedSmolModel([("nosuch_tool", {"q": "tower"})] * 6)
    agent = agent_with(model, max_steps=6)
    sup.attach(agent)
    agent.run("How tall is the tower?")
    seen = sup.run.run.interactions  # the steps on the run's bus, as every plug-in saw them
    assert [(s.tool, s.input) for s in seen[:2]] == [("nosuch_tool", '{"q": "tower"}')] * 2
    # the third identical failing call is not run again: the agent reads the loop note
    steps = action_steps(agent)
    assert steps[2].error is None and "Not run again" in prompt_text(model, 3)
    assert sup.stats["rules"]["loop_breaker"] == 2  # calls 3 and 4, then the final answer
    assert any(e.context == "rule" and e.action == "loop_breaker" for e in sup.log)


def test_unparsable_replies_are_counted_by_the_loop_breaker() -> None:
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(loop_limit=2))
    model = ScriptedSmolModel(["I think the answer is in the page."] * 4)
    agent = agent_with(model, max_steps=4)
    sup.attach(agent)
    agent.run("How tall is the tower?")
    steps = action_steps(agent)[:4]
    assert all(s.error is not None for s in steps)
    assert sup.run.run.interactions[0].tool == "unparsed_reply"
    # the note (steps 3 and 4 carry the same one: the earlier copy is masked as a repeat)
    assert "could not be run as a tool call" in (steps[3].observations or "")
    assert sup.stats["rules"]["loop_breaker"] == 2
    assert "could not be run as a tool call" in prompt_text(model, 3)


def test_the_step_that_ends_the_run_at_max_steps_is_not_reviewed() -> None:
    asked: list[str] = []
    sup_model = ScriptedModel(
        lambda msgs: reply_template("run_verification", "the tool failed", "Is it 312 m?")
    )
    sup = OverseerSupervisor(
        sup_model,
        SupervisorSettings(max_verifications=5),
        verifier=lambda q: asked.append(q) or "ok",
    )
    model = ScriptedSmolModel(
        [("lookup", {"q": "a"}), ("lookup", {"q": "b"}), ("lookup", {"q": "c"})]
    )
    agent = agent_with(model, max_steps=2)
    sup.attach(agent)
    agent.run("How tall is the tower?")
    last = action_steps(agent)[-1]
    assert isinstance(last.error, AgentMaxStepsError)
    assert [e.step for e in sup.log] == [1, 2]  # not step 3, the max-steps step
    assert len(sup_model.calls) == 2 and len(asked) == 2
    assert sup.stats["steps"] == 2


def offered(sup_model: ScriptedModel) -> list[str]:
    schema = sup_model.calls[0]["schema"]
    return list(schema["properties"]["action"]["enum"])


def test_verification_is_not_offered_without_a_verifier() -> None:
    sup_model = ScriptedModel([reply_template("approve", "fine")])
    sup = OverseerSupervisor(sup_model)
    agent = agent_with(
        ScriptedSmolModel([("lookup", {"q": "a"}), ("final_answer", {"answer": "x"})])
    )
    sup.attach(agent)
    agent.run("How tall is the tower?")
    assert [e.context for e in sup.log] == ["error"]
    assert "run_verification" not in offered(sup_model)
    with_verifier = ScriptedModel([reply_template("approve", "fine")])
    sup2 = OverseerSupervisor(with_verifier, verifier=lambda q: "ok")
    agent2 = agent_with(
        ScriptedSmolModel([("lookup", {"q": "a"}), ("final_answer", {"answer": "x"})])
    )
    sup2.attach(agent2)
    agent2.run("How tall is the tower?")
    assert "run_verification" in offered(with_verifier)


def test_an_empty_observation_is_never_corrected() -> None:
    # the supervisor insists on writing an observation the tool never returned
    sup_model = ScriptedModel(
        lambda msgs: reply_template("correct_observation", "fix", "The tower is 312 metres tall.")
    )
    sup = OverseerSupervisor(sup_model)
    agent = agent_with(
        ScriptedSmolModel([("lookup", {"q": "a"}), ("final_answer", {"answer": "x"})])
    )
    sup.attach(agent)
    agent.run("How tall is the tower?")
    assert "correct_observation" not in offered(sup_model)
    step = action_steps(agent)[0]
    assert step.error is not None and not (step.observations or "").strip()
    assert sup.stats["actions"].get("correct_observation", 0) == 0


ANSWER = "Tinbel Observatory: the main telescope has an aperture of 240 cm."
PAGE = (
    "<li class='nav'>Home | News | Shop | Login</li>\n" * 100
    + ANSWER
    + "\n"
    + "<footer>Copyright, terms, privacy</footer>\n" * 60
)
INSTRUCTIONS = (
    "Rewrite the observation to remove noise. Keep the structure, the links and the numbers. "
    "Remove navigation menus and advertisements. Output only the rewritten observation."
)


def test_a_purified_page_that_loses_the_answer_is_refused() -> None:
    assert len(PAGE) > 7000
    sup_model = ScriptedModel([reply_template("correct_observation", "noise", INSTRUCTIONS)])
    sup = OverseerSupervisor(sup_model)
    model = ScriptedSmolModel(
        [("fetch", {"url": "https://wiki/tinbel"}), ("final_answer", {"answer": "240 cm"})]
    )
    agent = agent_with(model)
    sup.attach(agent)

    @tool
    def fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: the address to fetch
        """
        return PAGE

    agent.tools["fetch"] = fetch
    agent.run("What is the aperture of the Tinbel telescope?")
    seen = action_steps(agent)[0].observations or ""
    assert INSTRUCTIONS not in seen
    assert "240 cm" in seen and len(seen) < len(PAGE)
    assert sup.stats["rejected"] == {"excessive": 1}
    assert "240 cm" in prompt_text(model, 1)


def test_history_caps_and_usage_are_per_run() -> None:
    sup_model = ScriptedModel(
        lambda msgs: reply_template("provide_guidance", "loop", "Answer now.")
    )
    settings = SupervisorSettings(filter=FilterConfig(tau_loop=2, tau_step=100), max_guidance=1)
    for how in ("attach", "constructor"):
        sup = OverseerSupervisor(sup_model, settings)
        model = ScriptedSmolModel([("fetch", {"url": "https://x/a"})] * 8)
        agent = agent_with(
            model, max_steps=3, step_callbacks=[sup] if how == "constructor" else None
        )
        if how == "attach":
            sup.attach(agent)
        per_run = []
        for _ in range(2):
            agent.run("Find it.")
            guided = [e for e in sup.log if e.action == "provide_guidance"]
            per_run.append((len(guided), sup.stats["steps"], sup.usage.prompt_tokens > 0))
        # the guidance cap and the history start afresh: run 2 is guided like run 1
        assert per_run[0] == per_run[1] == (1, 3, True), (how, per_run)
        assert sup.runs == 2
