"""The grounding rule (issue 39's BACK losses): an answer that is the agent's guess from
before it read is given the value its notes since reading took from a page, and nothing else
is touched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from overseer.models import ScriptedModel
from overseer.runtime import AgentSpec, Executor, TeamSpec, read_trace
from overseer.supervise._grounding import (
    Reading,
    fact_numbers,
    numbers,
    regrounded,
    swap_number,
)
from overseer.supervise.rules import RuleSettings, rule_plugins

from .test_supervisor import FakeTool, is_supervisor

PAGE = "Rahol Bridge\nOpened: 1992\nLength: 310 m\nThe bridge carries two lanes."


def reading(guess: str, page: str, *later: str) -> Reading:
    r = Reading()
    r.thought(guess)
    r.observed(page)
    for t in later:
        r.thought(t)
    return r


def test_numbers_are_tokens_without_separators() -> None:
    assert numbers("It opened in 1,992 (or 1992.5), v2 and 3.") == {"1992", "1992.5", "3"}


def test_the_guess_before_reading_is_replaced_by_the_value_read() -> None:
    r = reading("The bridge opened in 1965.", PAGE, "The page says it opened in 1992.")
    assert regrounded("1965", r) == ("1965", "1992")
    assert swap_number("It opened in 1965.", "1965", "1992") == "It opened in 1992."


@pytest.mark.parametrize(
    ("answer", "r"),
    [
        ("1992", reading("It opened in 1965.", PAGE, "It opened in 1992.")),  # right already
        ("1965", reading("It opened in 1965.", PAGE + " Renovated 1965.", "1992")),  # on a page
        ("1965", reading("It opened in 1965.", PAGE, "Maybe 1965 after all.")),  # kept since
        ("1965", reading("No idea yet.", PAGE, "It opened in 1992.")),  # not a guess
        ("1965", reading("It opened in 1965.", PAGE, "1992 and 310 m.")),  # two candidates
        ("1965", reading("It opened in 1965.", PAGE, "I should read more.")),  # nothing read
        ("1965 or 1970", reading("1965 or 1970", PAGE, "1992")),  # two numbers answered
        ("about then", reading("1965", PAGE, "1992")),  # no number answered
        ("1965", Reading(guessed={"1965"})),  # never shown anything
        # issue 48: a number from filler prose is never handed over, only a labelled fact
        ("1965", reading("1965", "Rahol Bridge was mentioned 592 times in older accounts.", "592")),
        ("1965", reading("1965", PAGE + "\nIt was mentioned 592 times.", "Maybe 592.")),
    ],
)
def test_anything_but_the_exact_pattern_is_left_alone(answer: str, r: Reading) -> None:
    assert regrounded(answer, r) is None


@given(st.text(max_size=200), st.text(max_size=200), st.text(max_size=200), st.text(max_size=60))
def test_a_regrounded_value_is_always_one_the_agent_read_and_wrote(
    guess: str, page: str, later: str, answer: str
) -> None:
    r = reading(guess, page, later)
    found = regrounded(answer, r)
    if found is not None:
        old, new = found
        assert old in numbers(guess) and old not in numbers(page)
        assert new in fact_numbers(page) and new in numbers(later)


def test_labelled_facts_are_read_from_lines_rows_and_fact_sentences() -> None:
    assert fact_numbers(PAGE) == {"1992", "310"}
    assert fact_numbers("| Height | 55 m |") == {"55"}
    assert fact_numbers("The fact sheet lists: Height: 55 m; Built: 1,871.") == {"55", "1871"}
    assert fact_numbers("It was mentioned 592 times in 1990 accounts.") == set()


def team() -> TeamSpec:
    return TeamSpec(
        agents=[
            AgentSpec(name="researcher", tools=["visit"]),
            AgentSpec(name="writer"),
        ],
        spatial_edges=[("researcher", "writer")],
        decision="last",
    )


def scripted(final: str, seen: list[str]) -> Any:
    """A researcher that guesses 1965, reads the page, notes 1992, reads again, then answers
    `final` with its first guess in its thought (as qwen 0.5B did in the BACK losses);
    a writer that repeats the first number of what it reads."""

    def reply(messages: list) -> object:
        if is_supervisor(messages):
            raise AssertionError("the supervisor model should not be asked")
        text = "\n".join(str(m["content"]) for m in messages)
        if "- visit:" in text:  # the researcher
            step = text.count("Observation from visit")
            if step == 0:
                return {"thought": "It opened in 1965.", "action": "visit", "args": {"q": "R"}}
            if step == 1:
                return {"thought": "The page says 1992.", "action": "visit", "args": {"q": "RB"}}
            return {"thought": "It opened in 1965.", "action": "answer", "answer": final}
        said = "\n".join(str(m["content"]) for m in messages if m["role"] == "user")
        seen.append(said)
        first = sorted(numbers(said), key=said.find)
        return {"thought": "", "action": "answer", "answer": first[0] if first else "?"}

    return reply


@pytest.mark.parametrize(("grounding", "final", "expected"), [
    (True, "1965", "1992"),  # the guess is replaced by what the researcher read
    (False, "1965", "1965"),  # the rule switched off
    (True, "1992", "1992"),  # a grounded answer stands
])  # fmt: skip
async def test_a_team_run_gives_the_writer_the_value_read(
    tmp_path: Path, grounding: bool, final: str, expected: str
) -> None:
    seen: list[str] = []
    rules = RuleSettings(grounding=grounding)
    res = await Executor(
        ScriptedModel(scripted(final, seen)),
        supervisors=rule_plugins(rules),
        tools={"visit": FakeTool([(PAGE, None)], name="visit")},
        trace_dir=tmp_path,
    ).run(team(), "When did the Rahol Bridge open?")
    assert res.answer == expected
    assert ("1965" in seen[-1]) == (expected == "1965")  # the note holds no number of its own
    fired = [e for e in read_trace(res.trace_path) if e["event"] == "rule"]
    assert [e["rule"] for e in fired if e["rule"] == "grounding"] == (
        ["grounding"] if expected != final else []
    )
