"""The Executor with a scripted model: inputs, decisions, verdicts, budgets, failures, tools."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from overseer.models import ModelError, ScriptedModel
from overseer.runtime import (
    AgentSpec,
    BaseSupervisor,
    Budget,
    Executor,
    Interaction,
    MemoryTool,
    PythonTool,
    Run,
    TeamSpec,
    Verdict,
    make_team,
    read_trace,
)
from overseer.runtime._tools import KeywordMemory
from overseer.runtime._trace import TRACE_VERSION


def name_of(messages: list) -> str:
    content = messages[1]["content"]
    return content.split("Your name: ")[1].split(".")[0] if "Your name: " in content else "?"


def say(text: str) -> dict:
    return {"thought": "t", "action": "answer", "answer": text}


def echo(messages: list) -> object:
    """Each agent says its name."""
    return say(f"from {name_of(messages)}")


def echo_model(**kw: Any) -> ScriptedModel:
    """Agents echo their names; the decision node (actor "decision") says DECIDED."""
    return ScriptedModel(echo, by_actor={"decision": lambda m: "DECIDED"}, **kw)


def prompts_of(model: ScriptedModel, agent: str) -> list[str]:
    return [c["messages"][1]["content"] for c in model.calls if c["actor"] == agent]


async def test_spatial_and_temporal_inputs(tmp_path: Path) -> None:
    model = echo_model()
    team = make_team("chain", 3, rounds=2)  # a1 -> a2 -> a3, temporal self edges
    res = await Executor(model, trace_dir=tmp_path).run(team, "Q?")
    assert res.answer == "from a3" and res.stop_reason == "done"
    a2 = prompts_of(model, "a2")
    assert "[a1] from a1" in a2[0] and "[a3]" not in a2[0]
    assert (
        "Your answer in the previous round:\nfrom a2" in a2[1] and "From the previous" not in a2[1]
    )
    assert "From" not in prompts_of(model, "a1")[0]


async def test_shared_thoughts_travel_with_the_answer(tmp_path: Path) -> None:
    def think(messages: list) -> object:
        return {"thought": f"because {name_of(messages)}", "action": "answer", "answer": "42"}

    for share in (False, True):
        model = ScriptedModel(think)
        team = make_team("chain", 2, rounds=1).sharing_thoughts(share)
        assert all(a.share_thought is share for a in team.agents)
        await Executor(model, trace_dir=tmp_path).run(team, "Q?")
        a2 = prompts_of(model, "a2")[0]
        assert "[a1] " + ("because a1\n42" if share else "42") in a2
        assert ("because a1" in a2) is share


async def test_decisions_llm_and_vote(tmp_path: Path) -> None:
    res = await Executor(echo_model(), trace_dir=tmp_path).run(make_team("complete", 3), "Q")
    assert res.answer == "DECIDED" and res.calls_by_actor["decision:decision"] == 1

    def votes(messages: list) -> object:
        return say({"a1": "X", "a2": "Y", "a3": "Y"}[name_of(messages)])

    team = make_team("debate", 3, rounds=2, decision="vote")
    res = await Executor(ScriptedModel(votes), trace_dir=tmp_path).run(team, "Q")
    assert res.answer == "Y"
    tie = make_team("debate", 2, rounds=2, decision="vote")
    res = await Executor(ScriptedModel(lambda m: say(name_of(m))), trace_dir=tmp_path).run(tie, "Q")
    assert res.answer == "a1"  # a tie goes to the first agent in order


async def test_ledger_and_trace(tmp_path: Path) -> None:
    res = await Executor(echo_model(), trace_dir=tmp_path).run(make_team("star", 3), "Q")
    assert set(res.usage_by_actor) == {"agent:a1", "agent:a2", "agent:a3"}
    assert all(u.prompt_tokens > 0 and u.completion_tokens > 0 for u in res.usage_by_actor.values())
    events = list(read_trace(res.trace_path))
    assert events[0]["event"] == "run_start" and events[-1]["event"] == "run_end"
    assert all(e["v"] == TRACE_VERSION == 2 and e["run"] == res.run_id for e in events)
    assert sum(e["event"] == "interaction" for e in events) == 3
    assert events[-1]["usage"]["input_tokens"] == res.total.prompt_tokens


async def test_a_rerun_with_the_same_run_id_gets_its_own_trace(tmp_path: Path) -> None:
    ex = Executor(echo_model(), trace_dir=tmp_path)
    first = await ex.run(make_team("star", 2), "Q", run_id="same")
    second = await ex.run(make_team("star", 2), "Q", run_id="same")
    assert first.trace_path == tmp_path / "same.jsonl" and second.trace_path != first.trace_path
    for res in (first, second):
        events = list(read_trace(res.trace_path))
        assert sum(e["event"] == "run_start" for e in events) == 1
        assert all(e["run"] == res.run_id for e in events)


@pytest.mark.parametrize(
    ("budget", "reason"),
    [(Budget(max_calls=2), "budget_steps"), (Budget(max_tokens=50), "budget_tokens")],
)
async def test_budgets_stop_with_a_typed_reason(
    tmp_path: Path, budget: Budget, reason: str
) -> None:
    model = echo_model()
    res = await Executor(model, trace_dir=tmp_path, budget=budget).run(make_team("chain", 4), "Q")
    assert res.stop_reason == reason and "budget exceeded" in (res.error or "")
    assert len(model.calls) <= 2
    assert [e["event"] for e in read_trace(res.trace_path)][-1] == "run_end"


async def test_unparsable_replies_are_reasked_then_a_failure(tmp_path: Path) -> None:
    model = ScriptedModel(lambda m: "I refuse JSON" if name_of(m) == "a2" else say("ok"))
    res = await Executor(model, trace_dir=tmp_path).run(make_team("chain", 3), "Q")
    (fail,) = res.failures
    assert (fail.agent, fail.reason) == ("a2", "unparsable") and "not JSON" in fail.detail
    assert len(prompts_of(model, "a2")) == 3  # one ask and two re-asks
    assert not [m for m in res.messages if m.sender == "a2"]  # no empty message posted
    assert res.stop_reason == "done" and res.answer == "ok"


async def test_model_error_is_a_recorded_failure(tmp_path: Path) -> None:
    def flaky(m: list) -> object:
        if name_of(m) == "a1":
            raise ModelError("server gone")
        return say("fine")

    res = await Executor(ScriptedModel(flaky), trace_dir=tmp_path).run(make_team("chain", 2), "Q")
    assert [(f.agent, f.reason) for f in res.failures] == [("a1", "model_error")]
    assert res.answer == "fine"


class Scripted(BaseSupervisor):
    """A supervisor whose verdict per interaction comes from a function; counts its hooks."""

    def __init__(self, name: str, decide, kinds=frozenset({"message", "tool", "memory"})) -> None:
        self.name, self.decide, self.kinds = name, decide, kinds
        self.seen: list[Interaction] = []
        self.round_ends = 0
        self.run_ends = 0

    async def on_interaction(self, i: Interaction, run: Run) -> Verdict:
        self.seen.append(i)
        return self.decide(i, run) or Verdict.approve(self.name)

    async def on_round_end(self, run: Run) -> Verdict | None:
        self.round_ends += 1
        return None

    async def on_run_end(self, run: Run, result) -> None:
        self.run_ends += 1


async def test_guide_and_replace_reach_the_next_agent(tmp_path: Path) -> None:
    def decide(i: Interaction, run: Run) -> Verdict | None:
        if i.agent == "a1":
            return Verdict.guide("double-check units", by="sup")
        if i.agent == "a2":
            return Verdict.replace("cleaned text", note="noise removed", by="sup")
        return None

    model, sup = echo_model(), Scripted("sup", decide)
    res = await Executor(model, trace_dir=tmp_path, supervisors=[sup]).run(
        make_team("chain", 3), "Q"
    )
    a3 = prompts_of(model, "a3")[0]
    assert "[a2] cleaned text\n\n[observation replaced by sup: noise removed]" in a3
    assert "[guidance from sup] double-check units" in prompts_of(model, "a2")[0]
    assert (sup.round_ends, sup.run_ends) == (1, 1)
    verdicts = [e for e in read_trace(res.trace_path) if e["event"] == "verdict"]
    assert [v["action"] for v in verdicts] == ["guide", "replace"]


async def test_verify_uses_the_verifier(tmp_path: Path) -> None:
    def decide(i: Interaction, run: Run) -> Verdict | None:
        return Verdict.verify("is 2+2=4?", by="sup") if i.agent == "a1" else None

    async def verifier(task: str, run: Run) -> str:
        return f"checked: {task} yes"

    model = echo_model()
    ex = Executor(
        model, trace_dir=tmp_path, supervisors=[Scripted("sup", decide)], verifier=verifier
    )
    await ex.run(make_team("chain", 2), "Q")
    assert "[verification requested by sup] checked: is 2+2=4? yes" in prompts_of(model, "a2")[0]
    # The default verifier is a booked model call of its own.
    model2 = ScriptedModel(echo, by_actor={"verifier": lambda m: "verified"})
    ex2 = Executor(model2, trace_dir=tmp_path, supervisors=[Scripted("sup", decide)])
    res = await ex2.run(make_team("chain", 2), "Q")
    assert res.calls_by_actor["verifier:verifier"] == 1


async def test_rollback_redoes_the_round_and_is_capped(tmp_path: Path) -> None:
    calls = {"n": 0}

    def once(i: Interaction, run: Run) -> Verdict | None:
        calls["n"] += 1
        return Verdict.rollback(by="mon", reason="uncertain") if calls["n"] == 2 else None

    model = echo_model()
    res = await Executor(model, trace_dir=tmp_path, supervisors=[Scripted("mon", once)]).run(
        make_team("chain", 3), "Q"
    )
    assert res.stop_reason == "done" and res.answer == "from a3"
    assert [m.sender for m in res.messages] == ["a1", "a2", "a3"]  # nothing of the first try
    assert len(prompts_of(model, "a1")) == 2
    always = Scripted("mon", lambda i, r: Verdict.rollback(by="mon", reason="again"))
    res = await Executor(
        echo_model(), trace_dir=tmp_path, supervisors=[always], max_rollbacks=2
    ).run(make_team("chain", 2), "Q")
    events = [e["event"] for e in read_trace(res.trace_path)]
    assert events.count("rollback") == 2 and "verdict_ignored" in events
    assert res.stop_reason == "done"


async def test_replace_agent_purges_and_resumes(tmp_path: Path) -> None:
    new = AgentSpec(name="a1", role="Replacement", instructions="BE CAREFUL NOW")

    def decide(i: Interaction, run: Run) -> Verdict | None:
        if (
            i.agent == "a1"
            and i.round == 1
            and "BE CAREFUL" not in run.team.agent("a1").instructions
        ):
            return Verdict.replace_agent(new, by="watch", reason="off track")
        return None

    model = echo_model()
    team = make_team("chain", 2, rounds=2)
    res = await Executor(model, trace_dir=tmp_path, supervisors=[Scripted("watch", decide)]).run(
        team, "Q"
    )
    assert "BE CAREFUL NOW" in prompts_of(model, "a1")[-1]
    # a1's round-0 message was purged; its new round-1 message remains.
    assert [(m.sender, m.round) for m in res.messages if m.sender == "a1"] == [("a1", 1)]
    assert "agent_replaced" in [e["event"] for e in read_trace(res.trace_path)]


async def test_chain_order_kinds_and_unknown_names(tmp_path: Path) -> None:
    first = Scripted("first", lambda i, r: Verdict.guide("from first", by="first"))
    second = Scripted("second", lambda i, r: Verdict.guide("from second", by="second"))
    tools_only = Scripted("tools", lambda i, r: None, kinds=frozenset({"tool"}))
    model = echo_model()
    await Executor(model, trace_dir=tmp_path, supervisors=[tools_only, first, second]).run(
        make_team("chain", 2), "Q"
    )
    assert (
        "from first" in prompts_of(model, "a2")[0]
        and "from second" not in prompts_of(model, "a2")[0]
    )
    assert second.seen == [] and tools_only.seen == []
    bad = TeamSpec(agents=(AgentSpec(name="x", tools=("web",)),))
    with pytest.raises(ValueError, match="agent x: tool 'web'"):
        await Executor(model, trace_dir=tmp_path).run(bad, "Q")


async def test_agents_without_edges_run_concurrently(tmp_path: Path) -> None:
    team = TeamSpec(agents=tuple(AgentSpec(name=f"a{i}") for i in range(4)), decision="last")
    for conc, low, high in ((4, 0.0, 0.125), (1, 0.2, 10.0)):
        ex = Executor(echo_model(latency_s=0.05), trace_dir=tmp_path, concurrency=conc)
        t0 = time.perf_counter()
        await ex.run(team, "Q")
        assert low <= time.perf_counter() - t0 < high


async def test_python_and_memory_tools_are_interactions(tmp_path: Path) -> None:
    steps = iter(
        [
            {"thought": "compute", "action": "python", "args": {"code": "print(17*23)"}},
            {"thought": "look up", "action": "memory", "args": {"query": "capital of France"}},
            say("391, Paris"),
        ]
    )
    model = ScriptedModel(lambda m: next(steps))
    memory = MemoryTool(KeywordMemory(["Berlin is in Germany.", "Paris is the capital of France."]))
    spec = TeamSpec(agents=(AgentSpec(name="a", tools=("python", "memory")),), decision="last")
    sup = Scripted("obs", lambda i, r: None)
    res = await Executor(
        model,
        trace_dir=tmp_path,
        tools={"python": PythonTool(), "memory": memory},
        supervisors=[sup],
    ).run(spec, "Q")
    kinds = [(i.kind, i.tool) for i in sup.seen]
    assert kinds == [("tool", "python"), ("memory", "memory"), ("message", None)]
    assert sup.seen[0].observation.strip() == "391" and sup.seen[0].error is None
    assert sup.seen[1].observation.startswith("[1] Paris is the capital")
    assert res.answer == "391, Paris"


async def test_no_answer_within_max_steps(tmp_path: Path) -> None:
    model = ScriptedModel(
        lambda m: {"thought": "t", "action": "python", "args": {"code": "print(1)"}}
    )
    spec = TeamSpec(agents=(AgentSpec(name="a", tools=("python",)),), decision="last")
    res = await Executor(
        model, trace_dir=tmp_path, tools={"python": PythonTool()}, max_steps=1
    ).run(spec, "Q")
    # one step that calls a tool: no answer (with more steps the last one may only answer, and
    # a script that never answers is then unparsable: tests/runtime/test_step_limit.py)
    assert [(f.agent, f.reason) for f in res.failures] == [("a", "no_answer")]


async def test_prompts_share_the_task_and_the_decision_reuses_the_head(tmp_path: Path) -> None:
    """Every prompt of a run starts with the same rules and task; an agent's own part (name,
    role, instructions) comes after it; the decision's prompt extends the last agent's head."""
    model = echo_model()
    team = make_team("complete", 3, rounds=1, pool="math")
    await Executor(model, trace_dir=tmp_path).run(team, "Q?")
    a1, a2, a3 = (prompts_of(model, a)[0] for a in ("a1", "a2", "a3"))
    decision = next(c["messages"][1]["content"] for c in model.calls if c["actor"] == "decision")
    head = a1.split("Your name: ")[0]
    assert head == "Task:\nQ?\n\n"
    assert all(p.startswith(head) for p in (a2, a3, decision))
    for agent, prompt in zip(team.agents, (a1, a2, a3), strict=True):
        own = prompt.split("Your name: ")[1]
        assert f"Your role: {agent.role}" in own and agent.instructions in own
    assert decision.startswith(a3.split("\n\nYour name: ")[0] + "\n[a3] from a3\n\n")
    own2 = a2.split(head)[1]
    assert own2.startswith("From teammates this round:\n[a1] from a1\n\nYour name: a2.")


async def test_a_team_list_heads_every_prompt_and_shrinks_the_own_part(tmp_path: Path) -> None:
    """With `roster`, every prompt (the decision's too) starts with the same team list and task;
    a tool-less agent's own part is its name and role, its instructions only in the list; an
    agent with tools keeps its instructions beside them."""
    model = echo_model()
    team = make_team("complete", 3, rounds=1, pool="math")
    team = team.with_agent(team.agents[2].model_copy(update={"tools": ("python",)}))
    ex = Executor(model, trace_dir=tmp_path, roster=True, tools={"python": PythonTool()})
    await ex.run(team, "Q?")
    calls = [c["messages"][1]["content"] for c in model.calls]
    roster = "Team:\n" + "\n".join(f"- {a.name}, {a.role}: {a.instructions}" for a in team.agents)
    assert all(c.startswith(roster + "\n\nTask:\nQ?\n\n") for c in calls)
    a1, a2 = (prompts_of(model, a)[0] for a in ("a1", "a2"))
    assert a1.endswith("\n\nYou are a1, " + team.agents[0].role + ".")
    assert a2.endswith("[a1] from ?\n\nYou are a2, " + team.agents[1].role + ".")
    a3 = prompts_of(model, "a3")[0]
    assert a3.split("Your name: a3.")[1].startswith(
        f"\nYour role: {team.agents[2].role}\n{team.agents[2].instructions}\nTools you may call:"
    )
    without = echo_model()
    await Executor(without, trace_dir=tmp_path, tools={"python": PythonTool()}).run(team, "Q?")
    assert not any("Team:" in c["messages"][1]["content"] for c in without.calls)


async def test_a_lone_agent_is_told_its_role(tmp_path: Path) -> None:
    from overseer.runtime._agent import AgentContext, action_schema, build_messages

    spec = AgentSpec(name="verifier", role="Verifier", instructions="Check it.")
    own = build_messages(spec, AgentContext("Q?", 0, (), ()), [])[1]["content"]
    assert own == "Task:\nQ?\n\nYour name: verifier.\nYour role: Verifier\nCheck it."
    assert action_schema([])["properties"]["answer"]["minLength"] == 1  # grammar: no empty answer
