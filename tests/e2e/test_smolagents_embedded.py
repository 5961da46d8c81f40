"""smolagents + SupervisorAgent end to end: a real smolagents agent talks over HTTP to the
embedded llama.cpp server, and the real embedded model supervises it."""

from __future__ import annotations

import pytest
from smolagents import OpenAIServerModel, ToolCallingAgent, tool

from overseer.integrations.smolagents import OverseerSupervisor
from overseer.models import LlamaCppModel
from overseer.supervise import FilterConfig, SupervisorSettings

pytestmark = pytest.mark.e2e

PAGE = "<li class='nav'>Home | News | Shop</li> " * 120 + "Tinbel Observatory: aperture 240 cm."


@tool
def visit(url: str) -> str:
    """Open a web page and return its HTML.

    Args:
        url: the page address
    """
    return PAGE


def test_supervisor_reviews_a_real_smolagents_run(embedded_model: LlamaCppModel) -> None:
    agent_model = OpenAIServerModel(
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
    # SmolLM2 either calls visit (an over-long page) or fails to emit a tool call (an error
    # step): both are flagged, and the real model is asked about each flagged step.
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
