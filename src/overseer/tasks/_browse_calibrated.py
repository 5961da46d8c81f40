"""The calibrated browse suite (`browse`): the offline web of `_browse`, tuned so that a 0.5B
researcher can succeed while still wasting tokens the way real agents do.

`browse-sample` is left as it was (0% for every configuration at 0.5B: the researcher guessed
addresses it was told the pattern of, and the fact table sat 4-9 viewports down). Here the
difficulty knobs are set on the train split (see docs/evidence/supervise.md):

- the task says to search first and visit an address from the results (no address pattern to
  guess), and search results print each address on its own line;
- the fact table sits 1-2 page-downs deep (viewport 2 or 3), so reaching it takes a few steps;
- the pages keep their raw HTML noise (styles, scripts, navigation, ads): the observations stay
  long, and dead ends (a wrong address, a page_down with no page open) still happen.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

from overseer.tasks._browse import (
    BrowserSession,
    Page,
    _BrowserTool,
    _draft,
    _noise,
)
from overseer.tasks._types import Task

SUITE = "browse"
SIZE = 60
SEED = 29
_URL_WORDS = {"http", "https", "www", "org", "com", "net", "en", "wiki", "local", "html", ""}
VIEWPORT_CHARS = 1800  # about 600 tokens of raw HTML per observation
MAX_STEPS = 4  # tool steps per agent turn: visit, a page_down, then room for one dead end
# the viewport holding the fact table: on arrival (2 pages in 3), or after one page_down. Set
# on the train split: the 0.5B researcher never called page_down there (0 of 6 runs), solved
# 3 of 4 tasks with the table in view on arrival and 0 of 2 with it one page-down away.
DEPTHS = (1, 1, 2)


@dataclass(frozen=True)
class Item:
    """One calibrated page with its question, the fact asked and the fact table's viewport."""

    page: Page
    question: str
    label: str
    depth: int


def _place(head: str, blocks: list[str], table: str, depth: int) -> list[str]:
    """Blocks with the table inserted where it lies wholly inside viewport `depth`."""
    lo, hi = (depth - 1) * VIEWPORT_CHARS + 150, depth * VIEWPORT_CHARS - len(table) - 150
    pos = len(head)
    for i, b in enumerate(blocks):
        if lo <= pos <= hi:
            return [*blocks[:i], table, *blocks[i:]]
        pos += len(b)
        if pos > hi:  # this block jumps past the window: cut it so the table lands inside
            cut = max(0, len(b) - (pos - lo))
            return [*blocks[:i], b[:cut] + "</p>" * (cut > 0), table, *blocks[i + 1 :]]
    return [*blocks, table]


def _small(html: str, keep: int = 350) -> str:
    """A noise block cut to `keep` characters (closed again), so a page is a few viewports."""
    if len(html) <= keep:
        return html
    end = html[html.rindex("</") :] if "</" in html[-12:] else ""
    return html[:keep] + end


def make_item(rng: random.Random) -> Item:
    """A page whose fact table lies 1-2 page-downs deep, and one question about it."""
    d = _draft(rng, (10, 13))
    title = d.title
    depth = rng.choice(DEPTHS)
    head = (
        f"<!DOCTYPE html><html><head><title>{title}</title>{_small(_noise(rng, 'style'))}"
        f"</head><body>{_small(_noise(rng, 'nav'))}<main><h1>{title}</h1><h2>History</h2>"
    )
    body = "".join(_place(head, d.paras, d.table, depth))
    script = _small(_noise(rng, "script"))
    tail = f"</main><footer class='site-footer'>{script}</footer></body></html>"
    page, question, label = d.page(rng, head + body + tail)
    return Item(page, question, label, depth)


@cache
def build_items(size: int = SIZE, seed: int = SEED) -> tuple[Item, ...]:
    """The seeded calibrated corpus: `size` pages with unique titles."""
    rng = random.Random(seed)
    out: list[Item] = []
    while len(out) < size:
        item = make_item(rng)
        if all(item.page.title != o.page.title for o in out):
            out.append(item)
    return tuple(out)


PROMPT = (
    "{q} Its page is {url} : visit it, then call page_down until the fact table shows the "
    "fact, and answer with the number you read there."
)


def load_browse(size: int = SIZE, seed: int = SEED, *, suite: str = SUITE) -> list[Task]:
    """Questions answerable only by browsing the calibrated offline web (numeric answers);
    `suite` names the corpus (`browse@SEED` for a corpus seed other than the default)."""
    tasks = [
        Task(
            suite,
            f"{SUITE}/{seed}/{i}",
            PROMPT.format(q=it.question, url=it.page.url),
            str(it.page.facts[it.label]),
            "numeric",
            meta={
                "corpus_size": size,
                "corpus_seed": seed,
                "url": it.page.url,
                "depth": it.depth,
                "max_steps": MAX_STEPS,
                "environment": partial(CalibratedEnvironment, size, seed),
            },
        )
        for i, it in enumerate(build_items(size, seed))
    ]
    if len(tasks) != size:
        raise RuntimeError(f"suite {suite}: built {len(tasks)} tasks, asked {size}")
    return tasks


def _title_in(title: str, flat_url: str) -> bool:
    """Whether every word of `title` appears in the url (lowercased, separators dropped)."""
    return all(w.lower() in flat_url for w in title.split())


class ClearSession(BrowserSession):
    """Search results with each address on its own line, ready to copy into `visit`."""

    def search(self, query: str) -> str:
        hits = self._index.search(query, 3)
        if not hits:
            return "No results. Try the place's name."
        lines = []
        for k, h in enumerate(hits, 1):
            url = h.split("\n", 1)[0]
            lines.append(f"{k}. {self.pages[url].title}\n   address: {url}")
        return "Search results:\n" + "\n".join(lines)

    def __init__(self, pages: Sequence[Page]) -> None:
        super().__init__(pages, VIEWPORT_CHARS)

    def _view(self) -> str:
        view = super()._view()
        if "(end of page)" in view.split("\n", 2)[1]:
            return view
        head, rest = view.split("\n", 2)[:2], view.split("\n", 2)[2]
        return "\n".join([*head[:1], head[1] + " (page_down shows the next part)", rest])

    def visit(self, url: str) -> tuple[str, str | None]:
        """Like a wiki, an address naming a page's title words (any case, separators or host)
        is redirected to that page; any other address fails, listing the pages a search for
        its words finds (a dead end an agent can recover from)."""
        if url.strip() in self.pages:  # a page's own address is that page, never another's
            return super().visit(url)
        flat = re.sub(r"[^a-z0-9]+", "", url.lower())
        hits = sorted((len(p.title), u) for u, p in self.pages.items() if _title_in(p.title, flat))
        if hits and hits[-1][1] != url.strip():  # the longest title named: the most specific
            out, err = super().visit(hits[-1][1])
            return f"(redirected from {url.strip()})\n{out}", err
        out, err = super().visit(url)
        if err is None:
            return out, None
        words = [w for w in re.split(r"[^A-Za-z0-9]+", url) if w.lower() not in _URL_WORDS]
        return "", f"visit: no page at {url.strip()!r}. " + self.search(" ".join(words) or url)


def calibrated_tools(pages: Sequence[Page]) -> dict[str, Any]:
    """web_search / visit / page_down over `pages`, sharing one session, described plainly."""
    s = ClearSession(pages)
    obj: dict[str, Any] = {"type": "object", "properties": {}}
    tools = [
        _BrowserTool(
            "web_search",
            "Search the web by keywords; returns page titles, each with its address.",
            {**obj, "properties": {"query": {"type": "string"}}, "required": ["query"]},
            s,
        ),
        _BrowserTool(
            "visit",
            "Open a page by its address, copied exactly from the search "
            "results; shows the first part of its raw HTML.",
            {**obj, "properties": {"url": {"type": "string"}}, "required": ["url"]},
            s,
        ),
        _BrowserTool(
            "page_down",
            "Show the next part of the open page (facts are in a table further down).",
            obj,
            s,
        ),
    ]
    return {t.name: t for t in tools}


class CalibratedEnvironment:
    """The calibrated browse environment: fresh tools over the corpus; the answer as given."""

    def __init__(self, size: int = SIZE, seed: int = SEED) -> None:
        self.tools = calibrated_tools([it.page for it in build_items(size, seed)])

    def finish(self, answer: str) -> str:
        return answer
