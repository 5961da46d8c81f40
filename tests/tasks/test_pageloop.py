"""The generated page-and-loop tasks: counts, determinism, the fact on every page, the tools'
traps, the scorer, and the fact kept by the rule tier's purification (no model)."""

from __future__ import annotations

import re

import pytest

from overseer.integrations.guard import Guard
from overseer.tasks.pageloop import (
    DEV_SEED,
    FAILURE,
    HELDOUT_SEEDS,
    PAGE_CHARS,
    TRAP,
    PageTask,
    PageTools,
    ToolFailure,
    load_pageloop,
    make_tasks,
    score_answer,
)

SEEDS = (DEV_SEED, *HELDOUT_SEEDS, 97)  # 97: a seed nobody chose, as a reviewer's


def stated(t: PageTask) -> bool:
    """Whether the page states the gold fact under its label (in the table or a sentence)."""
    unit = r"(?: [a-z]+)?"
    if t.form == "table":
        pat = rf'<th scope="row">{re.escape(t.label)}</th><td class="val">{t.answer}{unit}</td>'
    else:
        pat = rf"{re.escape(t.label)}: {t.answer}{unit}[;.]"
    return len(re.findall(pat, t.page)) == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_count_ids_titles_and_page_lengths(seed: int) -> None:
    tasks = make_tasks(40, seed)
    assert len(tasks) == 40
    assert [t.id for t in tasks] == [f"pageloop/{seed}/{i}" for i in range(40)]
    assert len({t.url for t in tasks}) == 40
    assert all(PAGE_CHARS[0] <= len(t.page) <= PAGE_CHARS[1] for t in tasks)
    assert {t.form for t in tasks} == {"table", "sentence"}
    assert all(t.url in t.prompt and "fetch_page" in t.prompt for t in tasks)


def test_same_seed_same_tasks_and_a_prefix_for_fewer() -> None:
    a, b = make_tasks(12, DEV_SEED), make_tasks(12, DEV_SEED)
    assert a == b
    assert make_tasks(5, DEV_SEED) == a[:5]
    other = make_tasks(12, HELDOUT_SEEDS[0])
    assert not {t.page for t in a} & {t.page for t in other}


def test_the_generator_is_not_the_browse_suites_of_the_same_seed() -> None:
    from overseer.tasks._browse_calibrated import build_items

    titles = {it.page.title for it in build_items(60, DEV_SEED)}
    pages = make_tasks(20, DEV_SEED)
    assert sum(t.url.rsplit("/", 1)[1].replace("_", " ") in titles for t in pages) <= 2


@pytest.mark.parametrize("seed", SEEDS)
def test_the_fact_is_stated_once_on_every_page(seed: int) -> None:
    tasks = make_tasks(40, seed)
    assert all(stated(t) for t in tasks), [t.id for t in tasks if not stated(t)]
    # it sits inside the page, never in its first or last tenth
    for t in tasks:
        at = t.page.find(t.label + "</th>") if t.form == "table" else t.page.find(t.label + ":")
        assert 0.05 * len(t.page) < at < 0.95 * len(t.page), t.id


def test_tools_are_the_traps_and_count_their_calls() -> None:
    task = make_tasks(1)[0]
    tools = PageTools(task)
    assert tools.fetch_page(task.url) == task.page
    assert tools.next_page(2) == tools.next_page(3) == TRAP
    snippets = tools.search("anything")
    assert snippets == tools.search(task.question) and task.url in snippets
    assert task.answer not in re.findall(r"\d+", snippets.split(task.url, 1)[1].split("\n")[1])
    with pytest.raises(ToolFailure, match="unreachable"):
        tools.cached_copy(task.url)
    assert FAILURE.startswith("cached_copy")
    assert dict(tools.ran) == {"fetch_page": 1, "next_page": 2, "search": 2, "cached_copy": 1}
    assert [f.__name__ for f in tools.functions()] == [
        "fetch_page",
        "next_page",
        "search",
        "cached_copy",
    ]


def test_the_scorer_reads_the_stated_number() -> None:
    task = make_tasks(1)[0]
    assert score_answer(task, f"The answer is {task.answer}.").correct
    assert score_answer(
        task, f"It says {task.answer}{' m' if 'metres' in task.question else ''}"
    ).correct
    assert not score_answer(task, f"The answer is {int(task.answer) + 1}.").correct
    assert not score_answer(task, "").correct and not score_answer(task, None).correct
    assert score_answer(task, None).detail == "no answer"
    records = load_pageloop(3)
    assert [r.id for r in records] == [t.id for t in make_tasks(3)]
    assert records[0].kind == "numeric" and records[0].answer == task.answer


@pytest.mark.parametrize("bad", [0, -1, 501, 2.5, True, "3"])
def test_bad_counts_fail_with_one_line(bad: object) -> None:
    with pytest.raises(ValueError, match=r"expected n an integer in \[1, 500\]") as info:
        make_tasks(bad)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


def test_a_bad_seed_fails_with_one_line() -> None:
    with pytest.raises(ValueError, match="expected an integer seed, got 'x'"):
        make_tasks(1, "x")  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", SEEDS)
def test_purification_keeps_the_fact_the_question_asks_for(seed: int) -> None:
    """What the rule tier shows of each page (as every framework adapter and the proxy apply
    it) is a short extract that still states the gold fact under its label."""
    for t in make_tasks(25, seed):
        guard = Guard()
        run = guard.open(t.prompt)
        shown = run.after_tool("researcher", "fetch_page", {"url": t.url}, t.page)
        guard.end_run(run=run)
        assert len(shown) < len(t.page) // 5, t.id
        assert re.search(rf"{re.escape(t.label)}\W+{t.answer}\b", shown), (t.id, shown[:400])


@pytest.mark.parametrize(
    ("answer", "right"),
    [
        ("I could not find the answer: the tool results I read do not show it.", True),
        ("The page https://wiki.local/X does not hold the answer.", True),  # a note's words
        ("The page does not have its height.", True),
        ("The page does not hold the answer; it is about 120 m.", False),  # a value: invented
        ("The lighthouse is located in the city of Guangzhou, China.", False),  # says nothing
        ("", False),
    ],
)
def test_an_unanswerable_task_is_right_when_it_says_so_and_states_no_value(
    answer: str, right: bool
) -> None:
    task = make_tasks(1, DEV_SEED, kind="failing")[0]
    assert score_answer(task, answer).correct is right
