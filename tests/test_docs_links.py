"""Every relative link and every file a page names exists: README.md, docs/**/*.md and
examples/README.md. Links are Markdown links (`[text](target)`, anchors checked against the
target page's headings as GitHub makes them); named files are code spans that are repository
paths (`scripts/demo.sh`, `docs/evidence/data/supervise.jsonl.gz`, ...)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [ROOT / "README.md", ROOT / "examples" / "README.md", *(ROOT / "docs").rglob("*.md")]
)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
SPAN = re.compile(r"`([^`\s]+)`")
TOP = ("src/", "docs/", "scripts/", "examples/", "benchmarks/", "tests/", "seeds/", ".ci/")
FILES = ("README.md", "pyproject.toml", "requirements-data.txt")
PLACEHOLDER = re.compile(r"[<>*{}$]|CLAIM|NAME|SIZE|\.\.\.|/N\b|partN|part0N|partNN")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\*|_(?=\w)|(?<=\w)_", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    out: set[str] = set()
    fence = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out


def prose(page: Path) -> str:
    """The page without its fenced code blocks (commands there may name files yet to exist)
    and HTML comments (a page's README row is written relative to the README)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return re.sub(r"<!--.*?-->", "", text, flags=re.S)


def problems(page: Path) -> list[str]:
    text = prose(page)
    found = []
    for m in LINK.finditer(text):
        target = m.group(1) or m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            found.append(f"{page.relative_to(ROOT)}: link to a missing file: {target}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            found.append(f"{page.relative_to(ROOT)}: link to a missing heading: {target}")
    for m in SPAN.finditer(text):
        name = m.group(1).rstrip(".,:;)")
        if not (name.startswith(TOP) or name in FILES) or PLACEHOLDER.search(name):
            continue
        if not (ROOT / name).exists() and not (page.parent / name).exists():
            found.append(f"{page.relative_to(ROOT)}: names a missing file: {name}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_and_named_file_exists(page: Path) -> None:
    assert problems(page) == []


def test_the_check_finds_what_is_missing(tmp_path: Path) -> None:
    page = ROOT / "docs" / "_probe_for_test.md"
    page.write_text(
        "# A title\n\n[ok](cli.md) [gone](nowhere.md) [bad anchor](cli.md#no-such-heading) "
        "[self](#a-title) `scripts/no_such_script.sh` `scripts/setup.sh` `results/x.sqlite`\n"
        "```bash\nbash scripts/in_a_fence.sh `scripts/also_fenced.sh`\n```\n",
        encoding="utf-8",
    )
    try:
        found = problems(page)
    finally:
        page.unlink()
    assert found == [
        "docs/_probe_for_test.md: link to a missing file: nowhere.md",
        "docs/_probe_for_test.md: link to a missing heading: cli.md#no-such-heading",
        "docs/_probe_for_test.md: names a missing file: scripts/no_such_script.sh",
    ]


def test_readme_is_a_front_door() -> None:
    """At most 250 lines, and the quick start holds exactly the two commands."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    quick = text.split("### Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [ln.split("#")[0].strip() for ln in quick.splitlines() if ln.strip()]
    assert commands == ["bash scripts/demo.sh", "bash scripts/test.sh"]
