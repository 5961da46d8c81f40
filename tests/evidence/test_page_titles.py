"""Every evidence page: its title states its verdict (for a claim page, the verdict computed from
its export), no template line is left, and papers are cited by title, authors, year and arXiv
id, never by a local file name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from overseer.evidence.claims import CLAIMS
from overseer.evidence.export import export_path, read_export
from overseer.evidence.reading import title_verdict

DOCS = Path(__file__).resolve().parents[2] / "docs" / "evidence"
PAGES = sorted(p for p in DOCS.glob("*.md") if not p.name.endswith(".notes.md"))
#: what a title states when it states a verdict: a verdict word or a measured figure
VERDICT = re.compile(
    r"\b(not reproduced|reproduced|inconclusive|untested|beats?|ties?|above|below|met|"
    r"missed|at chance|cut|cost)\b|\d+(\.\d+)?(%|x)\b"
)
SEED_FILE = re.compile(r"seeds/|\b\d{3}_[0-9a-f]{16}\.txt\b")
LEFTOVER = re.compile(r"^(Headline: |TODO|TBD|FIXME)|\{\{|\{claim", re.MULTILINE)
ARXIV = re.compile(r"arXiv:\d{4}\.\d{4,5}")


def verdict_problems(text: str) -> list[str]:
    """What is wrong with a page's text by the rules above (empty: nothing)."""
    title = text.splitlines()[0] if text else ""
    out = []
    if not title.startswith("# ") or not VERDICT.search(title):
        out.append(f"title without a verdict: {title!r}")
    out += [f"a local seed file: {m.group(0)}" for m in SEED_FILE.finditer(text)]
    out += [f"a template line: {m.group(0)!r}" for m in LEFTOVER.finditer(text)]
    for line in text.splitlines():
        if line.startswith("Source: ") and not (
            ARXIV.search(line) and re.search(r'"[^"]+"', line) and re.search(r"\b20\d\d\b", line)
        ):
            out.append(f"a source without title, year and arXiv id: {line[:80]!r}")
    if re.search(r"\barxiv\b(?!:\d)", text, re.IGNORECASE) and not ARXIV.search(text):
        out.append("an arXiv mention without its id")
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_each_page_states_its_verdict_and_cites_papers_properly(page: Path) -> None:
    assert verdict_problems(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("claim", sorted(CLAIMS))
def test_a_claim_pages_title_is_the_verdict_of_its_export(claim: str) -> None:
    data, _ = read_export(export_path(DOCS, claim))
    title = (DOCS / f"{claim}.md").read_text(encoding="utf-8").splitlines()[0]
    assert title == f"# {CLAIMS[claim].title} — {title_verdict(data)}"


def test_the_check_catches_each_fault() -> None:
    good = '# X — inconclusive at this n\n\nSource: "A Paper", A. B. (2025; arXiv:2501.01234).\n'
    assert verdict_problems(good) == []
    bad = [
        "# SupervisorAgent: fewer net tokens at equal accuracy\n",  # the paper's claim as title
        good
        + "Source: Lin et al. 2025, Stop Wasting Your Tokens; seeds/000_345aae12a05ff87c.txt\n",
        good + "\nHeadline: `supervised` vs `baseline`: token ratio.\n",
    ]
    assert [len(verdict_problems(b)) > 0 for b in bad] == [True, True, True]
