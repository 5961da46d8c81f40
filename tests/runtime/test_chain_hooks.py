"""The supervisor chain calls only the hooks a plug-in wrote itself (a hook left as
BaseSupervisor wrote it approves, refuses nothing, shows everything): the same run, fewer
calls. An Executor checks its chain once and builds it again when its plug-ins change."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import orjson
import pytest

from overseer.models import ScriptedModel
from overseer.runtime import BaseSupervisor, Executor, Interaction, Run, Verdict, make_team
from overseer.runtime._bus import Bus, SupervisorChain, UnsupportedVerdictError
from overseer.runtime._interaction import ToolRecord
from overseer.runtime._run import open_run
from overseer.runtime.verdicts import ALL_ACTIONS


def step(messages: list) -> object:
    last = messages[-1]["content"]
    return (
        "4"
        if "final decision-maker" in last
        else {"thought": "t", "action": "answer", "answer": "4"}
    )


class Counter(BaseSupervisor):
    """Approves every step and round end, counting them."""

    def __init__(self, name: str = "counter") -> None:
        self.name = name
        self.steps = 0
        self.round_ends = 0

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        self.steps += 1
        return self._approval()

    async def on_round_end(self, run: Run) -> Verdict | None:
        self.round_ends += 1
        return None


class ViewOnly(BaseSupervisor):
    """Only edits the context: its other hooks are BaseSupervisor's."""

    name = "view"

    def view_observations(
        self, agent: str, records: Sequence[ToolRecord], run: Run
    ) -> list[str] | None:
        return None


class Protocolish:
    """A plug-in that follows the protocol without the base class: every hook is its own."""

    name = "proto"
    kinds = frozenset({"message"})
    actions = frozenset({"approve"})

    def __init__(self) -> None:
        self.steps = 0

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        self.steps += 1
        return Verdict.approve(self.name)

    async def before_tool(self, interaction: Interaction, run: Run) -> Verdict | None:
        return None

    def view_observations(self, agent: str, records: Sequence[ToolRecord], run: Run) -> None:
        return None

    async def on_round_end(self, run: Run) -> Verdict | None:
        return None

    async def on_run_end(self, run: Run, result: object) -> None:
        return None


def test_the_chain_keeps_per_hook_the_plugins_that_wrote_it() -> None:
    counter, view, proto, plain = Counter(), ViewOnly(), Protocolish(), BaseSupervisor()
    patched = BaseSupervisor()
    patched.name = "patched"

    async def refuse(i: Interaction, run: Run) -> Verdict:
        return Verdict.guide("no", by="patched")

    patched.on_interaction = refuse  # type: ignore[method-assign]  # an instance's own hook
    chain = SupervisorChain([counter, view, proto, plain, patched])
    assert chain.asks == [counter, proto, patched]
    assert chain.viewers == [view, proto]
    assert chain.round_enders == [counter, proto]
    assert chain.run_enders == [proto] and chain.tool_checkers == [proto]
    assert chain.supervisors == [counter, view, proto, plain, patched]


def _events(path: Path) -> list[tuple[str, object]]:
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    return [(e["event"], e.get("agent", e.get("round"))) for e in lines if e["event"] != "run_end"]


async def test_skipped_default_hooks_leave_the_run_as_it_was(tmp_path: Path) -> None:
    counter, proto = Counter(), Protocolish()
    sups = [ViewOnly(), counter, BaseSupervisor(), proto]
    res = await Executor(ScriptedModel(step), trace_dir=tmp_path / "a", supervisors=sups).run(
        make_team("complete", 3, rounds=2), "2+2?"
    )
    bare = await Executor(ScriptedModel(step), trace_dir=tmp_path / "b").run(
        make_team("complete", 3, rounds=2), "2+2?"
    )
    assert (counter.steps, counter.round_ends, proto.steps) == (6, 2, 6)
    assert res.answer == bare.answer == "4"
    assert res.calls_by_actor == bare.calls_by_actor
    assert _events(res.trace_path) == _events(bare.trace_path)


async def test_an_executor_builds_its_chain_again_when_its_plugins_change(tmp_path: Path) -> None:
    first, second = Counter("first"), Counter("second")
    ex = Executor(ScriptedModel(step), trace_dir=tmp_path, supervisors=[first])
    chain = ex.chain()
    await ex.run(make_team("chain", 2), "2+2?")
    assert ex.chain() is chain and first.steps == 2
    ex.supervisors.append(second)
    await ex.run(make_team("chain", 2), "2+2?")
    assert ex.chain() is not chain and (first.steps, second.steps) == (4, 2)
    ex.supervisors.append(Counter("first"))
    with pytest.raises(ValueError, match="names must be unique"):
        await ex.run(make_team("chain", 2), "2+2?")
    with pytest.raises(ValueError, match="names must be unique"):
        Executor(ScriptedModel(step), supervisors=[first, Counter("first")])


class _Host:
    """A host that honours only what it is given."""

    label = "test host"

    def __init__(self, honours: frozenset[str]) -> None:
        self.honours = honours

    def roll_back(self, v: object) -> None: ...

    def replace_agent(self, v: object) -> None: ...

    def replace_team(self, v: object) -> None: ...


def test_a_shared_chain_is_checked_against_each_host(tmp_path: Path) -> None:
    class Replacer(BaseSupervisor):
        name = "replacer"
        actions = frozenset({"replace_agent"})

    chain = SupervisorChain([Replacer()])
    run = open_run("q", make_team("chain", 1), ScriptedModel(step), trace_dir=tmp_path)
    Bus(run, chain, host=_Host(ALL_ACTIONS))
    Bus(run, chain, host=_Host(ALL_ACTIONS))  # checked once for this set of actions
    with pytest.raises(UnsupportedVerdictError, match=r"replacer: may return \['replace_agent'\]"):
        Bus(run, chain, host=_Host(frozenset({"guide"})))
    run.trace.close()
