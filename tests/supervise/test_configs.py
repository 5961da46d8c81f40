"""Supervision modes as one plug-in factory, and the workload configurations of each mode."""

from __future__ import annotations

import pytest

from overseer.experiments.supervise import supervise_configs, supervise_plugin
from overseer.models import ScriptedModel
from overseer.supervise import SupervisorAgent
from overseer.supervise.modes import MODES
from overseer.supervise.rules import RuleSettings


def agent_of(factory, model=None) -> SupervisorAgent:  # type: ignore[no-untyped-def]
    (sup,) = factory(model or ScriptedModel([]))
    assert isinstance(sup, SupervisorAgent)
    return sup


def test_modes_set_rules_and_llm() -> None:
    llm = agent_of(supervise_plugin("llm")).settings
    assert llm.rules is None and llm.llm
    rules = agent_of(supervise_plugin("rules")).settings
    assert rules.rules == RuleSettings() and not rules.llm
    both = agent_of(supervise_plugin("rules+llm", rules=RuleSettings(loop_limit=4))).settings
    assert both.rules is not None and both.rules.loop_limit == 4 and both.llm
    assert set(MODES) >= {"llm", "rules", "rules+llm"}


def test_plugin_options_reach_the_agent() -> None:
    big = ScriptedModel([], name="big")
    sup = agent_of(
        supervise_plugin("llm", verifier=False, supervisor_model=big, filter_preset="mbpp")
    )
    assert sup.model is big and not sup.settings.verify
    assert sup.settings.filter.tau_loop == 3
    f = supervise_plugin("rules")
    assert agent_of(f) is not agent_of(f)  # a fresh plug-in per run


def test_unknown_mode_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="mode 'rule' is unknown; expected one of: llm, rules"):
        supervise_plugin("rule")


def test_workload_configs_include_the_rule_modes() -> None:
    names = [c.name for c in supervise_configs()]
    assert names[:2] == ["baseline", "supervised"]
    assert "rules" in names and "rules+llm" in names
    rules = next(c for c in supervise_configs("humaneval") if c.name == "rules")
    (sup,) = rules.plugins[0](ScriptedModel([]))
    assert isinstance(sup, SupervisorAgent) and not sup.settings.llm
