"""The HumanEval team answers in plain text: a function with string literals comes through whole
and is scored; the other workload teams keep JSON answers. The real run uses SmolLM2-135M."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from overseer.bench._workloads import workload_team
from overseer.bench.solvers import workload_solver
from overseer.models import LlamaCppModel, ScriptedModel
from overseer.runtime import AgentSpec, Executor, PythonTool, TeamSpec, read_trace
from overseer.tasks import Task, ascore, load_suite

XOR = "HumanEval/11"  # string_xor: its natural solution is full of '"' literals
CODE = (
    "def string_xor(a: str, b: str) -> str:\n"
    '    result = ""\n'
    "    for x, y in zip(a, b):\n"
    '        result += "0" if x == y else "1"\n'
    "    return result\n"
)
STEP = {"thought": "it works", "action": "answer"}


def humaneval(task_id: str) -> Task:
    return next(t for t in load_suite("humaneval", split="all") if t.id == task_id)


def test_only_the_code_team_answers_in_text() -> None:
    code, _ = workload_team(humaneval(XOR))
    assert {a.answer_format for a in code.agents} == {"text"}
    mc = Task("toy", "toy/1", "Which?\n\nA. 1\nB. 2", "A", "mc", ("1", "2"))
    chain, _ = workload_team(mc)
    assert {a.answer_format for a in chain.agents} == {"json"}


async def test_a_text_answer_with_string_literals_is_extracted_and_passes(
    tmp_path: Path,
) -> None:
    task = humaneval(XOR)
    text = f"The function:\n```python\n{CODE}```\nIt XORs the bits."
    model = ScriptedModel(by_actor={"coder": [STEP, text], "reviewer": [STEP, text]})
    out = await workload_solver(model, trace_dir=tmp_path)(task, 0)
    assert out.error is None and out.answer == text
    assert set(out.usage_by_actor) == {"agent:coder", "agent:reviewer"}
    assert len(model.calls) == 4  # per agent: the JSON step, then the text
    sc = await ascore(task, out.answer)
    assert sc.correct and sc.parsed == CODE, sc.detail


@pytest.mark.e2e
async def test_a_text_agent_end_to_end_on_the_embedded_model(
    embedded_model: LlamaCppModel, tmp_path: Path
) -> None:
    coder = AgentSpec(
        name="coder",
        role="Python programmer",
        instructions="Answer with the function in one ```python block.",
        tools=("python",),
        answer_format="text",
    )
    res = await Executor(
        embedded_model,
        tools={"python": PythonTool()},
        max_steps=2,
        max_tokens=96,
        seed=1,
        trace_dir=tmp_path,
    ).run(TeamSpec(agents=[coder], decision="last"), "Write a Python function add(a, b).")
    assert res.stop_reason == "done" and res.answer.strip(), res.failures
    calls = [e for e in read_trace(res.trace_path) if e["event"] == "model_call"]
    assert len(calls) >= 2 and all(c["gen_ai.agent.name"] == "coder" for c in calls)
    assert calls[-1]["output"].strip() == res.answer  # the answer is the text call's reply
    for c in calls[:-1]:  # every earlier call is a JSON step (grammar-constrained)
        json.loads(c["output"])
    assert calls[-1]["input"][-1]["content"].endswith("put any code in one ```python block.")
    assert res.calls_by_actor == {"agent:coder": len(calls)}
    assert res.total.completion_tokens == sum(c["gen_ai.usage.output_tokens"] for c in calls)
