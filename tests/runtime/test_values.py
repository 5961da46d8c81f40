"""Which values a tool result supports as an answer (issue 48): labelled facts and sentences
naming what the question names, never filler prose; and the team agent's answer, once overseer
closed its tools, replaced by "could not find it" when it still states a value nothing it read
supports after the re-ask."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from overseer.models import ScriptedModel
from overseer.runtime import AgentSpec, Executor, TeamSpec, ToolResult
from overseer.runtime.steps import (
    NOT_FOUND_ANSWER,
    TurnPolicy,
    question_names,
    supported_numbers,
)

from .test_tool_hooks import Refuser, fetch

QUESTION = "How tall is the Ashfen Lighthouse? Its page is https://wiki.local/Ashfen_Lighthouse"
PAGE = (
    "Ashfen Lighthouse\nOpened: 1871\nThe Ashfen Lighthouse is 42 m tall.\n"
    "The tradition season local council history was mentioned 7 times in older accounts."
)


def test_question_names_leave_out_sentence_openers_and_addresses() -> None:
    assert question_names(QUESTION) == {"ashfen", "lighthouse"}
    assert question_names("how many? what is it") == set()


def test_facts_and_sentences_naming_the_subject_support_a_value_filler_does_not() -> None:
    assert supported_numbers(PAGE, QUESTION) == {"42"}  # "Opened" is not what "tall" asks
    assert supported_numbers(PAGE, "When was the Ashfen Lighthouse opened?") == {"1871", "42"}
    assert supported_numbers("fetch: the server is unreachable (HTTP 503).", QUESTION) == set()
    # a question that names nothing: every number read counts
    assert supported_numbers(PAGE, "how tall is it?") == {"1871", "42", "7"}


@pytest.mark.parametrize(
    ("page", "value"),
    [
        ("Holquarow Bridge\nOpened: 1929\nSpans: 30", None),
        ("<table><tr><th>Spans</th><td>30</td></tr><tr><th>Length</th><td>412 m</td></tr>", "412"),
        ("<p>The fact sheet of the Holquarow Bridge lists: Opened: 1929; Spans: 30.</p>", None),
        ("<p>The Holquarow Bridge lists: Opened: 1929; Length: 412 m; Spans: 30.</p>", "412"),
    ],
)
def test_a_fact_of_another_label_is_a_distractor_not_support(page: str, value: str | None) -> None:
    question = "How long is the Holquarow Bridge, in metres? Open its page and answer."
    assert supported_numbers(page, question) == ({value} if value else set())


def test_a_tag_cut_short_does_not_swallow_the_text_after_it() -> None:
    page = '<nav><a class="nav-lin</nav><main><p>The Rowmer Museum holds 1734 exhibits.</p>'
    assert "1734" in supported_numbers(page, "How many exhibits does the Rowmer Museum hold?")


def test_settle_replaces_only_an_unsupported_value_once_the_tools_closed() -> None:
    seen = supported_numbers(PAGE, QUESTION)
    turns = TurnPolicy()
    assert turns.settle("It is 7 m tall.", QUESTION, seen) == NOT_FOUND_ANSWER
    assert turns.settle("It is 42 m tall.", QUESTION, seen) is None
    assert turns.settle("It is 7 m tall.", QUESTION, None) is None  # tools open: not checked
    assert TurnPolicy(replace_unsupported=False).settle("It is 7.", QUESTION, seen) is None
    assert not any(c.isdigit() for c in NOT_FOUND_ANSWER)  # it states no value of its own


class Page:
    name = "fetch"
    description = "fetch a page"
    parameters: Mapping[str, Any] = {"type": "object", "properties": {"url": {"type": "string"}}}
    kind: Literal["tool", "memory"] = "tool"

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        return ToolResult(PAGE)


@pytest.mark.parametrize(("said", "stands"), [("7", False), ("42", True)])
async def test_a_team_agent_closed_by_refusals_keeps_only_a_supported_answer(
    tmp_path: Path, said: str, stands: bool
) -> None:
    answer = {"thought": "", "action": "answer", "answer": said}
    model = ScriptedModel([fetch("a"), fetch("b"), fetch("b"), answer, answer])
    team = TeamSpec(agents=[AgentSpec(name="a", tools=["fetch"])], decision="last")
    res = await Executor(
        model, supervisors=[Refuser()], tools={"fetch": Page()}, trace_dir=tmp_path, max_steps=6
    ).run(team, QUESTION)
    assert res.answer == (said if stands else NOT_FOUND_ANSWER)
    assert len(model.calls) == (4 if stands else 5)  # asked again once before it is replaced


HTML_PAGE = (
    "<html><head><style>.x{width:120px}</style></head><body><nav><a href='/w/1'>Ashfen "
    "Lighthouse</a> <a data-pos='6'>Other</a></nav><main><h1>Ashfen Lighthouse</h1>"
    "<p>The harbour council history was mentioned 347 times in older accounts.</p>"
    "<table><tr><th>Height</th><td>42 m</td></tr><tr><td>Opened</td><td>1871</td></tr>"
    "</table></main></body></html>"
)


def test_an_html_page_is_read_as_the_text_it_shows() -> None:
    """The page's title does not lend its name to the filler after it (issue 48: '347' from
    'mentioned 347 times' stood on a page whose <h1> named the museum); table rows are facts;
    numbers in tags and styles are not read; the row of another label is no support."""
    assert supported_numbers(HTML_PAGE, QUESTION) == {"42"}


def test_a_tool_call_written_as_text_is_told_from_an_answer() -> None:
    from overseer.runtime._turns import written_call

    for call in (
        "Calling tools:\n[{'id': 'c1', 'type': 'function', 'function': {'name': 'search', "
        "'arguments': {'query': 'Belkir Observatory'}}}]",
        '{"name": "search", "arguments": {"query": "collection festival"}}',
        '[{"function": {"name": "fetch_page", "arguments": "{}"}}]',
    ):
        assert written_call(call), call
    for answer in (
        "It costs $85.",
        '{"answer": "1990"}',
        "The search tool's arguments were wrong, so I could not find it.",
        "calling tools is not possible now",
    ):
        assert not written_call(answer), answer
