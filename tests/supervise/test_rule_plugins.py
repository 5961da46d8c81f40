"""The rule tier as five bus plug-ins (issue 49, item 2): each keeps its own state per run
(one chain serves concurrent runs), gives its own verdict and note, and reports its own
firings; a host composes them with the LLM tier and a user's plug-ins by order alone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from overseer.models import ScriptedModel
from overseer.runtime import Executor, read_trace
from overseer.supervise.purify import strip_markup
from overseer.supervise.rules import RuleSettings, fired, rule_plugins

from .test_rule_tier import PAGE, agent_then_answer
from .test_supervisor import FakeTool, solo


async def test_one_chain_serves_concurrent_runs_each_with_its_own_state(tmp_path: Path) -> None:
    chain = rule_plugins(RuleSettings(loop_limit=1, purify_keep=600))

    async def one(k: int):  # type: ignore[no-untyped-def]
        reply, seen = agent_then_answer([{"q": "tower"}] * 2)
        tool = FakeTool([(PAGE, None)])
        res = await Executor(
            ScriptedModel(reply), supervisors=chain, tools={"lookup": tool}, trace_dir=tmp_path
        ).run(solo(["lookup"]), f"How tall is the Eiffel Tower? (run {k})")
        return res, tool, seen

    got = await asyncio.gather(*(one(k) for k in range(4)))
    for res, tool, seen in got:
        assert tool.calls == 1  # each run's own first call ran, its repeat was refused
        assert fired(res.plugin_stats) == {"purification": 1, "loop_breaker": 1}
        assert "330 metres tall" in seen[1] and "Not run again" in seen[2]


async def test_each_rule_gives_its_own_verdict_and_note(tmp_path: Path) -> None:
    reply, _ = agent_then_answer([{"q": "tower"}] * 2)
    res = await Executor(
        ScriptedModel(reply),
        supervisors=rule_plugins(RuleSettings(loop_limit=1, purify_keep=600)),
        tools={"lookup": FakeTool([(PAGE, None)])},
        trace_dir=tmp_path,
    ).run(solo(["lookup"]), "How tall is the Eiffel Tower?")
    events = list(read_trace(res.trace_path))
    verdicts = [(e["by"], e["action"], e["note"][:24]) for e in events if e["event"] == "verdict"]
    assert verdicts == [
        ("purification", "replace", "purified extractively (r"),
        ("loop_breaker", "replace", "loop_breaker"),
    ]
    rules = [(e["by"], e["rule"]) for e in events if e["event"] == "rule"]
    assert rules == [("purification", "purification"), ("loop_breaker", "loop_breaker")]
    assert res.plugin_stats["purification"] == {"rules": {"purification": 1}}


async def test_markup_the_parser_rejects_is_left_as_it_is_not_a_crash(tmp_path: Path) -> None:
    """A page the HTML parser refuses (a table inside a table's caption) is judged as text."""
    page = (
        "<html><body><table><caption><table><tr><td>x</td></tr></table></caption></table>"
        + "<p>w w</p>" * 600
        + "</body></html>"
    )
    with pytest.raises(ValueError):
        strip_markup(page)  # what purification calls first
    reply, _seen = agent_then_answer([{"q": "tower"}])
    res = await Executor(
        ScriptedModel(reply),
        supervisors=rule_plugins(),
        tools={"lookup": FakeTool([(page, None)])},
        trace_dir=tmp_path,
    ).run(solo(["lookup"]), "How tall is the tower?")
    assert res.stop_reason == "done" and res.answer == "330"
    assert fired(res.plugin_stats) == {"purification": 1}  # cut as text, over purify_over
