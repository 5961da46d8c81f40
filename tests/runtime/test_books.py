"""Every model call is in the books: a recorder around the model, the run's ledger (the result's
usage by actor), the trace's model_call events and the result agree, for each plug-in."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from overseer.adapt import (
    Distiller,
    ExperiencePool,
    MASFly,
    MASFlyConfig,
    Repository,
    Watcher,
)
from overseer.adapt.distill import GENERALISE_PROMPT, REFLECT_PROMPT
from overseer.models import Completion, Model, Request, ScriptedModel, Usage
from overseer.runtime import AgentSpec, Executor, RunResult, TeamSpec, ToolResult, read_trace
from overseer.supervise import FilterConfig, SupervisorAgent, SupervisorSettings, reply_template
from overseer.tasks import Task, ascore

from ..adapt.conftest import TableEmbedder, answer, router, sop


class Recorder(Model):
    """Counts every call that reaches the model and the tokens it reports."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0
        self.usage = Usage()

    def _seen(self, c: Completion) -> Completion:
        self.calls += 1
        self.usage += c.usage
        return c

    def _complete(self, request: Request) -> Completion:
        return self._seen(self.inner._complete(request))

    async def _acomplete(self, request: Request) -> Completion:
        return self._seen(await self.inner._acomplete(request))


def traced_calls(path: str | Path) -> list[dict[str, Any]]:
    return [e for e in read_trace(path) if e["event"] == "model_call"]


def traced_usage(calls: list[dict[str, Any]]) -> Usage:
    return sum(
        (Usage(e["gen_ai.usage.input_tokens"], e["gen_ai.usage.output_tokens"]) for e in calls),
        Usage(),
    )


def assert_books_agree(rec: Recorder, res: RunResult) -> Counter[str]:
    """Recorder == ledger == trace == result; returns the calls per `kind:actor`."""
    calls = traced_calls(res.trace_path)
    by_key = Counter(f"{e['overseer.actor.kind']}:{e['gen_ai.agent.name']}" for e in calls)
    assert rec.calls == len(calls) == sum(res.calls_by_actor.values())
    assert dict(by_key) == res.calls_by_actor
    assert rec.usage == res.total == traced_usage(calls)
    assert sum(res.usage_by_actor.values(), Usage()) == res.total
    return by_key


class LoopTool:
    name = "lookup"
    kind = "tool"
    description = "look something up"
    parameters: Mapping[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        return ToolResult("x")


async def test_supervisor_agent_calls_are_in_the_books(tmp_path: Path) -> None:
    asked = []

    def supervisor(messages: list) -> object:
        asked.append(1)
        return reply_template("provide_guidance", "stuck", "try another query")

    def agent(messages: list) -> object:
        return {"thought": "again", "action": "lookup", "args": {"q": "same"}}

    rec = Recorder(ScriptedModel(agent, by_actor={"supervisor": supervisor}))
    settings = SupervisorSettings(filter=FilterConfig(tau_loop=2, tau_step=100))
    team = TeamSpec(agents=[AgentSpec(name="a", tools=["lookup"])], decision="last")
    ex = Executor(
        rec,
        supervisors=[SupervisorAgent(settings=settings)],
        tools={"lookup": LoopTool()},
        trace_dir=tmp_path,
        max_steps=5,
    )
    res = await ex.run(team, "Q")
    by_key = assert_books_agree(rec, res)
    assert by_key["supervisor:supervisor"] == len(asked) == 2
    # four tool steps, then the last step (tools closed: answer only) asked 1 + 2 re-asks,
    # since this script never answers
    assert by_key["agent:a"] == 7


async def test_watcher_calls_are_in_the_books(tmp_path: Path) -> None:
    m = router(agent=lambda _: answer("fine"), watch=lambda _: {"decision": "ok"})
    rec = Recorder(m)
    team = TeamSpec(
        agents=[AgentSpec(name="a1"), AgentSpec(name="a2")],
        spatial_edges=[("a1", "a2")],
        decision="last",
    )
    ex = Executor(rec, supervisors=[Watcher(sop("a1", "a2"), every=1)], trace_dir=tmp_path)
    res = await ex.run(team, "task")
    by_key = assert_books_agree(rec, res)
    reviews = [e for e in read_trace(res.trace_path) if e["event"] == "watcher_review"]
    assert by_key["watcher:watcher"] == len(reviews) == 2


NEED = {"objective": "add", "capabilities": [], "tools": [], "roles": []}


def _fly(tmp_path: Path, model: Model, **cfg: Any) -> MASFly:
    emb = TableEmbedder({})
    db = tmp_path / "adapt.sqlite"
    return MASFly(
        model,
        Repository(db, emb),
        ExperiencePool(db, emb),
        config=MASFlyConfig(**cfg),
        trace_dir=tmp_path / "runs",
    )


async def test_masfly_planning_and_watcher_calls_are_in_the_run_books(tmp_path: Path) -> None:
    m = router(
        need=lambda _: NEED,
        op=lambda _: sop("Solver", "Checker").model_dump(),
        agent=lambda _: answer("The answer is 5"),
        watch=lambda _: {"decision": "ok"},
    )
    rec = Recorder(m)
    out = await _fly(tmp_path, rec, every=1).solve("What is 2+3?")
    assert out.answer == "The answer is 5" and out.plan.inst.source == "llm"
    by_key = assert_books_agree(rec, out.result)
    assert by_key["planner:planner"] == 2  # need analysis + OP instantiation
    assert by_key["watcher:watcher"] == len(out.reviews) == 2
    assert out.usage_by_actor == out.result.usage_by_actor  # nothing added by hand
    events = list(read_trace(out.result.trace_path))
    built = next(e for e in events if e["event"] == "team")
    assert [a["name"] for a in built["team"]["agents"]] == ["Solver", "Checker"]
    first_plan = next(i for i, e in enumerate(events) if e["event"] == "model_call")
    assert events.index(built) > first_plan  # planned inside the run, before the team ran


async def test_distillation_books_its_learning_calls_as_trainer(tmp_path: Path) -> None:
    revised = sop("Solver", "Checker").model_dump()

    def other(messages: list) -> object:
        system = messages[0]["content"]
        if system == REFLECT_PROMPT:
            return {
                "failure_cause": "added wrongly",
                "lessons": [{"agent": "Solver", "attribution": "said 6", "strategy": "recount"}],
            }
        assert system == GENERALISE_PROMPT or system.startswith("Revise")
        return revised

    m = router(
        need=lambda _: NEED,
        op=lambda _: sop("Solver").model_dump(),
        agent=lambda _: answer("The answer is 6"),
        other=other,
        by_actor={"Checker": lambda _: answer("The answer is 5")},
    )
    rec = Recorder(m)
    task = Task(suite="toy", id="toy/1", prompt="What is 2+3?", answer="5", kind="numeric")
    fly = _fly(tmp_path, rec, watcher=False)
    d = Distiller(fly, train_ids={"toy/1"}, max_tries=2)
    got = await d.distill(task, task.prompt, evaluate=ascore)
    assert [a.correct for a in got.attempts] == [False, True]
    runs = sorted((tmp_path / "runs").glob("distill-*-s0.jsonl"))
    assert len(runs) == 2
    run_calls = [traced_calls(p) for p in runs]
    assert Counter(e["overseer.actor.kind"] for e in run_calls[0])["planner"] == 2
    for a in got.attempts:
        assert a.trainer_trace is not None
        calls = traced_calls(a.trainer_trace)
        assert calls and {e["overseer.actor.kind"] for e in calls} == {"trainer"}
        assert traced_usage(calls) == a.trainer_usage
    # reflect + revise after the failure, generalise after the success
    assert [len(traced_calls(a.trainer_trace or "")) for a in got.attempts] == [2, 1]
    total_calls = sum(len(c) for c in run_calls) + 3
    assert rec.calls == total_calls and rec.usage == got.usage


async def test_all_four_together_keep_one_set_of_books(tmp_path: Path) -> None:
    """MASFly plans the team inside the run, AgentPrune prunes it at a round's end, the
    SupervisorAgent purifies a long page, the monitor reads every answer's logprobs and the
    Watcher reviews: every call of all of them is in one ledger, one trace, one result."""
    from overseer.adapt.sop import sop_to_team
    from overseer.monitor import UncertaintyMonitor
    from overseer.prune import DialoguePruner, TrainConfig

    from ..runtime.test_one_bus import _entropy_monitor

    op = sop("Solver", "Checker", "Critic", tools={"Solver": ["lookup"]}, rounds=2)

    def solver(messages: list) -> object:
        if "Observation from lookup" not in messages[-1]["content"]:
            return {"thought": "t", "action": "lookup", "args": {"q": "x"}}
        return answer("The answer is 5")

    rec = Recorder(
        router(
            need=lambda _: NEED,
            op=lambda _: op.model_dump(),
            agent=lambda _: answer("The answer is 5"),
            watch=lambda _: {"decision": "ok"},
            other=lambda _: reply_template("approve", "the page is fine"),
            by_actor={"Solver": solver, "decision": lambda _: "The answer is 5"},
        )
    )
    fly = _fly(tmp_path, rec)
    tools = {"lookup": LongTool()}
    base = sop_to_team(op, tools=sorted(tools))

    async def utility(run: Any) -> float:
        return 1.0

    pruner = DialoguePruner(base, utility, train_rounds=1, ratio=0.5, cfg=TrainConfig(seed=1))
    watcher = Watcher(every=1)
    monitor = UncertaintyMonitor(
        {"accuser": _entropy_monitor("accuser", 0.01)}, fallback_role="accuser"
    )
    supervisor = SupervisorAgent(settings=SupervisorSettings(filter=FilterConfig(tau_len=100)))

    async def planned(run: Any) -> TeamSpec:
        plan = await fly.plan("What is 2+3?", model=run.metered("planner", "planner"), tools=tools)
        watcher.watch(run, plan.inst.op)
        assert plan.inst.team == base  # the team the pruner was given
        return plan.inst.team

    ex = Executor(
        rec,
        supervisors=[pruner, supervisor, monitor, watcher],
        tools=tools,
        trace_dir=tmp_path,
        top_logprobs=10,
    )
    res = await ex.run(planned, "What is 2+3?")
    assert res.stop_reason == "done", res.error
    by_key = assert_books_agree(rec, res)
    kinds = {k.split(":")[0] for k in by_key}
    assert {"planner", "agent", "supervisor", "watcher"} <= kinds
    events = [e["event"] for e in read_trace(res.trace_path)]
    assert "team_replaced" in events and "agentprune_update" in events
    assert events.count("monitor_features") == len(monitor.rows) > 0


class LongTool(LoopTool):
    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        return ToolResult("The page. " * 40)
