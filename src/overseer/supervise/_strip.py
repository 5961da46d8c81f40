"""A parsed page (`_html.parse`) read as text the way `strip_markup` reads it: code, styling
and short page chrome dropped, fact tables as `header: value` lines, a blank line around each
block. One walk in document order over the tree, no tree edits; it writes what BeautifulSoup
wrote after decomposing those tags, replacing the tables and marking the blocks in turn
(issue 50: that took 7-10 ms a page).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from overseer.supervise._html import CONTAINERS, Node

Item = Node | str | tuple[str, str]

# Elements that are never content: code and styling.
DROP = frozenset(("script", "style", "noscript", "template", "iframe", "svg", "head"))
# Page chrome, dropped only when short: in a viewport cut mid-tag the parser may nest the
# rest of the page inside an unclosed `<nav>`, and the page's content must survive that.
CHROME = frozenset(("nav", "header", "footer", "aside", "form", "button"))
CHROME_MAX = 400  # characters of text
# tags that start a block of text: a blank line goes before and after each
BLOCKS = frozenset(
    (
        *("p", "div", "section", "article", "main", "blockquote", "pre", "br"),
        *("h1", "h2", "h3", "h4", "h5", "h6", "caption"),
        *("table", "tr", "ul", "ol", "li", "dl", "dt", "dd"),
    )
)
_CELLS = ("th", "td")


def walk(node: Node, skip: Callable[[Node], bool]) -> Iterator[Item]:
    """Everything under `node` in document order, without the tags `skip` names (nor what
    they hold). Iterative: an unclosed tag per line nests a page thousands deep."""
    stack = [iter(node.kids)]
    while stack:
        for item in stack[-1]:
            if type(item) is Node:
                if skip(item):
                    continue
                yield item
                stack.append(iter(item.kids))
                break
            yield item
        else:
            stack.pop()


def _dropped(node: Node) -> bool:
    return node.name in DROP


def never(_node: Node) -> bool:
    """Skip nothing (a tag's text as parsed)."""
    return False


def _text_len(node: Node) -> int:
    """The length of a tag's text once code and styling are gone (BeautifulSoup's
    `len(tag.get_text())`: the strings of its own kind, a ruby tag's its ruby text)."""
    kind = node.name if node.name in CONTAINERS else None
    if kind is None:
        return sum(len(s) for s in walk(node, _dropped) if type(s) is str)
    return sum(len(s[1]) for s in walk(node, _dropped) if type(s) is tuple and s[0] == kind)


def removed(node: Node) -> bool:
    """Whether a tag goes, with all it holds: code or styling, or short chrome or ad."""
    name = node.name
    if name in DROP:
        return True
    return (name in CHROME or node.noisy) and _text_len(node) <= CHROME_MAX


def strings(node: Node, skip: Callable[[Node], bool]) -> Iterator[str]:
    """The page's strings under `node`, stripped, the empty ones left out."""
    for item in walk(node, skip):
        if type(item) is str and (s := item.strip()):
            yield s


def _tags(node: Node, names: tuple[str, ...], skip: Callable[[Node], bool]) -> Iterator[Node]:
    """The tags named one of `names` under `node`, in document order."""
    return (n for n in walk(node, skip) if type(n) is Node and n.name in names)


def _table(table: Node) -> str:
    """A table as one line per row: `header: value` pairs, cells joined by ` | `; its first
    caption (not counted in the rows) first."""
    _check_captions(table)
    caption = next(_tags(table, ("caption",), removed), None)
    lines = [] if caption is None else [" ".join(strings(caption, removed))]

    def skip(n: Node) -> bool:
        return n is caption or removed(n)

    for row in _tags(table, ("tr",), skip):
        cells = [c for c in (" ".join(strings(c, skip)) for c in _tags(row, _CELLS, skip)) if c]
        if len(cells) == 2 and next(_tags(row, ("th",), skip), None) is not None:
            lines.append(f"{cells[0]}: {cells[1]}")
        elif cells:
            lines.append(" | ".join(cells))
    return "\n\n" + "\n".join(lines) + "\n\n"


def _check_captions(table: Node) -> None:
    """Raise what BeautifulSoup raised for a table inside a caption of an enclosing table:
    each table's first caption was decomposed in turn, and a table inside one could not be
    replaced (ValueError)."""
    tables = [table, *_tags(table, ("table",), removed)]
    if len(tables) == 1:
        return
    dead: list[Node] = []

    def skip(n: Node) -> bool:
        return removed(n) or any(n is d for d in dead)

    for t in tables:
        caption = next(_tags(t, ("caption",), skip), None)
        if caption is None:
            continue
        if next(_tags(caption, ("table",), removed), None) is not None:
            raise ValueError(
                "Cannot replace one element with another when the element to be replaced "
                "is not part of a tree."
            )
        dead.append(caption)


def page_text(root: Node) -> str:
    """The page's text: dropped tags gone, each table as its rows, a blank line before and
    after each block (BeautifulSoup's `get_text()` of the edited tree)."""
    out: list[str] = []
    stack: list[tuple[Iterator[Item], str]] = [(iter(root.kids), "")]
    while stack:
        items, after = stack[-1]
        for item in items:
            if type(item) is str:
                out.append(item)
            elif type(item) is Node:
                name = item.name
                if name in DROP or (
                    (name in CHROME or item.noisy) and _text_len(item) <= CHROME_MAX
                ):
                    continue  # `removed`
                if name == "table":
                    out.append(_table(item))
                    continue
                if name in BLOCKS:
                    out.append("\n\n")
                    stack.append((iter(item.kids), "\n\n"))
                else:
                    stack.append((iter(item.kids), ""))
                break
        else:
            stack.pop()
            out.append(after)
    return "".join(out)
