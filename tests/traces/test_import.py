"""Each importer on shipped logs: Who&When (both formats), OpenAI chat, overseer traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from overseer.traces import (
    TraceFormatError,
    from_openai_chat,
    from_whowhen,
    load_file,
    load_source,
    load_whowhen,
)


def test_packaged_whowhen_has_the_papers_counts() -> None:
    hand, alg = load_whowhen("hand"), load_whowhen("alg")
    assert (len(hand), len(alg)) == (58, 126)
    assert len(load_source("whowhen")) == 184
    assert all(t.outcome == "failed" and t.annotation is not None for t in hand + alg)
    with pytest.raises(TraceFormatError, match="expected hand, alg or all"):
        load_whowhen("train")  # type: ignore[arg-type]


def test_hand_crafted_roles_become_agents_addressees_and_observations() -> None:
    t = load_whowhen("hand")[0]  # hand-1: WebSurfer at step 12
    assert t.id == "hand-1" and t.source == "whowhen-hand"
    assert t.agents == ("human", "Orchestrator", "WebSurfer")
    assert t.annotation is not None and (t.annotation.agent, t.annotation.step) == ("WebSurfer", 12)
    s3, s4 = t.steps[3], t.steps[4]
    assert (s3.agent, s3.to, s3.role) == (
        "Orchestrator",
        "WebSurfer",
        "Orchestrator (-> WebSurfer)",
    )
    assert s4.agent == "WebSurfer" and s4.is_observation and not s3.is_observation
    assert t.question.startswith("Where can I take martial arts classes")


def test_algorithm_generated_names_and_system_prompts() -> None:
    t = load_whowhen("alg")[0]
    assert t.source == "whowhen-alg"
    assert t.steps[0].agent == "Excel_Expert" and t.steps[1].agent == "Computer_terminal"
    assert t.steps[1].is_observation  # "exitcode: 0 ..." is a terminal's output
    assert "Excel_Expert" in t.system_prompts
    assert t.ground_truth == "8"


def test_a_whowhen_file_on_disk_is_read_by_content(tmp_path: Path) -> None:
    row = {"history": [{"role": "human", "content": "Q?"},
                       {"role": "Orchestrator (-> WebSurfer)", "content": "search"},
                       {"role": "WebSurfer", "content": "page text"}],
           "question": "Q?", "ground_truth": "A", "mistake_agent": "WebSurfer",
           "mistake_step": "2", "mistake_reason": "read the wrong page"}  # fmt: skip
    f = tmp_path / "7.json"
    f.write_text(json.dumps(row))
    (t,) = load_file(f)
    assert t.id == "7" and t.annotation is not None and t.annotation.step == 2
    assert t.steps[2].is_observation


def test_openai_chat_transcript_with_tool_calls(tmp_path: Path) -> None:
    alg = load_whowhen("alg")[0]
    msgs = [{"role": "system", "content": "You solve tasks.", "name": "planner"}]
    msgs.append({"role": "user", "content": alg.question})
    call = {"name": "python", "arguments": '{"code": "1+1"}'}
    tool_calls = [{"id": "c1", "type": "function", "function": call}]
    msgs.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
    msgs.append({"role": "tool", "tool_call_id": "c1", "name": "python", "content": "2"})
    msgs.append({"role": "assistant", "content": "The answer is 2."})
    f = tmp_path / "chat.json"
    f.write_text(json.dumps({"messages": msgs, "mistake_agent": "assistant", "mistake_step": 1}))
    (t,) = load_file(f)
    assert t.source == "openai-chat" and t.outcome == "failed"
    assert [s.agent for s in t.steps] == ["user", "assistant", "tool:python", "assistant"]
    assert t.steps[1].tool_calls[0].name == "python" and t.steps[2].is_observation
    assert t.system_prompts == {"planner": "You solve tasks."}
    assert t.question == alg.question
    lines = tmp_path / "chat.jsonl"  # one message per line reads the same
    lines.write_text("\n".join(json.dumps(m) for m in msgs))
    (t2,) = load_file(lines)
    assert [s.agent for s in t2.steps] == [s.agent for s in t.steps]


def test_overseer_trace(tmp_path: Path) -> None:
    def inter(agent: str, step: int, obs: str, tool: str | None) -> dict:
        return {"v": 2, "ts": 0.0, "run": "r1", "event": "interaction", "kind": "tool",
                "agent": agent, "role": "coder", "round": 0, "step": step, "tool": tool,
                "thought": "think", "input": "print(1)", "observation": obs, "error": None,
                "local_task": "t", "logprob_tokens": 0, "decision_positions": [],
                "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 3}  # fmt: skip

    events = [
        {"v": 2, "ts": 0.0, "run": "r1", "event": "run_start", "query": "What is 1?",
         "team": {}, "model": "m", "supervisors": []},
        inter("coder", 0, "1", "python"),
        inter("critic", 1, "", None),
        {"v": 2, "ts": 1.0, "run": "r1", "event": "run_end", "answer": "2",
         "stop_reason": "error", "error": "boom", "usage": {}, "by_actor": {}},
    ]  # fmt: skip
    f = tmp_path / "trace.jsonl"
    f.write_text("\n".join(json.dumps(e) for e in events))
    (t,) = load_file(f)
    assert t.source == "overseer" and t.question == "What is 1?" and t.outcome == "failed"
    assert t.agents == ("coder", "critic") and t.steps[0].observation == "1"
    assert t.steps[0].tool_calls[0].name == "python" and t.answer == "2"


def test_bad_input_names_the_file(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_text('{"foo": 1}')
    with pytest.raises(TraceFormatError, match=r"x\.json: expected a Who&When log"):
        load_file(f)
    with pytest.raises(TraceFormatError, match="expected a file, a directory"):
        load_source(str(tmp_path / "missing.json"))
    with pytest.raises(TraceFormatError, match="mistake_step 'x'"):
        from_whowhen({"history": [], "mistake_agent": "a", "mistake_step": "x"})
    with pytest.raises(TraceFormatError, match="expected messages with a 'role'"):
        from_openai_chat([{"content": "hi"}])
