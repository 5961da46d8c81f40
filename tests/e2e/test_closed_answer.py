"""Closed answers through constrained decoding, on both backends: the embedded llama.cpp model
(a grammar from the JSON Schema) and the same model behind its loopback OpenAI-compatible
server (`response_format`). SmolLM2 cannot reason, so the tests check readability, not truth."""

from __future__ import annotations

import json

import pytest

from overseer.bench import ExecutorSettings, run_team
from overseer.bench._factory import TeamSetup
from overseer.bench._solvers import direct_solver
from overseer.models import LlamaCppModel, Model, OpenAIModel
from overseer.runtime import make_team
from overseer.tasks import Task, answer_schema, score

pytestmark = pytest.mark.e2e

MC = Task(
    "t",
    "t/mc",
    "Which planet is closest to the Sun?\n\nA. Venus\nB. Mercury\nC. Mars\nD. Earth",
    "B",
    "mc",
    ("Venus", "Mercury", "Mars", "Earth"),
)
NUM = Task(
    "t", "t/num", "Tom has 3 apples and buys 4 more. How many apples has he?", "7", "numeric"
)


@pytest.fixture(params=["embedded", "http"])
def backend(request: pytest.FixtureRequest, embedded_model: LlamaCppModel) -> Model:
    if request.param == "embedded":
        return embedded_model
    return OpenAIModel("smollm2-135m", base_url=embedded_model.base_url, timeout_s=120)


@pytest.mark.parametrize("task", [MC, NUM], ids=["mc", "numeric"])
async def test_direct_call_answer_is_always_readable(backend: Model, task: Task) -> None:
    out = await direct_solver(backend)(task, 0)
    data = json.loads(out.answer)  # the grammar makes the reply JSON under the schema
    assert set(data) == {"reasoning", "answer"}
    if task.kind == "mc":
        assert data["answer"] in ("A", "B", "C", "D")
    else:
        assert isinstance(data["answer"], int | float)
    assert score(task, out.answer).parsed is not None
    assert out.usage_by_actor["agent:solver"].completion_tokens > 0


async def test_team_decision_is_constrained(backend: Model, tmp_path) -> None:
    team = make_team("complete", 2, rounds=1, pool="reasoning", decision="llm")
    settings = ExecutorSettings(trace_dir=tmp_path, max_steps=1, max_tokens=200)
    out, res = await run_team(backend, TeamSetup(team), MC, 0, settings)
    assert res.stop_reason == "done", res.error
    assert json.loads(out.answer)["answer"] in ("A", "B", "C", "D")
    assert "decision:decision" in out.usage_by_actor


def test_schema_by_kind() -> None:
    mc = answer_schema(MC)
    assert mc is not None and mc["properties"]["answer"]["enum"] == ["A", "B", "C", "D"]
    assert answer_schema(NUM)["properties"]["answer"] == {"type": "number"}  # type: ignore[index]
    code = Task("t", "t/c", "def f(): ...", "", "code")
    assert answer_schema(code) is None


def test_reasoning_with_braces_still_reads_the_answer() -> None:
    reply = json.dumps({"reasoning": "the set {1, 2} has {two} members", "answer": "C"})
    assert score(MC, reply).parsed == "C"
