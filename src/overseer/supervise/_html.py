"""An HTML page as a tree, built exactly as BeautifulSoup 4.15 builds it over the standard
library's `html.parser` (what `strip_markup` used before, issue 50), at a fraction of the cost.

The tokenizer is `HTMLParser.goahead` (`convert_charrefs=False`, fed the whole page, then
closed) with the parser's own regexes, plus a fast path for the plain start tags most pages
are made of; the tree is BeautifulSoup's: a stack where an end tag closes up to the latest open
tag of its name (or nothing), void elements close at once, whitespace-only strings collapse to
one space or newline outside `<pre>`/`<textarea>`, entities and character references decoded
as it decodes them. Only what stripping reads is kept: tags with their names and whether their
class / id words name an ad or banner, and strings (comments and declarations dropped).
"""

from __future__ import annotations

import html.parser
import re
from _markupbase import ParserBase
from html import unescape
from html.entities import html5
from typing import Any

# class / id words of advertising and cookie banners (a common readability heuristic)
NOISE = re.compile(r"(^|[-_ ])(ad|ads|advert\w*|sponsor\w*|banner|cookie\w*|promo\w*)($|[-_ ])")
# html.parser's own regexes (module constants its stub does not declare)
_PARSER: Any = html.parser
attrfind_tolerant: re.Pattern[str] = _PARSER.attrfind_tolerant
charref: re.Pattern[str] = _PARSER.charref
endendtag: re.Pattern[str] = _PARSER.endendtag
endtagfind: re.Pattern[str] = _PARSER.endtagfind
entityref: re.Pattern[str] = _PARSER.entityref
incomplete: re.Pattern[str] = _PARSER.incomplete
locatestarttagend_tolerant: re.Pattern[str] = _PARSER.locatestarttagend_tolerant
piclose: re.Pattern[str] = _PARSER.piclose
starttagopen: re.Pattern[str] = _PARSER.starttagopen
tagfind_tolerant: re.Pattern[str] = _PARSER.tagfind_tolerant
# BeautifulSoup's HTML builder: void elements, whitespace-keeping tags, string containers
VOID = frozenset(
    (
        *("area", "base", "basefont", "bgsound", "br", "col", "command", "embed", "frame"),
        *("hr", "image", "img", "input", "isindex", "keygen", "link", "menuitem", "meta"),
        *("nextid", "param", "source", "spacer", "track", "wbr"),
    )
)
_PRESERVE = frozenset(("pre", "textarea"))
CONTAINERS = frozenset(("rt", "rp", "style", "script", "template"))
_ASCII_SPACES = " \n\t\x0c\r"
_STACKED = _PRESERVE | CONTAINERS  # tags with a stack of their own
_SPECIAL = _STACKED | VOID | {"title"}
_RAW_TEXT = ("script", "style")  # html.parser's CDATA_CONTENT_ELEMENTS
_INTERESTING = re.compile("[&<]")
_COMMENT_CLOSE = re.compile(r"--\s*>")
# A start tag whose reading by `parse_starttag` is plain: a name, attributes after whitespace
# (bare, or `=` then a quoted or unquoted value), then `>` or `/>`. Possessive throughout, so
# it never finds a reading the parser's greedy regexes would not.
_SIMPLE_TAG = re.compile(
    r"<([a-zA-Z][-a-zA-Z0-9]*+)((?:[ \t\n\r\f]++[a-zA-Z_:][-a-zA-Z0-9_:.]*+"
    r"""(?:=(?:"[^"]*+"|'[^']*+'|[^\s"'=<>`]++))?+)*+)[ \t\n\r\f]*+(/?)>"""
)
# Text, a `_SIMPLE_TAG`, an end tag as `endtagfind` reads it, or any other `<` or `&`.
_PLAIN = re.compile(rf"([^&<]++)|{_SIMPLE_TAG.pattern}|</\s*([a-zA-Z][-.a-zA-Z0-9:_]*)\s*>|[&<]")
_SIMPLE_ATTR = re.compile(
    r"""[ \t\n\r\f]++([a-zA-Z_:][-a-zA-Z0-9_:.]*+)(?:=("[^"]*+"|'[^']*+'|[^\s"'=<>`]++))?+"""
)
# what a class or id must hold to match `NOISE` once lower-cased (the Kelvin sign included),
# or a reference that could spell it
_MAYBE_NOISE = re.compile("ad|sponsor|banner|cookie|promo|&", re.IGNORECASE)
_NONWHITESPACE = re.compile(r"\S+")
# BeautifulSoup's entity table: every HTML5 name, without its semicolon (the first listed)
ENTITIES: dict[str, str] = {}
for _name, _char in sorted(html5.items()):
    ENTITIES.setdefault(_name[:-1] if _name.endswith(";") else _name, _char)
# numeric references to 0x80-0x9f read as windows-1252, as BeautifulSoup reads them
_CP1252 = {
    n: bytes([n]).decode("cp1252")
    for n in range(0x80, 0xA0)
    if n not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)  # no character in windows-1252
}


class MarkupRejected(ValueError):
    """Markup `html.parser` refuses (a marked section `<![...` of an unknown keyword)."""


class Node:
    """A tag: its name, whether its class / id words name noise, and its children (strings
    of the page's text as `str`; strings of a script, style, template or ruby tag as a
    `(container name, text)` pair; nodes)."""

    __slots__ = ("kids", "name", "noisy")

    def __init__(self, name: str, noisy: bool) -> None:
        self.name, self.noisy = name, noisy
        self.kids: list[Node | str | tuple[str, str]] = []


def noisy(attrs: list[tuple[str, str | None]]) -> bool:
    """Whether a tag's class / id words (the last of each attribute, as a dict keeps them)
    name an ad or banner."""
    d = {k: v for k, v in attrs if k in ("class", "id")}
    words = " ".join([*_NONWHITESPACE.findall(d.get("class") or ""), d.get("id") or ""]).lower()
    return bool(words.strip()) and NOISE.search(words) is not None


def _noisy_attrs(attrs: str) -> bool:
    """`noisy` for the attributes of a `_SIMPLE_TAG` (most tags have no word of `NOISE` in
    them, in any case, and no reference that could spell one: no need to read them)."""
    if not attrs or _MAYBE_NOISE.search(attrs) is None:
        return False
    return noisy(
        [
            (a.lower(), unescape(v[1:-1] if v[:1] in "'\"" else v) if v else None)
            for a, v in _SIMPLE_ATTR.findall(attrs)
        ]
    )


def charref_text(name: str) -> str:
    """What BeautifulSoup reads for `&#name;` (`name` as `html.parser`'s regex found it:
    digits, or `x` and hex digits): U+FFFD for no character, windows-1252 for 0x80-0x9f."""
    n = int(name[1:], 16) if name[:1] in "xX" else int(name)
    if n == 0 or n > 0x10FFFF or 0xD800 <= n <= 0xDFFF:
        return "\ufffd"
    return _CP1252.get(n) or chr(n)


class _Tree:
    """BeautifulSoup's tree building (`BeautifulSoup.handle_starttag` / `_popToTag` /
    `endData` and its html.parser builder's void-element bookkeeping), for `Node`s."""

    def __init__(self) -> None:
        self.root = Node("[document]", False)
        self.stack = [self.root]
        self.node = self.root
        self.pending: list[str] = []  # data not yet made a string (`current_data`)
        self.open: dict[str, int] = {}  # open tags per name
        self.closed_void: list[str] = []  # void elements closed at once, whose end tag is ignored
        self.preserve = 0  # open <pre> / <textarea>
        self.containers: list[str] = []  # open string containers, innermost last
        self.title: Node | None = None

    def flush(self) -> None:
        """The pending data as one string of the current tag (`endData`)."""
        if self.pending:
            s = "".join(self.pending)
            self.pending.clear()
            if not self.preserve and not s.strip(_ASCII_SPACES):
                s = "\n" if "\n" in s else " "
            self.node.kids.append((self.containers[-1], s) if self.containers else s)

    def special(self, data: str, text: bool) -> None:
        """A comment, declaration or processing instruction (not text: a string boundary
        only), or a CDATA section (`text`: a string of the page whatever holds it)."""
        self.flush()
        if text:
            keep = self.preserve or data.strip(_ASCII_SPACES)
            self.node.kids.append(data if keep else "\n" if "\n" in data else " ")

    def start(self, name: str, noise: bool, empty: bool) -> None:
        """A start tag; `empty`: written `<name/>` (closed at once, like a void element)."""
        if self.pending:
            self.flush()
        node = Node(name, noise)
        self.node.kids.append(node)
        self.stack.append(node)
        self.node = node
        self.open[name] = self.open.get(name, 0) + 1
        if name in _SPECIAL:
            self.special_start(name, node, empty)
        elif empty:
            self.pop_to(name)

    def special_start(self, name: str, node: Node, empty: bool) -> None:
        """The bookkeeping of a whitespace-keeping, container, title or void tag."""
        if name in _PRESERVE:
            self.preserve += 1
        if name in CONTAINERS:
            self.containers.append(name)
        if name == "title" and self.title is None:
            self.title = node
        if empty:
            self.pop_to(name)
        elif name in VOID:
            self.pop_to(name)
            self.closed_void.append(name)

    def end(self, name: str) -> None:
        """An end tag: ignored (no string boundary either) after its void element."""
        if self.closed_void and name in self.closed_void:
            self.closed_void.remove(name)
            return
        if self.pending:
            self.flush()
        if self.open.get(name):
            self.pop_to(name)

    def pop_to(self, name: str) -> None:
        """Close the open tags up to the latest named `name`, if one is open."""
        if not self.open.get(name):
            return
        stack, counts = self.stack, self.open
        while True:
            node = stack.pop()
            counts[node.name] -= 1
            if node.name in _STACKED:
                if node.name in _PRESERVE:
                    self.preserve -= 1
                else:
                    self.containers.pop()
            if node.name == name:
                break
        self.node = stack[-1]


class _Marked(ParserBase):
    """`ParserBase.parse_marked_section` on its own (`<![CDATA[...]]>` and kin)."""

    def __init__(self, rawdata: str) -> None:
        self.rawdata, self.decl = rawdata, ""
        self.reset()

    def unknown_decl(self, data: str) -> None:
        self.decl = data


class _Lexer:
    """`HTMLParser.goahead` with `convert_charrefs=False`, its events going to a `_Tree`."""

    def __init__(self, tree: _Tree) -> None:
        self.tree = tree
        self.interesting = _INTERESTING
        self.cdata: str | None = None  # the <script> or <style> whose text is being read

    def goahead(self, raw: str, end: bool) -> int:
        """Read `raw` as far as it can be read (all of it when `end`); where it stopped.
        Text, plain start tags and end tags are read by `plain`, the rest by `markup` and
        `reference` (html.parser's own steps)."""
        i, n, pending = 0, len(raw), self.tree.pending
        while i < n:
            if self.cdata is None:
                i = self.plain(raw, i)
                if i == n:
                    break
            m = self.interesting.search(raw, i)
            if m:
                j = m.start()
            elif self.cdata:
                break
            else:
                j = n
            if i < j:
                pending.append(raw[i:j])
            i = j
            if i == n:
                break
            k = self.markup(raw, i, end) if raw[i] == "<" else self.reference(raw, i, end)
            if k < 0:  # stop at ~k
                i = ~k
                break
            i = k
        if end and i < n and not self.cdata:
            pending.append(raw[i:n])
            i = n
        return i

    def plain(self, raw: str, i: int) -> int:
        """Text, plain start tags and end tags from `i` on, outside raw text; where the
        first other construct (or a script's or style's raw text) begins."""
        tree = self.tree
        pending = tree.pending
        for m in _PLAIN.finditer(raw, i):
            group = m.lastindex
            if group == 1:
                pending.append(m.group(1))
            elif group == 5:
                tree.end(m.group(5).lower())
            elif group == 4:
                name, empty = m.group(2).lower(), m.group(4) == "/"
                tree.start(name, _noisy_attrs(m.group(3)), empty)
                if not empty and name in _RAW_TEXT:
                    self.raw_text(name)
                    return m.end()
            else:
                return m.start()
        return len(raw)

    def markup(self, raw: str, i: int, end: bool) -> int:
        """What starts with `<` at `i`: where reading goes on, or `~i` to stop there."""
        if starttagopen.match(raw, i):
            k = self.starttag(raw, i)
        elif raw.startswith("</", i):
            k = self.endtag(raw, i)
        elif raw.startswith("<!--", i):
            k = self.comment(raw, i)
        elif raw.startswith("<?", i):
            m = piclose.search(raw, i + 2)
            k = -1 if m is None else m.end()
            if m is not None:
                self.tree.special(raw[i + 2 : m.start()], False)
        elif raw.startswith("<!", i):
            k = self.declaration(raw, i)
        elif i + 1 < len(raw):
            self.tree.pending.append("<")
            k = i + 1
        else:
            return ~i
        if k < 0:
            if not end:
                return ~i
            k = raw.find(">", i + 1)
            if k < 0:
                k = raw.find("<", i + 1)
                k = i + 1 if k < 0 else k
            else:
                k += 1
            self.tree.pending.append(raw[i:k])
        return k

    def starttag(self, raw: str, i: int) -> int:
        """A start tag at `i` (`parse_starttag`): its end, or -1 when it is not complete."""
        m = _SIMPLE_TAG.match(raw, i)
        if m is None:
            return self.odd_starttag(raw, i)
        self.open_tag(m.group(1).lower(), _noisy_attrs(m.group(2)), m.group(3) == "/")
        return m.end()

    def odd_starttag(self, raw: str, i: int) -> int:
        """`parse_starttag` as html.parser writes it, for a tag `_SIMPLE_TAG` does not read."""
        endpos = _whole_start_tag(raw, i)
        if endpos < 0:
            return endpos
        m = tagfind_tolerant.match(raw, i + 1)
        assert m is not None
        k, tag = m.end(), m.group(1).lower()
        attrs: list[tuple[str, str | None]] = []
        while k < endpos:
            m = attrfind_tolerant.match(raw, k)
            if not m:
                break
            name, rest, value = m.group(1, 2, 3)
            if not rest:
                value = None
            elif value[:1] == "'" == value[-1:] or value[:1] == '"' == value[-1:]:
                value = value[1:-1]
            attrs.append((name.lower(), unescape(value) if value else value))
            k = m.end()
        end = raw[k:endpos].strip()
        if end not in (">", "/>"):
            self.tree.pending.append(raw[i:endpos])
        else:
            self.open_tag(tag, noisy(attrs), end.endswith("/>"))
        return endpos

    def open_tag(self, name: str, noise: bool, empty: bool) -> None:
        """A start tag read: to the tree; a <script> or <style> starts raw text."""
        self.tree.start(name, noise, empty)
        if not empty and name in _RAW_TEXT:
            self.raw_text(name)

    def raw_text(self, name: str) -> None:
        """Read what follows as the raw text of a <script> or <style>, up to its end tag."""
        self.cdata = name
        self.interesting = re.compile(rf"</\s*{name}\s*>", re.IGNORECASE)

    def endtag(self, raw: str, i: int) -> int:
        """An end tag at `i` (`parse_endtag`): its end, or -1 when no `>` follows."""
        m = endtagfind.match(raw, i)
        if m is not None:
            name = m.group(1).lower()
            if self.cdata is not None and name != self.cdata:
                self.tree.pending.append(raw[i : m.end()])
            else:
                self.tree.end(name)
                self.cdata, self.interesting = None, _INTERESTING
            return m.end()
        gt = endendtag.search(raw, i + 1)
        if gt is None:
            return -1
        if self.cdata is not None:
            self.tree.pending.append(raw[i : gt.end()])
            return gt.end()
        m = tagfind_tolerant.match(raw, i + 2)
        if m is None:
            return i + 3 if raw.startswith("</>", i) else self.bogus_comment(raw, i)
        self.tree.end(m.group(1).lower())
        return raw.find(">", m.end()) + 1

    def comment(self, raw: str, i: int) -> int:
        """A comment `<!--...-->` at `i`: its end, or -1 when it is not closed."""
        m = _COMMENT_CLOSE.search(raw, i + 4)
        if m is None:
            return -1
        self.tree.special(raw[i + 4 : m.start()], False)
        return m.end()

    def bogus_comment(self, raw: str, i: int) -> int:
        """`<!...>` or `</...>` read as a comment: its end, or -1 when no `>` follows."""
        pos = raw.find(">", i + 2)
        if pos < 0:
            return -1
        self.tree.special(raw[i + 2 : pos], False)
        return pos + 1

    def declaration(self, raw: str, i: int) -> int:
        """`<!` at `i`, no comment (`parse_html_declaration`): a marked section (CDATA is
        text), a doctype, or a bogus comment; its end, or -1 when it is not complete."""
        if raw.startswith("<![", i):
            marked = _Marked(raw)
            try:
                k = marked.parse_marked_section(i)
            except AssertionError as e:
                raise MarkupRejected(str(e)) from e
            if k >= 0:
                is_cdata = marked.decl.upper().startswith("CDATA[")
                self.tree.special(marked.decl[6:] if is_cdata else marked.decl, is_cdata)
            return int(k)
        if raw[i : i + 9].lower() == "<!doctype":
            gt = raw.find(">", i + 9)
            if gt >= 0:
                self.tree.special(raw[i + 2 : gt], False)
            return gt if gt < 0 else gt + 1
        return self.bogus_comment(raw, i)

    def reference(self, raw: str, i: int, end: bool) -> int:
        """A character or entity reference at `i` (an `&`): where reading goes on, or `~j`
        to stop at `j`."""
        pending = self.tree.pending
        if raw.startswith("&#", i):
            m = charref.match(raw, i)
            if m:
                pending.append(charref_text(m.group()[2:-1]))
                k = m.end()
                return k if raw.startswith(";", k - 1) else k - 1
            if raw.find(";", i) >= 0:  # html.parser reads "&#" as data and stops after it
                pending.append(raw[i : i + 2])
                return ~(i + 2)
            return ~i
        m = entityref.match(raw, i)
        if m:
            name = m.group(1)
            char = ENTITIES.get(name)
            pending.append(char if char is not None else "&" + name)
            k = m.end()
            return k if raw.startswith(";", k - 1) else k - 1
        m = incomplete.match(raw, i)
        if m:  # at the very end, html.parser skips the "&" (the rest is data)
            return ~(i + 1) if end and m.end() == len(raw) else ~i
        if i + 1 < len(raw):
            pending.append("&")
            return i + 1
        return ~i


def _whole_start_tag(raw: str, i: int) -> int:
    """`check_for_whole_start_tag`: where the start tag at `i` ends, -1 if incomplete."""
    m = locatestarttagend_tolerant.match(raw, i)
    assert m is not None
    j = m.end()
    nxt = raw[j : j + 1]
    if nxt == ">":
        return j + 1
    if nxt == "/":
        if raw.startswith("/>", j):
            return j + 2
        return -1  # html.parser: a "/" here is a buffer boundary
    if nxt == "" or nxt in "abcdefghijklmnopqrstuvwxyz=/ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        return -1
    return j if j > i else i + 1


def parse(text: str) -> tuple[Node, Node | None]:
    """The tree of `text` (its root, `[document]`) and its first <title>, as BeautifulSoup
    with html.parser builds them: fed whole, then closed. Raises MarkupRejected where
    BeautifulSoup raises ParserRejectedMarkup."""
    tree = _Tree()
    lexer = _Lexer(tree)
    stop = lexer.goahead(text, False)
    lexer.goahead(text[stop:], True)
    tree.flush()
    return tree.root, tree.title
