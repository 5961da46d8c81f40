"""The framework-neutral guard: rule tier per agent, supervisor, ledger booking, team budget."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from overseer.integrations._guard import (
    BudgetExceeded,
    Guard,
    GuardSettings,
    RunStopped,
    ToolRecord,
    model_label,
)
from overseer.models import ScriptedModel
from overseer.runtime import read_trace
from overseer.supervise import SupervisorSettings, reply_template
from overseer.supervise.rules import RuleSettings

PAGE = "Tinbel Observatory. The aperture is 240 cm. " + "Menu | Home | Shop | Login. " * 2000


def reply(g: Guard, agent: str = "a") -> None:
    """A model reply of `agent` booked: the tool calls after it are a new reply's."""
    g.book(agent, prompt_tokens=10, completion_tokens=2)


def test_repeated_tool_call_is_blocked_per_agent() -> None:
    g = Guard(GuardSettings(rules=RuleSettings(loop_limit=2)))
    g.start_run("find the aperture")
    assert g.before_tool("a", "fetch", {"url": "x"}) is None
    reply(g)
    assert g.before_tool("a", "fetch", '{"url": "x"}') is None  # same action as JSON text
    reply(g)
    note = g.before_tool("a", "fetch", {"url": "x"})
    assert note and "fetch" in note
    # another agent, or another call, is not blocked
    assert g.before_tool("b", "fetch", {"url": "x"}) is None
    assert g.before_tool("a", "fetch", {"url": "y"}) is None
    assert g.stats["actions"] == 5 and g.stats["blocked"] == 1
    assert g.stats["rules"]["loop_breaker"] == 1


def test_start_run_forgets_the_previous_run() -> None:
    g = Guard(GuardSettings(rules=RuleSettings(loop_limit=1)))
    g.start_run("t")
    g.before_tool("a", "fetch", {"url": "x"})
    assert g.before_tool("a", "fetch", {"url": "x"}) is not None
    first = g.ledger
    g.start_run("t")
    assert g.before_tool("a", "fetch", {"url": "x"}) is None
    assert g.ledger is not first and g.ledger.run != first.run


def test_long_tool_output_is_purified_short_one_kept() -> None:
    g = Guard()
    g.start_run("What is the aperture of the Tinbel telescope?")
    out = g.after_tool("a", "fetch", {"url": "x"}, PAGE)
    assert len(out) < len(PAGE) // 10
    assert g.after_tool("a", "fetch", {"url": "y"}, "short page") == "short page"
    assert g.stats["rules"]["purification"] == 1


def test_purification_off_keeps_the_page() -> None:
    g = Guard(GuardSettings(rules=RuleSettings(purify=False)))
    assert g.after_tool("a", "fetch", {}, PAGE) == PAGE


def test_model_input_masks_older_outputs() -> None:
    g = Guard(GuardSettings(rules=RuleSettings(mask_keep=1)))
    records = [ToolRecord("fetch", '{"url": "1"}', "A" * 5000), ToolRecord("fetch", "{}", "B")]
    shown = g.model_input("a", records)
    assert shown[1] == "B" and shown[0] != records[0].text and len(shown[0]) < 200
    g.model_input("a", records)  # the same record is masked once
    assert g.stats["rules"]["masking"] == 1


def test_book_is_per_agent_and_the_team_budget_stops() -> None:
    g = Guard(GuardSettings(budget_tokens=100))
    g.start_run("t")
    g.book("planner", prompt_tokens=30, completion_tokens=5, model="m")
    g.book("coder", prompt_tokens=40, completion_tokens=5)
    assert g.stats["tokens"] == {"agent:planner": 35, "agent:coder": 45}
    assert g.ledger.total.prompt_tokens == 70
    with pytest.raises(BudgetExceeded, match="tokens"):
        g.book("coder", prompt_tokens=30, completion_tokens=1)
    with pytest.raises(BudgetExceeded):
        g.check_budget()


def test_call_budget_is_checked_before_a_call() -> None:
    g = Guard(GuardSettings(budget_calls=2))
    g.check_budget()
    g.book("a", prompt_tokens=1, completion_tokens=1)
    g.book("a", prompt_tokens=1, completion_tokens=1)
    with pytest.raises(BudgetExceeded, match="steps"):
        g.check_budget()


def test_per_agent_rule_budget_raises() -> None:
    g = Guard(GuardSettings(rules=RuleSettings(budget_tokens=50)))
    g.book("a", prompt_tokens=20, completion_tokens=1)
    g.book("b", prompt_tokens=40, completion_tokens=1)  # b's own budget is not a's
    with pytest.raises(BudgetExceeded):
        g.book("a", prompt_tokens=40, completion_tokens=1)


@pytest.mark.parametrize(
    ("kw", "msg"),
    [({"budget_tokens": 0}, "budget_tokens"), ({"budget_calls": -1}, "budget_calls")],
)
def test_bad_settings_are_one_clear_line(kw: dict[str, int], msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        GuardSettings(**kw)  # type: ignore[arg-type]


def test_supervisor_settings_without_a_model_is_an_error() -> None:
    with pytest.raises(ValueError, match="supervisor_model"):
        Guard(GuardSettings(supervisor=SupervisorSettings()))


def test_supervisor_reviews_an_error_and_is_booked(tmp_path: Path) -> None:
    sup = ScriptedModel([reply_template("provide_guidance", "bad url", "use https://ok")])
    g = Guard(GuardSettings(), supervisor_model=sup, trace_dir=tmp_path, run_name="t1")
    g.start_run("fetch the page")
    out = g.after_tool("a", "fetch", {"url": "bad"}, "", error="404 not found")
    assert "use https://ok" in out
    assert g.stats["supervisor"]["actions"] == {"provide_guidance": 1}
    assert "supervisor:supervisor" in g.stats["tokens"]
    assert g.ledger.by_kind()["supervisor"].prompt_tokens > 0
    g.book("a", prompt_tokens=3, completion_tokens=2, messages=[{"role": "user", "content": "x"}])
    g.end_run("answer")
    (path,) = tmp_path.glob("*.jsonl")
    events = list(read_trace(path, validate=True))
    names = [e["event"] for e in events]
    assert names[0] == "run_start" and names[-1] == "run_end"
    assert names.count("model_call") == 2 and "supervision" in names
    assert events[-1]["by_actor"]["agent:a"] == [3, 0, 2]


async def test_async_after_tool_in_an_event_loop() -> None:
    sup = ScriptedModel([reply_template("correct_observation", "clean", "aperture 240 cm")])
    g = Guard(
        GuardSettings(rules=RuleSettings(purify=False)),
        supervisor_model=sup,
    )
    g.start_run("aperture?")
    out = await g.aafter_tool("a", "fetch", {}, PAGE)
    # the correction in the bus's words: the new text, then a note saying it was replaced
    assert out.startswith("aperture 240 cm\n\n[observation replaced by supervisor: ")
    # the sync form also works while a loop runs (the model call goes to a worker thread)
    assert g.after_tool("a", "fetch", {}, "fine") == "fine"


def test_rule_firings_are_traced(tmp_path: Path) -> None:
    g = Guard(GuardSettings(rules=RuleSettings(loop_limit=1)), trace_dir=tmp_path, run_name="r")
    g.start_run("aperture?")
    g.before_tool("a", "fetch", {})
    reply(g)
    g.before_tool("a", "fetch", {})
    g.after_tool("a", "fetch", {}, PAGE)
    g.end_run()
    (path,) = tmp_path.glob("*.jsonl")
    rules = [e for e in read_trace(path, validate=True) if e["event"] == "rule"]
    assert [e["rule"] for e in rules] == ["loop_breaker", "purification"]
    assert rules[1]["before_chars"] == len(PAGE) > rules[1]["after_chars"]


def test_identical_calls_of_one_reply_are_one_action() -> None:
    g = Guard(GuardSettings(rules=RuleSettings(loop_limit=3)))
    g.start_run("t")
    notes: list[str | None] = []

    def call() -> None:
        notes.append(g.before_tool("a", "fetch", {"url": "x"}))

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(n is None for n in notes) == 1 and g.stats["actions"] == 1
    assert g.stats["same_reply"] == 7 and g.stats["blocked"] == 0  # no refusal counted
    assert g.refusals_acted("a") is None


def test_parallel_tool_calls_of_several_replies_are_counted_once_each() -> None:
    g = Guard(GuardSettings(rules=RuleSettings(loop_limit=3)))
    g.start_run("t")
    notes: list[str | None] = []
    lock = threading.Lock()

    def call() -> None:
        with lock:  # one call per reply
            reply(g)
            notes.append(g.before_tool("a", "fetch", {"url": "x"}))

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(n is None for n in notes) == 3 and g.stats["actions"] == 8


def test_refusals_in_a_row_are_counted_per_agent_and_reset_by_a_run_call() -> None:
    g = Guard(GuardSettings(rules=RuleSettings(loop_limit=1), answer_after_refusals=2))
    g.start_run("t")
    assert g.before_tool("a", "fetch", {"url": "x"}) is None
    reply(g)
    assert g.before_tool("a", "fetch", {"url": "x"}) is not None
    assert g.refusals_acted("a") is None  # one refusal: not yet
    reply(g)
    assert g.before_tool("a", "fetch", {"url": "x"}) is not None
    assert g.refusals_acted("a") == "answer" and g.refusals_acted("b") is None
    g.check_budget("a")  # "answer" closes the tools, it does not stop the run
    assert g.before_tool("a", "fetch", {"url": "new"}) is None  # a call that runs: reset
    assert g.refusals_acted("a") is None


def test_refusals_in_a_row_stop_the_run_at_the_next_model_call() -> None:
    g = Guard(GuardSettings(rules=RuleSettings(loop_limit=1), on_refusals="stop"))
    g.start_run("t")
    for _ in range(3):
        g.before_tool("a", "fetch", {})
        reply(g)
    with pytest.raises(RunStopped, match="a: 2 tool calls in a row were refused") as info:
        g.check_budget("a")
    assert info.value.stop_reason == "refusals" and g.get().stop_reason == "refusals"
    g.check_budget("b")  # another agent may go on


@pytest.mark.parametrize(
    ("kw", "msg"),
    [({"answer_after_refusals": -1}, "answer_after_refusals"), ({"on_refusals": "x"}, "on_ref")],
)
def test_bad_refusal_settings_are_one_clear_line(kw: dict[str, object], msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        GuardSettings(**kw)  # type: ignore[arg-type]


def test_model_names_from_a_gguf_path_are_their_stem() -> None:
    assert model_label("/root/.cache/overseer/models/qwen2.5-coder-0.5b.Q8_0.gguf") == (
        "qwen2.5-coder-0.5b.Q8_0"
    )
    assert model_label("gpt-4o-mini") == "gpt-4o-mini" and model_label("") == ""


def test_cached_tokens_are_booked_and_capped_by_the_prompt(tmp_path: Path) -> None:
    g = Guard(trace_dir=tmp_path)
    g.start_run("t")
    g.book("a", prompt_tokens=100, completion_tokens=5, cached_tokens=60, model="x/m.gguf")
    g.book("a", prompt_tokens=10, completion_tokens=5, cached_tokens=99)
    assert g.ledger.total.cached_prompt_tokens == 70
    assert g.ledger.entries[0].model == "m"
    g.end_run("done")
    (path,) = tmp_path.glob("*.jsonl")
    end = list(read_trace(path, validate=True))[-1]
    assert end["usage"]["cached_input_tokens"] == 70
