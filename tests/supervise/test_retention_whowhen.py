"""Purification on real agents' observations (issue 48 item 4), without a model.

Who&When's hand-crafted logs are the development subset (docs/evidence/retention.md): where an
observation the rule tier cuts holds the run's gold answer, the extract keeps it at least as
often as it did when this test was written, and page metadata (meta tags, JSON-LD) is never
kept while body text is cut, unless the question asks about metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

from overseer.supervise._extract import extract
from overseer.supervise._markup import chrome_lines
from overseer.supervise.rules import RuleSettings
from overseer.traces import load_whowhen

# benchmarks/retention.py on the hand-crafted logs (the development share; 2c788e7: 10 of 13,
# the three lost hold the gold only in structured data, out of reach: docs/evidence/retention.md)
DEV_SHARE = 10 / 13


@pytest.fixture(scope="module")
def retention(benchmark_script: Callable[[str], ModuleType]) -> ModuleType:
    return benchmark_script("retention")


@pytest.fixture(scope="module")
def cases(retention: ModuleType) -> list:
    return [c for t in load_whowhen("hand") for c in retention.cut_observations(t, RuleSettings())]


def test_the_gold_is_kept_as_often_as_on_the_development_logs(cases: list) -> None:
    gold = [c for c in cases if c.gold]
    assert len(gold) >= 10  # the share is over enough observations to mean something
    assert sum(not c.lost for c in gold) / len(gold) >= DEV_SHARE - 1e-9
    assert sum(c.kept_chars for c in gold) <= 0.3 * sum(c.chars for c in gold)


def test_agentdojo_gold_is_cut_into_values(retention: ModuleType) -> None:
    assert retention.gold_values("Le Baratin, 30.0, New Asiaway, 30.0") == [
        "le baratin", "30 0", "new asiaway"
    ]  # fmt: skip
    assert retention.gold_values("1. 463820 2. https://x.org/reset") == [
        "463820",
        "https x org reset",
    ]
    assert retention.gold_values("a.b@x.com c.d@y.org") == ["a b x com", "c d y org"]
    assert retention.gold_values("1. 3 2. ") == [] and retention.gold_values("") == []


def test_metadata_is_not_kept_ahead_of_body_text(retention: ModuleType, cases: list) -> None:
    """On every cut observation whose body alone (its lines that are no metadata, stripped) is
    over twice the budget (so body text was cut), no metadata is kept, not even the text of
    its structured data; the real pages carry meta-tag blocks at their top. (The page's
    indentation is not body: hand-20's 1,021 characters of screen text sit beside 3,000 of
    the metadata block's indentation, and were all kept.)"""
    logs = {t.id: t for t in load_whowhen("hand")}
    checked = 0
    for c in cases:
        text = logs[c.log].steps[c.step].text
        meta = set(retention.metadata_lines(text))
        body = sum(len(x) for x in map(str.strip, text.splitlines()) if x not in meta)
        if meta and body > 2 * RuleSettings().purify_keep:
            assert c.meta_chars == 0, (c.log, c.step)
            checked += 1
    assert checked >= 20
    assert sum(c.meta_chars for c in cases) <= 0.01 * sum(c.kept_chars for c in cases)


PAGE = (
    "Here is a screenshot of [Holra Lighthouse](https://example.org/holra).\n"
    "The following metadata was extracted from the webpage:\n\n{\n"
    '    "meta_tags": {\n'
    '        "viewport": "width=device-width, initial-scale=1",\n'
    '        "robots": "index, follow",\n'
    '        "og:title": "Holra Lighthouse - history and height",\n'
    '        "twitter:description": "The Holra Lighthouse, its history and its height."\n'
    "    }\n}\n\n"
    "We use cookies to improve your experience. Accept all cookies or manage preferences.\n\n"
    + "The harbour council met again to discuss the ferry timetable. " * 40
    + "\n\nThe Holra Lighthouse is 37 m tall and was built in 1902.\n"
)


def test_chrome_lines_are_meta_tags_banners_and_menus_not_body() -> None:
    lines = PAGE.splitlines()
    chrome = {ln.strip() for ln, c in zip(lines, chrome_lines(lines), strict=True) if c}
    assert '"robots": "index, follow",' in chrome and "{" in chrome
    assert any(ln.startswith('"og:title"') for ln in chrome)
    assert any(ln.startswith("We use cookies") for ln in chrome)
    assert not any("37 m tall" in ln or "screenshot" in ln for ln in chrome)
    assert chrome_lines(["Home", "Sign in", "Home prices rose 4% in May."]) == [True, True, False]
    block = ["**Top Navigation:**", "- Microsoft Bing", "- Icon: Person (Sign in)", "", "Body."]
    assert chrome_lines(block) == [True, True, True, False, False]
    assert chrome_lines(["Menu", "Grilled trout with herbs, 18 dollars"]) == [True, False]


def test_metadata_is_kept_only_when_the_question_asks_for_it() -> None:
    out = extract(PAGE, "How tall is the Holra Lighthouse? history height", 500)
    assert "37 m tall" in out
    assert "og:title" not in out and "twitter:" not in out and "cookies" not in out
    asked = extract(PAGE, "What is the og:title meta tag of the Holra Lighthouse page?", 500)
    assert '"og:title": "Holra Lighthouse - history and height",' in asked


ARTICLE = (
    "Here is a screenshot of [Holra Lighthouse](https://example.org/holra). The viewport shows"
    " 3% of the webpage.\nThe following metadata was extracted from the webpage:\n\n{\n"
    '    "jsonld": [\n        "{\\"@type\\": \\"Article\\", \\"articleBody\\": \\"The harbour'
    " has three piers.&nbsp;The Holra Lighthouse is 37 m tall and was built in 1902.<br>"
    'Its lamp was electrified in 1931.\\"}"\n    ],\n'
    '    "meta_tags": {\n'
    '        "description": "The Holra Lighthouse, its history and how tall it is today.",\n'
    + "".join(f'        "og:image:{i}": "https://example.org/{"z" * 60}.png",\n' for i in range(40))
    + '        "robots": "index, follow"\n    }\n}\n\n'
    "Sign in\n\nHolra Lighthouse\n\nA history of the lighthouse on the harbour.\n"
)


def test_structured_data_text_is_read_after_the_body_never_the_meta_tags() -> None:
    """A page whose screen shows only its top: the JSON-LD article's sentence that answers is
    kept, decoded and printed after the body; the meta tags' description is not."""
    out = extract(ARTICLE, "How tall is the Holra Lighthouse?", 600)
    assert "The Holra Lighthouse is 37 m tall and was built in 1902." in out
    assert out.index("A history of the lighthouse") < out.index("37 m tall")
    assert "its history and how tall it is today" not in out and "robots" not in out
    assert "&nbsp;" not in out and "<br>" not in out


def test_structured_data_text_waits_for_the_body() -> None:
    """When the body does not fit, no structured data's text is kept."""
    body = "\n\n".join(
        f"The Holra Lighthouse keeper logged storm {i} at the pier." for i in range(40)
    )
    out = extract(ARTICLE.replace("A history of the lighthouse on the harbour.", body),
                  "How tall is the Holra Lighthouse? storm keeper", 600)  # fmt: skip
    assert "37 m tall" not in out and "keeper logged storm" in out
