"""smolagents + SupervisorAgent end to end: a real smolagents agent talks over HTTP to the
embedded llama.cpp server, and the real embedded model supervises it."""

from __future__ import annotations

import re
import runpy
from pathlib import Path
from typing import Any

import pytest
from smolagents import OpenAIServerModel, ToolCallingAgent, tool
from smolagents.memory import ActionStep

from overseer.integrations.smolagents import OverseerSupervisor
from overseer.models import LlamaCppModel
from overseer.supervise import FilterConfig, SupervisorSettings, preset
from overseer.supervise.rules import RuleSettings

pytestmark = pytest.mark.e2e

PAGE = "<li class='nav'>Home | News | Shop</li> " * 120 + "Tinbel Observatory: aperture 240 cm."


@tool
def visit(url: str) -> str:
    """Open a web page and return its HTML.

    Args:
        url: the page address
    """
    return PAGE


class FirstVisit(OpenAIServerModel):
    """smolagents' model with its first call forced to `visit` (a named tool choice): SmolLM2
    may otherwise call `final_answer` at once, leaving no step to review."""

    calls = 0

    def _prepare_completion_kwargs(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        out = super()._prepare_completion_kwargs(*args, **kwargs)
        if self.calls == 0 and out.get("tools"):
            out["tool_choice"] = {"type": "function", "function": {"name": "visit"}}
        self.calls += 1
        return out


def test_supervisor_reviews_a_real_smolagents_run(embedded_model: LlamaCppModel) -> None:
    agent_model = FirstVisit(
        model_id=embedded_model.name,
        api_base=embedded_model.base_url,
        api_key="none",
        max_tokens=96,
        temperature=0.0,
    )
    # tau_len below the page length: every visit is an over-long observation
    sup = OverseerSupervisor(
        embedded_model,
        SupervisorSettings(filter=FilterConfig(tau_len=1000), max_tokens=256, max_reasks=1),
    )
    agent = ToolCallingAgent(tools=[visit], model=agent_model, max_steps=3, verbosity_level=0)
    sup.attach(agent)
    agent.run("What is the aperture of the Tinbel telescope? Visit https://wiki.local/Tinbel")
    # the forced visit returns an over-long page; a later step may be an error (no tool call):
    # both are flagged, and the real model is asked about each flagged step.
    assert sup.stats["steps"] >= 1
    assert sup.log, "no step was flagged"
    assert {e.context for e in sup.log} <= {"error", "excessive"}
    # each flagged step got a decision (or its approve fallback), or a note saying why the
    # model was not asked (e.g. the same error was already reviewed twice)
    assert all(e.action is not None or e.note for e in sup.log)
    assert any(e.action is not None for e in sup.log)
    assert sup.usage.prompt_tokens > 0 and sup.usage.completion_tokens > 0
    # smolagents' own totals include the supervisor's tokens
    assert agent.monitor.get_total_token_counts().input_tokens >= sup.usage.prompt_tokens


def readme_snippet() -> str:
    """The smolagents guide's example (docs/integrations.md: the one block that builds the
    supervisor)."""
    text = (Path(__file__).parents[2] / "docs" / "integrations.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    found = [b for b in blocks if "OverseerSupervisor(" in b and "load_model(" in b]
    assert len(found) == 1, "expected one README block with the smolagents example"
    return found[0]


def test_readme_snippet_runs_as_written(tmp_path: Path) -> None:
    # only the model differs: tests run the embedded SmolLM2, the README names qwen 0.5B
    src = readme_snippet()
    assert '"qwen2.5-coder-0.5b"' in src
    path = tmp_path / "readme_smolagents.py"
    path.write_text(src.replace('"qwen2.5-coder-0.5b"', '"smollm2-135m"'), encoding="utf-8")
    ns = runpy.run_path(str(path))  # a file: smolagents' @tool reads the function's source
    sup, agent = ns["sup"], ns["agent"]
    assert isinstance(sup, OverseerSupervisor) and sup.mode == "rules+llm"
    # SmolLM2 (with the embedded server's forced tool choice) may answer at step 1, leaving no
    # step to review; the run still went through the callback, which booked its tokens
    assert sup.runs == 1 and "steps" in sup.stats
    assert sup.settings.filter == preset("gaia") and sup.settings.verify
    assert isinstance(ns["answer"], str | int | float)
    # the supervisor's real tokens are in smolagents' own totals
    assert agent.monitor.get_total_token_counts().input_tokens >= sup.usage.prompt_tokens


def test_rules_mode_budget_on_real_token_counts(embedded_model: LlamaCppModel) -> None:
    # the first call forced to `visit`: CI's SmolLM2 once answered at step 1, so no tool step
    agent_model = FirstVisit(
        model_id=embedded_model.name,
        api_base=embedded_model.base_url,
        api_key="none",
        max_tokens=48,
        temperature=0.0,
    )
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(budget_tokens=400))
    agent = sup.attach(
        ToolCallingAgent(tools=[visit], model=agent_model, max_steps=2, verbosity_level=0)
    )
    agent.run("What is the aperture of the Tinbel telescope? Visit https://wiki.local/Tinbel")
    first = next(s for s in agent.memory.steps if isinstance(s, ActionStep))
    # smolagents' prompt alone is over 400 tokens as the server counts them: spent at step 1
    assert first.token_usage is not None and first.token_usage.input_tokens > 400
    assert "token budget is spent" in (first.observations or "")
    assert sup.stats["rules"]["budget"] >= 1 and sup.stats["supervisor_tokens"] == 0
    assert any(e.context == "rule" and e.action == "budget" for e in sup.log)
