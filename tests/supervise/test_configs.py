"""Supervision modes as one plug-in factory, and the workload configurations of each mode."""

from __future__ import annotations

import pytest

from overseer.experiments.supervise import supervise_configs, supervise_plugin
from overseer.models import ScriptedModel
from overseer.supervise import SupervisorAgent
from overseer.supervise.modes import MODES
from overseer.supervise.rules import RuleSettings

RULES = ["purification", "grounding", "loop_breaker", "masking"]


def agent_of(factory, model=None) -> SupervisorAgent:  # type: ignore[no-untyped-def]
    *_, sup = factory(model or ScriptedModel([]))
    assert isinstance(sup, SupervisorAgent)
    return sup


def test_modes_set_rules_and_llm() -> None:
    llm = supervise_plugin("llm")(ScriptedModel([]))
    assert [p.name for p in llm] == ["supervisor"] and agent_of(
        supervise_plugin("llm")
    ).settings.rules is None
    rules = supervise_plugin("rules")(ScriptedModel([]))
    assert [p.name for p in rules] == RULES and not any(
        isinstance(p, SupervisorAgent) for p in rules
    )
    both = supervise_plugin("rules+llm", rules=RuleSettings(loop_limit=4))(ScriptedModel([]))
    assert [p.name for p in both] == [*RULES, "supervisor"]
    settings = agent_of(supervise_plugin("rules+llm", rules=RuleSettings(loop_limit=4))).settings
    assert settings.rules is not None and settings.rules.loop_limit == 4
    assert set(MODES) >= {"llm", "rules", "rules+llm"}


def test_plugin_options_reach_the_agent() -> None:
    big = ScriptedModel([], name="big")
    sup = agent_of(
        supervise_plugin("llm", verifier=False, supervisor_model=big, filter_preset="mbpp")
    )
    assert sup.model is big and not sup.settings.verify
    assert sup.settings.filter.tau_loop == 3
    f = supervise_plugin("rules+llm")
    assert agent_of(f) is not agent_of(f)  # a fresh plug-in per run
    assert f(big)[0] is not f(big)[0]


def test_unknown_mode_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="mode 'rule' is unknown; expected one of: llm, rules"):
        supervise_plugin("rule")


def test_workload_configs_include_the_rule_modes() -> None:
    names = [c.name for c in supervise_configs()]
    assert names[:2] == ["baseline", "supervised"]
    assert "rules" in names and "rules+llm" in names
    rules = next(c for c in supervise_configs("humaneval") if c.name == "rules")
    chain = rules.plugins[0](ScriptedModel([]))
    assert [p.name for p in chain] == RULES
