"""A seeded offline web: long, noisy HTML pages about made-up places, a search engine over them,
and questions whose answers sit in each page's fact table (the browse workload).

Pages are built so that what wastes an agent's tokens happens for real: raw HTML with styles,
scripts, navigation and ads (purification), and facts a few viewports down (page-down loops).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

from overseer.runtime.tools import ToolKind
from overseer.tasks._types import Task

BROWSE_SIZE = 50
BROWSE_SEED = 11
VIEWPORT_CHARS = 3500

_SYL = [
    "har",
    "row",
    "vel",
    "mo",
    "ra",
    "tin",
    "bel",
    "cas",
    "dun",
    "mer",
    "ost",
    "lin",
    "qua",
    "sel",
    "thor",
    "wick",
    "ash",
    "bro",
    "cal",
    "den",
    "fen",
    "gal",
    "hol",
    "kir",
]
_WORDS = [
    "local",
    "council",
    "visitors",
    "season",
    "harbour",
    "stone",
    "northern",
    "archive",
    "records",
    "tradition",
    "restoration",
    "community",
    "festival",
    "weather",
    "coast",
    "survey",
    "collection",
    "regional",
    "history",
    "volunteers",
    "guide",
    "trail",
]

# kind -> (title suffix, [(fact label, question, low, high, unit)]), kept as data
_KINDS_FILE = Path(__file__).parent / "data" / "browse_kinds.json"


@cache
def _kinds() -> dict[str, tuple[str, list[tuple[str, str, int, int, str]]]]:
    """The kinds of page the generator writes, with their facts (checked when read)."""
    raw = json.loads(_KINDS_FILE.read_text(encoding="utf-8"))
    out = {}
    for kind, v in raw.items():
        facts = [(str(f[0]), str(f[1]), int(f[2]), int(f[3]), str(f[4])) for f in v["facts"]]
        if len(facts) != 3 or any(lo >= hi for _, _, lo, hi, _ in facts):
            raise ValueError(f"{_KINDS_FILE}: kind {kind!r}: expected 3 facts with low < high")
        out[kind] = (str(v["title"]), facts)
    return out


@dataclass(frozen=True)
class Page:
    """One page of the offline web: its address, title, raw HTML and the facts it states."""

    url: str
    title: str
    html: str
    text: str  # the visible words, for the search index
    facts: Mapping[str, int]


def _name(rng: random.Random) -> str:
    return "".join(rng.choice(_SYL) for _ in range(rng.randint(2, 3))).capitalize()


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 16))]
    n = rng.randint(2, 900)
    return f"The {' '.join(words)} mentioned {n} times in older accounts.".capitalize()


def _style_rule(rng: random.Random, _i: int) -> str:
    return (
        f".c{rng.randint(100, 999)}{{margin:{rng.randint(0, 40)}px;color:#"
        f"{rng.randint(0, 0xFFFFFF):06x};font-size:{rng.randint(9, 30)}px}}"
    )


def _track_call(rng: random.Random, _i: int) -> str:
    return f"track('ev{rng.randint(0, 99999)}',{{id:{rng.randint(0, 10**6)}}});"


def _nav_link(rng: random.Random, i: int) -> str:
    return (
        f'<li class="nav-item" data-pos="{i}"><a class="nav-link" href="/wiki/'
        f'{_name(rng)}">{_name(rng)}</a></li>'
    )


#: Page chrome made of repeated random items: opening tag, one item, how many, closing tag.
_REPEATED: dict[str, tuple[str, Callable[[random.Random, int], str], int, str]] = {
    "style": ("<style>", _style_rule, 40, "</style>"),
    "script": ("<script>window.dataLayer=[];", _track_call, 45, "</script>"),
    "nav": ('<nav class="top-nav" id="nav"><ul>', _nav_link, 22, "</ul></nav>"),
}


def _noise(rng: random.Random, kind: str) -> str:
    if kind in _REPEATED:
        head, item, n, tail = _REPEATED[kind]
        return head + "".join([item(rng, i) for i in range(n)]) + tail
    if kind == "ad":
        return (
            f'<div class="ad-slot" data-ad="{rng.randint(0, 10**8)}" style="display:block">'
            f'<span class="ad-label">Advertisement</span><a href="https://ads.example/'
            f'{rng.randint(0, 10**6)}">Cheap flights to {_name(rng)}!</a></div>'
        )
    raise ValueError(kind)


@dataclass(frozen=True)
class _Draft:
    """What a page of either browse suite draws first: its title and address, its facts (with
    their questions and drawn values), the fact table and the body paragraphs with four ads."""

    title: str
    url: str
    facts: list[tuple[str, str, int, int, str]]
    values: dict[str, int]
    table: str
    paras: list[str]

    def page(self, rng: random.Random, html: str) -> tuple[Page, str, str]:
        """The page of `html`, one question drawn about it and its answer label."""
        visible = f"{self.title}. " + " ".join(f"{k} {v}" for k, v in self.values.items())
        label, question, *_ = rng.choice(self.facts)
        page = Page(self.url, self.title, html, visible, self.values)
        return page, question.format(t=self.title), label


def _draft(rng: random.Random, paragraphs: tuple[int, int]) -> _Draft:
    """Draw a page's kind, title, fact values and between `paragraphs` body paragraphs."""
    kinds = _kinds()
    kind = rng.choice(sorted(kinds))
    suffix, facts = kinds[kind]
    title = f"{_name(rng)} {suffix}"
    url = f"https://wiki.local/{title.replace(' ', '_')}"
    values = {label: rng.randint(lo, hi) for label, _, lo, hi, _ in facts}
    rows = "".join(
        f'<tr class="row"><th scope="row">{label}</th>'
        f'<td class="val">{values[label]}{unit}</td></tr>'
        for label, _, _, _, unit in facts
    )
    table = f'<table class="infobox" id="facts"><caption>{title}</caption>{rows}</table>'
    paras = [
        f'<p class="body-text">{" ".join(_sentence(rng) for _ in range(3))}</p>'
        for _ in range(rng.randint(*paragraphs))
    ]
    for _ in range(4):
        paras.insert(rng.randrange(len(paras)), _noise(rng, "ad"))
    return _Draft(title, url, facts, values, table, paras)


def make_page(rng: random.Random, i: int) -> tuple[Page, str, str]:
    """A page, plus one question about it and its answer label."""
    d = _draft(rng, (14, 20))
    title, paras = d.title, d.paras
    paras.insert(rng.randint(4, len(paras) - 2), d.table)
    head = f"<head><title>{title}</title>{_noise(rng, 'style')}{_noise(rng, 'script')}</head>"
    cookie = (
        '<div class="cookie-banner" role="dialog"><p>We use cookies to improve your '
        'experience.</p><button class="btn btn-accept" onclick="accept()">OK</button></div>'
    )
    body = (
        f"<body>{_noise(rng, 'nav')}{cookie}<main><h1>{title}</h1>"
        f"<h2>History</h2>{''.join(paras)}</main><footer class='site-footer'>"
        f"{_noise(rng, 'nav')}</footer></body>"
    )
    return d.page(rng, f"<!DOCTYPE html><html>{head}{body}</html>")


def build_corpus(size: int = BROWSE_SIZE, seed: int = BROWSE_SEED) -> list[tuple[Page, str, str]]:
    """The seeded corpus: `size` pages with one question each (titles are unique)."""
    rng = random.Random(seed)
    out: list[tuple[Page, str, str]] = []
    titles: set[str] = set()
    while len(out) < size:
        page, q, label = make_page(rng, len(out))
        if page.title in titles:
            continue
        titles.add(page.title)
        out.append((page, q, label))
    return out


def load_browse_sample(size: int = BROWSE_SIZE, seed: int = BROWSE_SEED) -> list[Task]:
    """Questions answerable only by browsing the offline web (numeric answers)."""
    tasks = [
        Task(
            "browse-sample",
            f"browse-sample/{seed}/{i}",
            f"{q} Find it on its wiki page with the web tools: pages live at "
            f"https://wiki.local/<Title_With_Underscores>; web_search finds others.",
            str(page.facts[label]),
            "numeric",
            meta={
                "corpus_size": size,
                "corpus_seed": seed,
                "url": page.url,
                "environment": partial(BrowseEnvironment, size, seed),
            },
        )
        for i, (page, q, label) in enumerate(build_corpus(size, seed))
    ]
    if len(tasks) != size:
        raise RuntimeError(f"suite browse-sample: built {len(tasks)} tasks, asked {size}")
    return tasks


class BrowserSession:
    """One agent team's browser: search results, the open page and its viewport."""

    def __init__(self, pages: Sequence[Page], viewport_chars: int = VIEWPORT_CHARS) -> None:
        from overseer.runtime.tools import KeywordMemory

        self.pages = {p.url: p for p in pages}
        self._index = KeywordMemory([f"{p.url}\n{p.text}" for p in pages])
        self.viewport_chars = viewport_chars
        self.url: str | None = None
        self.offset = 0

    def search(self, query: str) -> str:
        hits = self._index.search(query, 3)
        if not hits:
            return "No results."
        lines = []
        for h in hits:
            url = h.split("\n", 1)[0]
            lines.append(f"{self.pages[url].title} - {url}")
        return "Search results:\n" + "\n".join(lines)

    def _view(self) -> str:
        assert self.url is not None
        html = self.pages[self.url].html
        n = max(1, -(-len(html) // self.viewport_chars))
        k = self.offset // self.viewport_chars + 1
        chunk = html[self.offset : self.offset + self.viewport_chars]
        end = " (end of page)" if k >= n else ""
        return f"Address: {self.url}\nViewport: {k} of {n}{end}\n{chunk}"

    def visit(self, url: str) -> tuple[str, str | None]:
        url = url.strip()
        if url not in self.pages:
            return "", f"visit: no page at {url!r}; use an address from the search results"
        self.url, self.offset = url, 0
        return self._view(), None

    def page_down(self) -> tuple[str, str | None]:
        if self.url is None:
            return "", "page_down: no page is open; visit one first"
        html = self.pages[self.url].html
        if self.offset + self.viewport_chars < len(html):
            self.offset += self.viewport_chars
        return self._view(), None


@dataclass
class _BrowserTool:
    name: str
    description: str
    parameters: Mapping[str, Any]
    session: BrowserSession
    kind: ToolKind = "tool"

    async def call(self, args: Mapping[str, Any]) -> Any:
        from overseer.runtime import ToolResult

        s = self.session
        if self.name == "web_search":
            q = args.get("query")
            if not isinstance(q, str) or not q.strip():
                return ToolResult("", "web_search: expected a non-empty 'query' string")
            return ToolResult(s.search(q))
        if self.name == "visit":
            url = args.get("url")
            if not isinstance(url, str):
                return ToolResult("", "visit: expected a 'url' string")
            out, err = s.visit(url)
            return ToolResult(out, err)
        out, err = s.page_down()
        return ToolResult(out, err)


def browser_tools(
    task: Task | None = None, *, size: int = BROWSE_SIZE, seed: int = BROWSE_SEED
) -> dict[str, Any]:
    """Fresh web_search / visit / page_down tools over the task's corpus, sharing one session."""
    if task is not None:
        size = int(task.meta.get("corpus_size", size))
        seed = int(task.meta.get("corpus_seed", seed))
    session = BrowserSession([p for p, _, _ in build_corpus(size, seed)])
    obj = {"type": "object", "properties": {}}
    tools = [
        _BrowserTool(
            "web_search",
            "Search the web; returns titles and addresses.",
            {**obj, "properties": {"query": {"type": "string"}}, "required": ["query"]},
            session,
        ),
        _BrowserTool(
            "visit",
            "Open a page by address; shows its first viewport of raw HTML.",
            {**obj, "properties": {"url": {"type": "string"}}, "required": ["url"]},
            session,
        ),
        _BrowserTool("page_down", "Show the next viewport of the open page.", obj, session),
    ]
    return {t.name: t for t in tools}


class BrowseEnvironment:
    """The browse task environment: fresh browser tools over the task's corpus; the answer is
    stored as given."""

    def __init__(self, size: int = BROWSE_SIZE, seed: int = BROWSE_SEED) -> None:
        self.tools = browser_tools(size=size, seed=seed)

    def finish(self, answer: str) -> str:
        return answer
