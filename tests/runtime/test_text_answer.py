"""Text answers (`AgentSpec.answer_format="text"`): after the JSON step chooses to answer, one
more call without grammar writes the answer; only opted-in agents make it, and it is booked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from overseer.models import ScriptedModel
from overseer.runtime import AgentSpec, Executor, PythonTool, TeamSpec, read_trace
from overseer.runtime._agent import TEXT_ANSWER_NOTE, action_schema
from overseer.runtime._spec import TeamSpecError

CODE = 'def f(x):\n    result = "a"\n    return result + x.replace(\'"\', "")\n'
TEXT = f"Here it is.\n```python\n{CODE}```"


def team(fmt: str, tools: tuple[str, ...] = ("python",)) -> TeamSpec:
    coder = AgentSpec(name="coder", tools=tools, answer_format=fmt)  # type: ignore[arg-type]
    return TeamSpec(agents=[coder], decision="last")


def script(fmt: str) -> list[Any]:
    """The coder's replies: a tool call, the answer step, then (text format) the text."""
    call = {"thought": "try", "action": "python", "args": {"code": "print(1)"}}
    if fmt == "json":
        return [call, {"thought": "done", "action": "answer", "answer": TEXT}]
    return [call, {"thought": "done", "action": "answer"}, TEXT]


async def test_text_answer_is_one_more_call_without_schema(tmp_path: Path) -> None:
    model = ScriptedModel(script("text"))
    res = await Executor(model, tools={"python": PythonTool()}, trace_dir=tmp_path).run(
        team("text"), "Write f."
    )
    assert res.answer == TEXT and res.stop_reason == "done"
    assert len(model.calls) == 3 and res.calls_by_actor == {"agent:coder": 3}
    step, last = model.calls[1], model.calls[2]
    assert "answer" not in step["schema"]["anyOf"][0]["properties"]  # the step holds no answer
    assert last["schema"] is None
    # the step's prompt, its last turn asking for the text; the JSON step is not shown
    assert last["messages"][:-1] == step["messages"][:-1]
    end = step["messages"][-1]
    assert last["messages"][-1] == {**end, "content": f"{end['content']}\n\n{TEXT_ANSWER_NOTE}"}
    assert end["role"] == "user" and end["content"].startswith("Observation from python")
    calls = [e for e in read_trace(res.trace_path) if e["event"] == "model_call"]
    assert [c["output"] for c in calls][-1] == TEXT  # traced like any other call
    booked = sum(c["gen_ai.usage.output_tokens"] for c in calls)
    assert (
        res.total.completion_tokens == booked == res.usage_by_actor["agent:coder"].completion_tokens
    )
    (msg,) = [e for e in read_trace(res.trace_path) if e["event"] == "interaction"][-1:]
    assert msg["gen_ai.usage.output_tokens"] > calls[-1]["gen_ai.usage.output_tokens"]  # both


async def test_json_agents_make_no_extra_call(tmp_path: Path) -> None:
    model = ScriptedModel(script("json"))
    res = await Executor(model, tools={"python": PythonTool()}, trace_dir=tmp_path).run(
        team("json"), "Write f."
    )
    assert res.answer == TEXT and len(model.calls) == 2
    assert all(c["schema"] == action_schema([PythonTool()]) for c in model.calls)
    assert all(TEXT_ANSWER_NOTE not in m["content"] for c in model.calls for m in c["messages"])


async def test_no_choice_means_no_json_step(tmp_path: Path) -> None:
    """An agent without tools (or with its tools closed) can only answer: the text call alone,
    its request written into the prompt's last user turn."""
    model = ScriptedModel(["   ", TEXT])  # an empty text is asked again
    res = await Executor(model, trace_dir=tmp_path).run(team("text", ()), "Write f.")
    assert res.answer == TEXT and len(model.calls) == 2
    first = model.calls[0]
    assert first["schema"] is None and first["messages"][-1]["role"] == "user"
    assert first["messages"][-1]["content"].endswith("\n\n" + TEXT_ANSWER_NOTE)
    assert "the answer is empty" in model.calls[1]["messages"][-1]["content"]


def test_answer_format_is_checked_and_left_out_when_default() -> None:
    with pytest.raises(TeamSpecError, match=r"agents\.0\.answer_format: Input should be 'json'"):
        TeamSpec.from_json('{"agents": [{"name": "a", "answer_format": "free"}]}')
    plain = TeamSpec(agents=[AgentSpec(name="a")])
    assert "answer_format" not in plain.to_json()  # old specs dump (and digest) as before
    text = team("text")
    assert TeamSpec.from_json(text.to_json()) == text
