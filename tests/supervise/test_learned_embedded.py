"""The learned trigger trains and loads from REAL stored runs: browse-sample tasks solved by
SmolLM2-135M agents with the SmolLM2 supervisor on (low filter thresholds, so it is asked),
traces written to disk, labelled, fitted, saved, loaded, and then used on the bus."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from overseer.bench.solvers import workload_solver
from overseer.experiments.supervise import supervise_plugin
from overseer.models import LlamaCppModel
from overseer.runtime import AgentSpec, Executor, TeamSpec, read_trace
from overseer.supervise import FilterConfig, SupervisorAgent, SupervisorSettings
from overseer.supervise.learned import examples_from_traces, load_trigger, train_trigger
from overseer.tasks import load_suite, open_environment

pytestmark = pytest.mark.e2e

LOW = FilterConfig(tau_step=1, tau_loop=2, tau_len=300, report_min_chars=1)


async def workload_run(model: LlamaCppModel, out: Path) -> None:
    """The browse workload team (researcher -> writer) with the LLM supervisor, on one task."""
    task = load_suite("browse-sample", split="train", limit=1)[0]
    settings = SupervisorSettings(filter=LOW, max_tokens=256)
    plug = supervise_plugin("llm", settings=settings, verifier=False)
    solve = workload_solver(model, supervisors=plug, name="llm", trace_dir=out, max_steps=4)
    got = await solve(task, 0)
    assert got.error is None


async def told_run(model: LlamaCppModel, out: Path) -> None:
    """The same task's tools, a researcher told to keep visiting a page that does not exist."""
    task = load_suite("browse-sample", split="train", limit=1)[0]
    env = open_environment(task)
    assert env is not None
    team = TeamSpec(
        agents=[
            AgentSpec(
                name="researcher",
                role="Web researcher",
                tools=list(env.tools),
                instructions=(
                    'Always reply with the visit action and args {"url": "https://wiki.local/'
                    'Main_Tower"}. Never use the answer action.'
                ),
            ),
            AgentSpec(name="writer", role="Answer writer", instructions="Give the final answer."),
        ],
        spatial_edges=[("researcher", "writer")],
        decision="last",
    )
    sup = SupervisorAgent(settings=SupervisorSettings(filter=LOW, max_tokens=256, verify=False))
    ex = Executor(
        model,
        supervisors=[sup],
        tools=dict(env.tools),
        trace_dir=out,
        max_steps=4,
        max_tokens=96,
        seed=0,
    )
    # a page that does not exist: each visit fails, and on an error with an empty observation
    # and no verifier the supervisor can only guide (an intervention that is kept)
    await ex.run(
        team, f"{task.prompt}\nCall the visit tool with url https://wiki.local/Main_Tower."
    )


def test_trigger_trains_and_loads_from_a_real_stored_run(
    embedded_model: LlamaCppModel, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    asyncio.run(workload_run(embedded_model, runs / "a"))
    asyncio.run(told_run(embedded_model, runs / "b"))
    examples = examples_from_traces([runs])
    labels = [e.label for e in examples]
    print("labels from the real traces:", labels, [e.features["context"] for e in examples])
    assert 0 in labels and 1 in labels, "the supervisor should have kept one and dropped one"
    assert all(e.features["role"] in ("Web researcher", "Answer writer") for e in examples)
    trig = train_trigger(examples, examples, seed=0)
    path = trig.save(tmp_path / "trigger.json")
    loaded = load_trigger(path)
    assert loaded.to_json() == trig.to_json()
    probs = [loaded.prob(e.features) for e in examples]
    assert all(0.0 < p < 1.0 for p in probs)
    # kept interventions score above dropped ones on the data it was fitted on
    ones = [p for p, y in zip(probs, labels, strict=True) if y]
    zeros = [p for p, y in zip(probs, labels, strict=True) if not y]
    assert min(ones) > max(zeros)
    # loaded by the `learned` mode: the run writes the trigger's decision into its trace
    asyncio.run(
        workload_solver(
            embedded_model,
            supervisors=supervise_plugin(
                "learned", trigger=path, settings=SupervisorSettings(filter=LOW, max_tokens=256)
            ),
            name="learned",
            trace_dir=tmp_path / "learned",
            max_steps=4,
        )(load_suite("browse-sample", split="train", limit=1)[0], 0)
    )
    events = [
        e
        for f in (tmp_path / "learned").rglob("*.jsonl")
        for e in read_trace(f)
        if e["event"] == "supervision"
    ]
    assert events
    for e in events:  # every step the LLM was asked about, or the trigger skipped, has features
        if e["attempts"] or e["note"].startswith("learned trigger"):
            assert "features" in e
