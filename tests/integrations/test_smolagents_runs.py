"""Issue 38: smolagents on the one core. Each top-level run of an agent under an
`OverseerSupervisor` is a guard run with its own trace, ledger and run_end; the bus writes
its verdicts; a second run of the same agent started while one is under way is refused."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from overseer.integrations.smolagents import UNPARSED_NOTE, ConcurrentRunError, OverseerSupervisor
from overseer.runtime import read_trace
from overseer.supervise.rules import RuleSettings

from .test_smolagents_rules import tool_agent


def test_each_run_has_its_own_trace_ledger_and_run_end(tmp_path: Path) -> None:
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(loop_limit=2), trace_dir=tmp_path)
    runs = []
    for q in ("How tall is the tower?", "How old is the bridge?"):
        replies: list[Any] = [("fetch", {"url": "https://x/a"})] * 3
        agent = sup.attach(tool_agent([*replies, ("final_answer", {"answer": "312"})], 6))
        assert agent.run(q) == "312"
        runs.append(sup.stats["run"])
    traces = sorted(tmp_path.glob("*.jsonl"))
    assert len(traces) == 2 and len(set(runs)) == 2
    for path in traces:
        events = list(read_trace(path, validate=True))
        assert events[0]["event"] == "run_start" and events[-1]["event"] == "run_end"
        assert events[-1]["stop_reason"] == "done" and events[-1]["answer"] == "312"
        verdicts = [e for e in events if e["event"] == "verdict"]
        assert [v["note"] for v in verdicts] == ["loop_breaker"]  # written by the bus
        assert events[-1]["usage"]["input_tokens"] > 0  # the agent's own calls are booked


def test_a_second_run_of_a_running_agent_is_refused(tmp_path: Path) -> None:
    sup = OverseerSupervisor(mode="rules", trace_dir=tmp_path)
    started, release = threading.Event(), threading.Event()
    agent = sup.attach(tool_agent([("final_answer", {"answer": "1"})], 3))
    inner = agent.step_callbacks

    def slow(step: Any, agent: Any = None) -> None:
        started.set()
        release.wait(10)

    from smolagents.memory import ActionStep

    inner.register(ActionStep, slow)
    t = threading.Thread(target=agent.run, args=("first",))
    t.start()
    assert started.wait(10)
    with pytest.raises(ConcurrentRunError, match="already running"):
        agent.run("second")
    release.set()
    t.join()
    assert len(list(tmp_path.glob("*.jsonl"))) == 1  # the refused run opened none


@pytest.mark.parametrize("loop_breaker", [True, False])
def test_thirty_noisy_pages_in_a_row_which_rule_decides(loop_breaker: bool) -> None:
    """Issue 43 row 12: identical noisy outputs whatever the arguments are a progress-free
    loop: the loop breaker refuses the call after `progress_limit` of them and the agent answers;
    without the loop breaker every page is purified."""
    rules = RuleSettings(loop_breaker=loop_breaker, masking=False)
    sup = OverseerSupervisor(mode="rules", rules=rules)
    replies: list[Any] = [("fetch", {"url": f"https://x/long{k}"}) for k in range(30)]
    agent = sup.attach(tool_agent([*replies, "done"], 31))
    agent.run("How tall is the tower?")
    fired = sup.stats["rules"]
    if loop_breaker:  # progress_limit pages purified, then refusals until the agent answers
        expected = {"purification": rules.progress_limit, "loop_breaker": 2}
        assert fired == expected and sup.stats["escalations"] == 1
    else:
        assert fired == {"purification": 30}


def test_unparsable_repeats_are_refusals_on_the_bus(tmp_path: Path) -> None:
    """One refusal counter: a reply smolagents cannot run, written again, is refused by the
    bus (its interaction and verdict in the trace), counted by `Bus.refused` like a refused
    tool call, and two of them in a row send the agent to its final answer."""
    sup = OverseerSupervisor(mode="rules", trace_dir=tmp_path)
    text = 'I will call fetch with {"url": "https://x/a"} now.'
    agent = sup.attach(tool_agent([text] * 8 + [("final_answer", {"answer": "7"})], 8))
    agent.run("How tall is the tower?")
    assert sup.escalations == 1
    events = list(read_trace(next(tmp_path.glob("*.jsonl")), validate=True))
    said = [str(e.get("observation", "")) for e in events if e["event"] == "interaction"]
    refusals = [o for o in said if o.startswith("[overseer] Not run again")]
    verdicts = [e for e in events if e["event"] == "verdict"]
    assert len(refusals) == len(verdicts) == 2  # the repeats, written by the bus
    assert events[-1]["event"] == "run_end"


def test_a_final_answer_copying_a_note_is_asked_again_once(tmp_path: Path) -> None:
    """Issue 39: a final answer that only repeats overseer's refusal is no answer; the agent
    reads why (an error step restating the question) and answers again."""
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(loop_limit=2), trace_dir=tmp_path)
    copy = "[overseer] Not run again: fetch ran twice in this task with these arguments."
    replies: list[Any] = [("fetch", {"url": "https://x/a"})] * 3
    replies += [("final_answer", {"answer": copy}), ("final_answer", {"answer": copy})]
    agent = sup.attach(tool_agent(replies, 8))
    assert agent.run("How tall is the tower?") == copy  # asked again once, not twice
    errors = [str(s.error) for s in agent.memory.steps if getattr(s, "error", None)]
    assert len(errors) == 1 and "How tall is the tower?" in errors[0]
    assert sup.stats["reasked"] == 1

    agent = sup.attach(tool_agent([*replies[:4], ("final_answer", {"answer": "312"})], 8))
    assert agent.run("How tall is the tower?") == "312"


def test_a_final_answer_copying_the_unparsed_reply_note_is_asked_again(tmp_path: Path) -> None:
    """The note smolagents' agent reads after replies that could not be run (written by the
    adapter, not the bus) is overseer's words too: a final answer copying it, without its
    "[overseer]" tag, is asked again once (a 0.5B agent answered it on a development task)."""
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(loop_limit=2), trace_dir=tmp_path)
    copy = UNPARSED_NOTE.removeprefix("[overseer] ")
    replies: list[Any] = ["I think the answer is in the page."] * 3
    replies += [("final_answer", {"answer": copy}), ("final_answer", {"answer": "312"})]
    agent = sup.attach(tool_agent(replies, 8))
    assert agent.run("How tall is the tower?") == "312"
    assert sup.stats["reasked"] == 1
