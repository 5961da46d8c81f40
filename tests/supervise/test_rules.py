"""The rule tier on scripted steps: loop breaker, extractive purification, masking, budgets."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overseer.supervise.filters import Step
from overseer.supervise.rules import (
    Blocked,
    RuleSettings,
    RuleTier,
    ToolRecord,
    extract,
    mask_stub,
)
from overseer.supervise.rules._logic import same_output


def call(args: str = '{"url": "https://a.org/x", "page": 1}', *, agent: str = "a", **kw) -> Step:
    return Step(agent=agent, subtask="s", kind="tool", tool="web_fetch", args=args, **kw)


# --- loop breaker -------------------------------------------------------------------------


def test_loop_breaker_blocks_the_next_identical_action_even_with_reordered_json() -> None:
    tier = RuleTier(RuleSettings(loop_limit=2))
    assert tier.before_action(call()) is None
    tier.after_observation(call(observation="Try again later."), local_task="t")
    assert tier.before_action(call('{"page": 1,  "url": "https://a.org/x"}')) is None
    blocked = tier.before_action(call('{"page":1,"url":"https://a.org/x"}'))
    assert isinstance(blocked, Blocked)
    assert "twice" in blocked.note and "web_fetch" in blocked.note
    assert "shown above" in blocked.note  # it points to the output ...
    assert "Try again later." not in blocked.note  # ... and never re-quotes it (issue 39)
    assert blocked.firing.rule == "loop_breaker" and blocked.firing.agent == "a"
    assert tier.counts["loop_breaker"] == 1 and tier.firings == [blocked.firing]


def test_loop_breaker_counts_per_agent_and_subtask_and_other_args_pass() -> None:
    tier = RuleTier(RuleSettings(loop_limit=1))
    assert tier.before_action(call()) is None
    assert tier.before_action(call(agent="b")) is None  # another agent
    assert tier.before_action(call('{"url": "https://a.org/y"}')) is None  # other args
    other = Step(agent="a", subtask="s2", kind="tool", tool="web_fetch", args=call().args)
    assert tier.before_action(other) is None  # another sub-task
    assert tier.before_action(call()) is not None


def test_loop_breaker_sees_identical_code_and_can_be_switched_off() -> None:
    code = Step(agent="a", subtask="s", kind="tool", tool="python", code="print(1)\n")
    tier = RuleTier(RuleSettings(loop_limit=1))
    assert tier.before_action(code) is None
    assert tier.before_action(Step(**{**code.__dict__, "code": "print(1)"})) is not None
    off = RuleTier(RuleSettings(loop_breaker=False, loop_limit=1))
    assert all(off.before_action(code) is None for _ in range(5))
    assert not off.counts


def test_reset_forgets_the_run() -> None:
    tier = RuleTier(RuleSettings(loop_limit=1))
    tier.before_action(call())
    assert tier.before_action(call()) is not None
    tier.reset()
    assert tier.before_action(call()) is None and not tier.counts and not tier.firings


# --- budgets ------------------------------------------------------------------------------


def test_step_budget_blocks_the_step_after_the_budget() -> None:
    tier = RuleTier(RuleSettings(budget_steps=2, loop_breaker=False))
    assert tier.before_action(call('{"q": 1}')) is None
    assert tier.before_action(call('{"q": 2}')) is None
    blocked = tier.before_action(call('{"q": 3}'))
    assert blocked is not None and blocked.firing.rule == "budget"
    assert "answer" in blocked.note
    assert tier.before_action(call('{"q": 1}', agent="b")) is None  # per agent


def test_token_budget_fires_once_when_crossed_and_then_blocks_actions() -> None:
    tier = RuleTier(RuleSettings(budget_tokens=100))
    assert tier.charge("a", "s", 60) is None
    first = tier.charge("a", "s", 60)
    assert first is not None and first.firing.rule == "budget"
    assert tier.charge("a", "s", 10) is not None
    assert tier.counts["budget"] == 1
    assert tier.before_action(call()) is not None
    assert tier.counts["budget"] == 2
    assert tier.charge("b", "s", 99) is None


def test_no_budget_never_blocks() -> None:
    tier = RuleTier()
    assert tier.charge("a", "s", 10**9) is None


@pytest.mark.parametrize(
    "bad",
    [
        {"loop_limit": 0},
        {"mask_keep": -1},
        {"purify_keep": 5000},
        {"budget_tokens": 0},
        {"budget_steps": "3"},
        {"progress_limit": 1},
    ],
)
def test_bad_settings_name_the_setting(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        RuleSettings(**bad)  # type: ignore[arg-type]


def test_enabled_lists_switched_on_rules() -> None:
    on = ("loop_breaker", "masking", "purification", "grounding")
    assert RuleSettings().enabled() == on
    assert RuleSettings(masking=False, grounding=False, budget_steps=3).enabled() == (
        "loop_breaker",
        "purification",
        "budget",
    )


# --- extractive purification --------------------------------------------------------------


def _page(n_filler: int = 40) -> str:
    filler = [
        f"Section {i}. The weather in the valley was mild and the market sold apples and "
        f"pears to visitors who came by train every morning of season {i}."
        for i in range(n_filler)
    ]
    answer = (
        "The Eiffel Tower is 330 metres tall; it was completed in 1889 for the World's Fair, "
        "see https://en.wikipedia.org/wiki/Eiffel_Tower for details."
    )
    body = [*filler[:17], answer, *filler[17:]]
    return "Title: Paris landmarks\nURL: https://example.org/paris\n\n" + "\n\n".join(body)


def test_extract_keeps_the_relevant_passage_metadata_and_numbers_verbatim() -> None:
    page = _page()
    out = extract(page, "How tall is the Eiffel Tower, in metres?", 600)
    assert "Title: Paris landmarks" in out and "URL: https://example.org/paris" in out
    assert "330 metres tall; it was completed in 1889" in out
    assert "https://en.wikipedia.org/wiki/Eiffel_Tower" in out
    assert len(out) < len(page) // 3


def test_extract_adds_nothing_but_its_closing_note() -> None:
    page = _page()
    out = extract(page, "Eiffel Tower height", 800)
    body, note = out.rsplit("\n\n", 1)
    assert re.fullmatch(r"\[overseer: kept the passages most relevant to the task.*\]", note)
    assert not re.search(r"\d", note)  # no number a small model could take for an answer
    for passage in body.split("\n\n"):
        assert passage in page, passage  # every kept passage is verbatim input
    assert out == extract(page, "Eiffel Tower height", 800)  # deterministic
    assert extract("short text", "q", 800) == "short text"


def test_extract_keeps_original_order_and_honours_the_budget() -> None:
    page = _page()
    out = extract(page, "apples pears Eiffel", 1000)
    body = out.rsplit("\n\n", 1)[0]
    positions = [page.index(p) for p in body.split("\n\n")]
    assert positions == sorted(positions)
    assert len(body) <= 1000 + 20


def test_extract_is_fast_on_a_50000_char_page() -> None:
    page = _page(360)
    assert len(page) > 50_000
    t0 = time.perf_counter()
    out = extract(page, "Eiffel Tower height", 1500)
    assert time.perf_counter() - t0 < 2.0
    assert "330 metres tall" in out and len(out) < 2000


def test_extract_uses_the_embedding_hook_when_given() -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        # a toy embedding: the passage mentioning "season 3." is closest to the query
        return np.array(
            [[1.0, 0.0]] + [[1.0, 0.0] if "season 3." in t else [0.0, 1.0] for t in texts[1:]]
        )

    out = extract(_page(), "anything", 300, embed=embed)
    assert calls and calls[0][0] == "anything"
    assert "season 3." in out and "embedding" in out


def test_extract_drops_filler_that_shares_nothing_with_the_task() -> None:
    """Issue 39: filler sentences with numbers (the browse generator's "mentioned 760 times")
    no longer fill the budget; the fact sentence inside the filler paragraph stays."""
    filler = "The harbour council archive records were mentioned 760 times in older accounts. "
    page = (
        "Address: https://wiki.local/Holra_Lighthouse\n\nHolra Lighthouse\n\n"
        + filler * 6
        + "The fact sheet of the Holra Lighthouse lists: Built: 1902; Height: 37 m. "
        + filler * 6
    )
    query = "How tall is the Holra Lighthouse? https://wiki.local/Holra_Lighthouse"
    out = extract(page, query, 600)
    assert "Height: 37 m" in out and "760" not in out
    short = extract(page[:700], query, 700, prune=True)  # within the budget: only pruned
    assert "760" not in short and "Holra Lighthouse" in short
    assert extract("Holra Lighthouse\n\nHeight: 37 m", query, 800, prune=True) == (
        "Holra Lighthouse\n\nHeight: 37 m"
    )


def test_extract_cuts_one_huge_line_into_verbatim_slices() -> None:
    text = "word " * 3000 + "needle 42 here " + "word " * 3000
    out = extract(text, "needle", 400)
    assert "needle 42 here" in out and len(out) < 600


def test_after_observation_purifies_only_long_outputs() -> None:
    tier = RuleTier(RuleSettings(purify_over=3000, purify_keep=800))
    page = _page()
    text, firing = tier.after_observation(call(observation=page), local_task="Eiffel Tower height")
    assert firing is not None and firing.rule == "purification"
    assert firing.before_chars == len(page) and firing.after_chars == len(text) < len(page)
    assert "330 metres" in text
    short, none = tier.after_observation(call(observation="ok"), local_task="t")
    assert (short, none) == ("ok", None)
    off = RuleTier(RuleSettings(purify=False))
    assert off.after_observation(call(observation=page), local_task="t") == (page, None)


# --- masking ------------------------------------------------------------------------------


def test_mask_stubs_older_records_and_counts_each_once() -> None:
    tier = RuleTier(RuleSettings(mask_keep=2))
    recs = [ToolRecord("web_fetch", f'{{"url": "u{i}"}}', "x" * (500 + i)) for i in range(4)]
    shown = tier.mask(recs[:3], agent="a")
    assert shown[0] == mask_stub(recs[0]) and shown[1:] == [recs[1].text, recs[2].text]
    assert tier.counts["masking"] == 1
    shown = tier.mask(recs, agent="a")
    assert shown[:2] == [mask_stub(recs[0]), mask_stub(recs[1])]
    assert tier.counts["masking"] == 2  # recs[0] is not counted again
    assert tier.firings[-1].before_chars == 501


def test_mask_stub_is_one_line_with_tool_and_args_and_no_number_of_its_own() -> None:
    stub = mask_stub(ToolRecord("web_fetch", '{"url": "https://a.org"}', "y" * 50_000))
    assert stub == '[older output of web_fetch({"url": "https://a.org"}) hidden]'
    long = mask_stub(ToolRecord("python", "print(1)\n" * 100, "z" * 9000))
    assert "\n" not in long and len(long) < 160


def test_mask_keeps_short_outputs_and_obeys_the_switch() -> None:
    tier = RuleTier(RuleSettings(mask_keep=0))
    recs = [ToolRecord("t", "{}", "ok"), ToolRecord("t", "{}", "b" * 300)]
    assert tier.mask(recs) == ["ok", mask_stub(recs[1])]
    off = RuleTier(RuleSettings(masking=False, mask_keep=0))
    assert off.mask(recs) == ["ok", "b" * 300] and not off.counts


# --- truthful refusals, progress-free loops, masking that keeps extracts (issues 31, 32) ------


def test_a_refusal_of_a_masked_output_brings_that_output_back_into_view() -> None:
    tier = RuleTier(RuleSettings(loop_limit=2, mask_keep=1))
    page = "The tower is 330 metres tall. " + "Filler. " * 100
    for _ in range(2):
        assert tier.before_action(call()) is None
        assert tier.after_observation(call(observation=page), local_task="t") == (page, None)
    other = ToolRecord("web_fetch", '{"url": "u2"}', "z" * 900)
    records = [ToolRecord("web_fetch", call().args, page)] * 2 + [other]
    assert page not in tier.mask(records, agent="a")  # a repeat, and older than mask_keep
    blocked = tier.before_action(call())
    assert blocked is not None and page not in blocked.note  # the note does not quote it
    refusal = ToolRecord("web_fetch", call().args, blocked.note)
    view = tier.mask([*records, refusal], agent="a")
    assert view.count(page) == 1  # the output the refusal points to is whole again
    assert view[-1] == blocked.note


def test_a_refusal_says_a_failing_call_failed_and_counts_runs_not_refusals() -> None:
    tier = RuleTier(RuleSettings(loop_limit=2))
    nope = call('{"name": "bridge_finder"}')
    for _ in range(2):
        assert tier.before_action(nope) is None
        tier.after_observation(call(nope.args, error="unknown tool bridge_finder"), local_task="")
    notes = [tier.before_action(nope) for _ in range(3)]
    assert all(b is not None and "ran twice" in b.note and "failed" in b.note for b in notes)
    assert notes[2] is not None and "(refused before)" in notes[2].note  # no number (issue 48)
    assert "in your context" not in notes[0].note if notes[0] else False


def _page_call(tier: RuleTier, n: int, reply: str) -> Blocked | None:
    step = call(f'{{"n": {n}}}')
    blocked = tier.before_action(step)
    if blocked is None:
        tier.after_observation(call(step.args, observation=reply), local_task="find the code")
    return blocked


def test_a_progress_free_loop_with_changing_arguments_is_broken() -> None:
    tier = RuleTier(RuleSettings(loop_limit=2))
    trap = "Not here. Call next_page with n+1."
    assert _page_call(tier, 1, trap) is None and _page_call(tier, 2, trap) is None
    blocked = _page_call(tier, 3, trap)
    assert blocked is not None and "same output" in blocked.note
    assert trap not in blocked.note  # a note never quotes tool output (issue 39, item 2)
    assert blocked.firing.rule == "loop_breaker"


def test_paging_that_returns_new_content_is_never_refused() -> None:
    tier = RuleTier(RuleSettings(loop_limit=2))
    pages = [f"Page {n}: " + " ".join(f"w{n}x{i}" for i in range(80)) for n in range(1, 9)]
    assert all(_page_call(tier, n, text) is None for n, text in enumerate(pages, 1))
    assert not tier.counts


def _long_page(seed: int, n_words: int) -> str:
    import random as _random

    rng = _random.Random(seed)
    return " ".join(f"w{rng.randrange(5000)}" for _ in range(n_words))


@pytest.mark.parametrize("n_words", [1_500, 14_000])  # the second over the kept-trigrams size
def test_a_long_page_that_only_changes_its_counter_is_a_progress_free_loop(n_words: int) -> None:
    """Near-equal long outputs (>= 97% word trigrams shared) count as the same output, each
    compared with the last one kept (its trigrams kept, or recomputed for a long one)."""
    tier = RuleTier(RuleSettings(loop_limit=2))
    body = _long_page(1, n_words)
    replies = [f"Result {n} of many. {body}" for n in range(1, 4)]
    assert _page_call(tier, 1, replies[0]) is None and _page_call(tier, 2, replies[1]) is None
    blocked = _page_call(tier, 3, replies[2])
    assert blocked is not None and "same output" in blocked.note


def test_long_pages_of_the_same_size_with_other_words_are_not_the_same_output() -> None:
    tier = RuleTier(RuleSettings(loop_limit=2))
    pages = [_long_page(seed, 1_500) for seed in range(1, 6)]
    assert all(_page_call(tier, n, text) is None for n, text in enumerate(pages, 1))
    assert same_output(pages[0], pages[0].replace(" ", "\n  ")) and not same_output(*pages[:2])


def _trigrams(words: list[str]) -> set[tuple[str, str, str]]:
    return set(zip(words, words[1:], words[2:], strict=False))


def _trigram_verdict(a: str, b: str) -> bool:
    """`same_output` by its definition alone: no early exit (what the bound must agree with)."""
    wa, wb = a.split(), b.split()
    if wa == wb:
        return True
    if min(len(a), len(b)) < 200 or abs(len(a) - len(b)) > 0.05 * max(len(a), len(b)):
        return False
    ga, gb = _trigrams(wa), _trigrams(wb)
    return len(ga & gb) >= 0.97 * max(len(ga), len(gb), 1)


_FEW = ["the", "a", "river", "bridge", "1901", "1902", "opened", "x", "y", "z"]


@settings(max_examples=400, deadline=None)
@given(
    words=st.lists(st.sampled_from(_FEW), min_size=40, max_size=400),
    edits=st.lists(st.tuples(st.integers(0, 399), st.sampled_from(["new", "word", "1903", ""])),
                   max_size=30),
)  # fmt: skip
def test_the_loop_breakers_shortcut_gives_the_verdict_of_the_full_trigram_check(
    words: list[str], edits: list[tuple[int, str]]
) -> None:
    """Near-copies (a few words changed or dropped) and distinct texts: `same_output`, which
    rejects distinct pages by a bound before building trigram sets, agrees with the plain
    definition on every pair."""
    other = list(words)
    for at, word in edits:
        if other:
            other[at % len(other)] = word
    a, b = " ".join(words), " ".join(w for w in other if w)
    assert same_output(a, b) == _trigram_verdict(a, b)
    assert same_output(b, a) == _trigram_verdict(b, a)


def test_the_shortcut_decides_distinct_pages_of_one_vocabulary_without_trigram_sets() -> None:
    """Two pages of the same common words, each sentence with a number of its own (the proxy
    benchmark's agent outputs): told apart by the words one lacks, no trigram set built."""
    from overseer.supervise.rules._logic import _Shingles

    words = [*_FEW, "spring", "after", "winter", "work", "on", "its", "stone", "arches"]
    rng = np.random.default_rng(3)

    def page() -> str:
        return " ".join(" ".join(rng.choice(words, 12)) + f" {rng.random()}." for _ in range(60))

    a, b = _Shingles(page()), _Shingles(page())
    assert not a.same(b) and not _trigram_verdict(a.text, b.text)
    assert a._grams is None and b._grams is None
    c = _Shingles(a.text.replace(a.words[5], "changed", 1))
    assert c.same(a) and c._grams is not None  # a near-copy: the full check decides


@pytest.mark.parametrize(("changed", "same"), [(6, True), (9, True), (10, False), (40, False)])
def test_the_shortcut_is_exact_near_the_97_percent_line(changed: int, same: bool) -> None:
    """1,000 distinct words, `changed` of them replaced: 3 of 998 trigrams lost per word, so
    9 words changed leave 97.3% shared (the same output) and 10 leave 96.99% (not)."""
    words = [f"w{i}" for i in range(1000)]
    other = [f"new{i}" if i % 50 == 25 and i // 50 < changed else w for i, w in enumerate(words)]
    if changed > 20:
        other = [f"new{i}" if i % 25 == 12 else w for i, w in enumerate(words)]
    a, b = " ".join(words), " ".join(other)
    assert same_output(a, b) is same and _trigram_verdict(a, b) is same


@pytest.mark.parametrize("where", ["start", "spread", "end"])
@pytest.mark.parametrize("k", [2, 3, 30, 33, 34, 35, 36, 40])
def test_the_distinct_word_bound_gives_the_trigram_verdict(k: int, where: str) -> None:
    """`k` distinct words of one 1,000-word page that the other lacks: the bound on distinct
    words (each starts a trigram of its own, but for the last two places) decides as the
    trigram sets do, wherever the words stand."""
    words = [f"w{i}" for i in range(1000)]
    at = {"start": range(k), "spread": range(0, 1000, 1000 // k), "end": range(1000 - k, 1000)}
    lacking = [f"new{i}" if i in set(at[where]) else w for i, w in enumerate(words)]
    a, b = " ".join(lacking), " ".join(words)
    assert same_output(a, b) == _trigram_verdict(a, b)
    assert same_output(b, a) == _trigram_verdict(b, a)


def test_the_same_page_twice_does_not_block_a_third_different_call() -> None:
    tier = RuleTier(RuleSettings(loop_limit=2))
    for _ in range(2):
        assert tier.before_action(call()) is None
        tier.after_observation(call(observation="same page"), local_task="t")
    assert tier.before_action(call('{"url": "https://a.org/other"}')) is None


def test_masking_hides_repeats_at_once_and_keeps_the_purified_extract() -> None:
    tier = RuleTier(RuleSettings(mask_keep=1, purify_over=3000, purify_keep=800))
    extract_, firing = tier.after_observation(call(observation=_page()), local_task="Eiffel")
    assert firing is not None
    raw = ToolRecord("web_fetch", '{"url": "r"}', "r" * 700)
    page = ToolRecord("web_fetch", call().args, extract_)
    later = [ToolRecord("next_page", f'{{"n": {i}}}', "n" * 600 + str(i)) for i in range(3)]
    view = tier.mask([raw, raw, page, *later], agent="a")
    assert view[0] == mask_stub(raw, repeated=True) and view[1] == mask_stub(raw)
    assert view[2] == extract_  # old, but the only copy of what purification kept
    assert view[3:5] == [mask_stub(later[0]), mask_stub(later[1])] and view[5] == later[2].text


def test_an_html_page_is_read_as_text_and_cut_to_the_task() -> None:
    rows = "".join(f"<tr><th>Key {i}</th><td>{i}</td></tr>" for i in range(3))
    filler = "".join(f"<p class='body'>Filler words, nothing, number {i}.</p>" for i in range(40))
    html = (
        "<html><head><title>Holra Lighthouse</title><style>.c{margin:3px}</style></head><body>"
        "<nav><a href='/x'>Home</a></nav><div class='ad-slot'>Cheap flights!</div>"
        f"{filler}<table><tr><th>Height</th><td>37 m</td></tr>{rows}</table>{filler}</body></html>"
    )
    tier = RuleTier(RuleSettings(page_over=1000, page_keep=600))
    out, firing = tier.after_observation(call(observation=html), local_task="Holra height")
    assert firing is not None and "stripped the markup" in firing.detail
    assert "Height: 37 m" in out and "<" not in out.split("[overseer")[0]
    assert "Cheap flights" not in out and "margin" not in out and len(out) < 900
    off = RuleTier(RuleSettings(strip_markup=False))
    assert off.after_observation(call(observation=html), local_task="t")[0] != out


def test_a_stub_of_a_refusal_calls_it_overseer_s_note_not_the_tool_output() -> None:
    tier = RuleTier(RuleSettings(loop_limit=1, mask_keep=0))
    assert tier.before_action(call()) is None
    tier.after_observation(call(observation="x" * 400), local_task="t")
    blocked = tier.before_action(call())
    assert blocked is not None
    stub = mask_stub(ToolRecord("web_fetch", call().args, blocked.note + " " * 200))
    assert stub.startswith("[overseer's earlier note on web_fetch(") and "output" not in stub


def test_extract_cuts_a_heading_that_only_repeats_the_question() -> None:
    """Issue 39 (pageloop seed 29): the page's name as a heading ("Brohar Lighthouse") was
    kept first as the most relevant passage, and a 0.5B model answered it; a passage of the
    question's own words tells the agent nothing. Only pruned (the page within the budget),
    the page comes back whole."""
    filler = "Readers discussed the ferry schedules and the city budget at length. " * 30
    page = f"Brohar Lighthouse\n\nBrohar Lighthouse\n\nBuilt: 1842\n\nHeight: 55 m\n\n{filler}"
    query = "How tall is the Brohar Lighthouse? Its page is https://wiki.local/Brohar_Lighthouse"
    out = extract(page, query, 400)
    assert out.startswith("Built: 1842\n\nHeight: 55 m") and "Brohar Lighthouse" not in out
    assert extract(page, query, 400).count("Height: 55 m") == 1
    said = "The Brohar Lighthouse is 55 m tall."  # the question's words and a new one: kept
    assert said in extract(f"{said}\n\n{filler}", query, 400)
    short = "Brohar Lighthouse\n\nHeight: 55 m"
    assert extract(short, query, 800, prune=True) == short
