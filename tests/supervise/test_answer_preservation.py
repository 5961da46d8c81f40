"""Issue 39: cut the waste, keep the answer, checked without a model where the gold is known.

1. Stripping keeps every complete fact-table row of a raw page (or of a viewport) as a
   `label: value` line, whatever the markup around it: every page kind, both corpora
   (development seed 29, held-out seeds 30 and 31), the page whole and each viewport.
2. For every intervention of the rule tier on the browse suite (purification, masking,
   a refused repeat, the tools closed), the gold row that was visible in the researcher's
   request before it is still visible in its next request: a researcher that visits the
   page, pages down to the table, then repeats itself until overseer closes its tools.
   No note overseer writes may be taken for an answer either (`copies_note`).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overseer.bench._workloads import workload_team
from overseer.models import ScriptedModel
from overseer.runtime import Executor
from overseer.runtime.steps import CLOSED_NOTE, copies_note
from overseer.supervise._markup import strip_markup, table_rows
from overseer.supervise.rules import rule_plugins
from overseer.tasks import load_suite
from overseer.tasks._browse_calibrated import VIEWPORT_CHARS, build_items

CORPORA = (29, 30, 31)


@settings(max_examples=60, deadline=None)
@given(seed=st.sampled_from(CORPORA), k=st.integers(0, 59), cut=st.integers(0, 5000))
def test_stripping_keeps_every_table_row(seed: int, k: int, cut: int) -> None:
    html = build_items(60, seed)[k].page.html
    rows = table_rows(html)
    assert len(rows) == 3  # the generator writes three facts per page
    for text in (html, html[cut : cut + VIEWPORT_CHARS], html[:cut] + html[cut + 7 :]):
        body = strip_markup(text) or text
        for row in table_rows(text):
            assert row in body, (seed, k, cut, row)


def test_a_tag_cut_before_its_end_does_not_swallow_the_table() -> None:
    html = (
        '<nav><ul><li class="nav</ul></nav><main><p>Some words here.</p><table>'
        '<tr><th scope="row">Opened</th><td class="val">2010</td></tr></table></main>'
        "<p>" + "More text. " * 20 + "</p>"
    )
    assert "Opened: 2010" in (strip_markup(html) or "")


def _gold_row(task: Any) -> str:
    """The `label: value` row that answers the task (its page's fact asked)."""
    item = next(
        it for it in build_items(60, task.meta["corpus_seed"]) if it.page.url == task.meta["url"]
    )
    return next(r for r in table_rows(item.page.html) if r.startswith(f"{item.label}:"))


def _researcher(url: str, depth: int) -> Any:
    """Visit, page down to the table, then repeat the last call until the tools close."""
    plan = [("visit", {"url": url})] + [("page_down", {})] * (depth - 1)
    plan += [plan[-1]] * 4  # the repeats overseer refuses

    def reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
        done = sum(m["role"] == "assistant" for m in messages)
        closed = "say that you could not find it" in messages[-1]["content"]
        if closed or done >= len(plan):
            return {"thought": "done", "action": "answer", "answer": "unknown"}
        tool, args = plan[done]
        return {"thought": "next", "action": tool, "args": args}

    return reply


@pytest.mark.parametrize("suite", ["browse@29", "browse@30", "browse@31"])
async def test_every_intervention_keeps_the_gold_row_in_view(suite: str, tmp_path: Any) -> None:
    kept = checked = 0
    for task in load_suite(suite, split="all", limit=20):
        gold = _gold_row(task)
        model = ScriptedModel(
            lambda m: {"thought": "t", "action": "answer", "answer": "x"},
            by_actor={"researcher": _researcher(task.meta["url"], task.meta["depth"])},
        )
        env = task.meta["environment"]()
        team, _ = workload_team(task)
        await Executor(
            model, supervisors=rule_plugins(), tools=env.tools, trace_dir=tmp_path, max_steps=8
        ).run(team, task.prompt)
        asks = [c["messages"] for c in model.calls if c.get("actor") == "researcher"]
        seen = False
        for before, after in itertools.pairwise(asks):
            seen = seen or gold in json.dumps(before)
            if seen:
                checked += 1
                kept += gold in json.dumps(after)
                assert gold in json.dumps(after), (task.id, gold)
        assert seen, (task.id, "the table was never in view")
        assert "could not find it" in asks[-1][-1]["content"]  # the repeats closed the tools
    assert checked > 0 and kept == checked


def test_overseer_s_own_words_are_no_answer() -> None:
    refusal = "[overseer] Not run again: visit(...) ran twice in this task."
    assert copies_note("Your tool calls were refused, so the tools are closed now.", [CLOSED_NOTE])
    assert copies_note("[overseer] Not run again", [refusal])
    assert not copies_note("377", [refusal, CLOSED_NOTE])
    assert not copies_note("The museum opened in 2010.", [refusal, CLOSED_NOTE])


def test_a_viewport_of_prose_with_one_table_row_is_still_stripped() -> None:
    """Found by the property above (seed 30, page 26, cut 1009): a viewport starting inside a
    table, mostly filler prose, had too little markup to be stripped, so its last row stayed
    as HTML; a complete row now always counts as markup worth stripping."""
    html = build_items(60, 30)[26].page.html[1009 : 1009 + VIEWPORT_CHARS]
    body = strip_markup(html)
    assert body is not None and "Spans: 23" in body
