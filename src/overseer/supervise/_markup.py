"""Markup stripping: an HTML observation read as its text, without styles, scripts or ads.

Browsing agents read raw HTML pages whose markup is most of their length (a 1,800-character
viewport of a wiki page holds about 900 characters of text). Stripping it is the cheapest
purification there is: no LLM, nothing invented, every word kept comes from the page. Tables
are kept as `header: value` rows, since a fact table is often what the task asks for.
Parsing is the standard library's tolerant `html.parser` (its tokens, BeautifulSoup's tree, at
a tenth of their cost: `_html`), which copes with the cut-off tags of a viewport.

Pages an agent's browser tool already turned into text carry their chrome as text: the page's
meta tags and JSON-LD printed as JSON, cookie banners, menus. `chrome_lines` finds those lines,
so that `extract` ranks them after the body (issue 48).
"""

from __future__ import annotations

import re
from html import unescape
from typing import Literal

from overseer.supervise._html import parse
from overseer.supervise._strip import never, page_text, strings

_TAG = re.compile(r"<[A-Za-z!/][^>]{0,400}>")
# A tag cut off before its `>` where the next tag begins (a viewport or a block cut mid-tag,
# `<li class="nav</nav>`): its open quote would swallow the markup after it, table included.
_UNCLOSED = re.compile(r"<[A-Za-z][^<>]*(?=<)")
# A complete fact-table row in raw markup: a header cell, then a value cell.
_ROW = re.compile(
    r"<th\b[^>]*>(?P<label>.*?)</th>\s*<td\b[^>]*>(?P<value>.*?)</td>", re.IGNORECASE | re.DOTALL
)
_MIN_TAGS = 5  # fewer tags than this is text that mentions markup, not a page


def markup_share(text: str) -> float:
    """The share of `text` made of HTML tags (0 when it holds fewer than `_MIN_TAGS`)."""
    tags = _TAG.findall(text)
    return sum(map(len, tags)) / len(text) if len(tags) >= _MIN_TAGS else 0.0


def strip_markup(text: str, *, min_share: float = 0.1) -> str | None:
    """The text of an HTML(-bearing) observation, or None when markup is under `min_share` of it
    and it holds no complete fact-table row.

    Title is kept as a `Title:` line; scripts, styles, navigation and ad blocks are dropped;
    blocks become paragraphs (blank-line separated, as `extract` reads them). Text outside
    the markup (e.g. an `Address:` header before the page) is kept where it stands.
    """
    if markup_share(text) < min_share and not table_rows(text):
        return None  # prose with a few tags; a fact-table row is always worth stripping
    root, title = parse(_UNCLOSED.sub("", text))
    title_text = " ".join(strings(title, never)) if title is not None else ""
    blocks = (
        " ".join(b.split()) if "\n" not in b.strip() else _lines(b)
        for b in re.split(r"\n\s*\n", page_text(root))
    )
    body = "\n\n".join(b for b in blocks if b)
    if title_text and title_text not in body[:300]:
        body = f"Title: {title_text}\n\n{body}"
    lost = [r for r in table_rows(text) if r not in body]
    return f"{body}\n\n" + "\n".join(lost) if lost else body


def table_rows(markup: str) -> list[str]:
    """Every complete `header | value` row of the raw markup as a `label: value` line (tags
    inside the cells dropped): what stripping must keep whatever markup surrounds a table."""
    rows = []
    for m in _ROW.finditer(markup):
        cells = (unescape(_TAG.sub(" ", m.group(k))) for k in ("label", "value"))
        label, value = (" ".join(c.split()) for c in cells)
        if label and value:
            rows.append(f"{label}: {value}")
    return rows


def _lines(block: str) -> str:
    """A multi-line block (a table, a header) with each line's whitespace collapsed."""
    return "\n".join(" ".join(ln.split()) for ln in block.splitlines() if ln.strip())


# --- page chrome in text: what an agent's browser wrote around the page's body -------------

# A line that is page metadata wherever it stands: a meta tag's or JSON-LD's key (as a
# browser tool prints them, `"og:title": "..."`), a raw <meta>/<link>/<script> tag, or a line
# of JSON punctuation only.
_META_LINE = re.compile(
    r"""^\s*(?:<(?:meta|link|script)\b|[\[\]{}(),]+\s*$|
    "?(?:og|twitter|fb|al|article|profile|msapplication|apple-mobile-web-app|itemprop)[:_-]|
    "?(?:viewport|robots|googlebot|referrer|theme-color|google(?:-site-verification)?|
    generator|format-detection|charset|csrf-(?:token|param)|next-head-count|color-scheme|
    @context|@type|@id|@graph|sameAs|potentialAction|query-input|
    SystemEntropyOriginTrialToken|adtags|nuxtstatus)"?\s*[:=])""",
    re.IGNORECASE | re.VERBOSE,
)
# A JSON member that opens a block of page metadata (`"meta_tags": {`), or a browser tool's
# header before one (Magentic-One's WebSurfer: "The following metadata was extracted ...").
_META_BLOCK = re.compile(
    r"""^\s*(?:"(?:meta_?tags|jsonld|json-ld|microdata|opengraph|metadata)"\s*:\s*[\[{]|
    the\ following\ metadata\ was\ extracted\b)""",
    re.IGNORECASE | re.VERBOSE,
)
# Banners and navigation: a cookie notice, or a line that is only a menu entry.
_COOKIE = re.compile(
    r"\bcookies?\b.{0,200}\b(?:accept|consent|agree|preferences|settings|privacy)\b|"
    r"\b(?:accept|consent|agree|manage)\b.{0,80}\bcookies?\b",
    re.IGNORECASE | re.DOTALL,
)
# A short line that is a lone menu entry, or a label that opens a block of navigation (a
# screen reader's or OCR's "**Top Navigation:**", "[Header]", "Footer:"): chrome up to the next
# blank line. Compared as the line stripped of its decoration and lower-cased (a set lookup: a
# regex per short line cost more than the rest of the scan). Not a bare "Menu" as a label: a
# restaurant's menu is content.
_NAV_DECOR = " \t*-•|>#[]().:"
_NAV_ENTRIES = frozenset(
    (
        *("skip to content", "skip to main content", "sign in", "signin", "log in", "login"),
        *("sign up", "signup", "log out", "logout", "register", "subscribe", "menu", "home"),
        *("search", "privacy policy", "terms of use", "terms of service", "cookie settings"),
        *("cookie policy", "accept all", "reject all", "contact us", "about us", "back to top"),
        *("share", "print"),
    )
)
_NAV_LABELS = frozenset(
    (
        *(f"{where}{what}{tail}" for where in ("", "top ", "main ", "site ", "primary ", "global ")
          for what in ("navigation", "nav bar", "navbar") for tail in ("", " menu", " links")),
        *("top menu", "main menu", "site menu", "navigation menu", "header", "footer"),
        *("sidebar", "breadcrumb", "breadcrumbs"),
    )
)  # fmt: skip
# a question that asks about the page's metadata itself: then it is content
ASKS_METADATA = re.compile(
    r"\b(?:meta ?(?:data|tags?|description)|og:\w+|open ?graph|twitter card|viewport|robots|"
    r"json-?ld|schema\.org|cookies?)\b",
    re.IGNORECASE,
)


# What a chrome line can start with (lower-cased, stripped): a cheap test before the regexes.
_CHROME_START = (
    *("<", "[", "]", "{", "}", "(", ")", ",", '"', "og", "twitter", "fb", "al:", "al_", "article"),
    *("profile", "msapplication", "apple-mobile", "itemprop", "viewport", "robots", "googlebot"),
    *("referrer", "theme-color", "google", "generator", "format-detection", "charset", "csrf"),
    *("next-head", "color-scheme", "@", "sameas", "potentialaction", "query-input"),
    *("systementropy", "adtags", "nuxtstatus", "the following metadata"),
)
_NAV_MAX = 40  # characters: a longer line is no lone menu entry
_NAV_ANY = _NAV_ENTRIES | _NAV_LABELS
# the first one or two characters of `_CHROME_START`'s entries (`_chrome_line`)
_START_1 = frozenset(p for p in _CHROME_START if len(p) == 1)
_START_2 = frozenset(p[:2] for p in _CHROME_START if len(p) > 1)
# the characters other than ASCII whose lower case starts with an ASCII letter (the Turkish
# dotted capital I, "i" and a combining dot; the Kelvin sign, "k"), as the Unicode tables of
# Python 3.11 have them (tests/supervise/test_extract_lines.py checks them)
LOWER_TO_ASCII = {"\u0130": "i", "\u212a": "k"}
# the first two characters of a line, as they stand, whose lower case starts with an entry
# of `_START_2` (`s[:2] in _START_2_RAW` is `s[:2].lower()[:2] in _START_2`, without the
# lower-casing: `line_kinds`)
_START_2_RAW = frozenset(
    a + b
    for p in _START_2
    for a in {p[0], p[0].upper(), *(c for c, low in LOWER_TO_ASCII.items() if low == p[0])}
    for b in {p[1], p[1].upper(), *(c for c, low in LOWER_TO_ASCII.items() if low == p[1])}
    if (a + b).lower()[:2] == p
)


def _chrome_line(s: str, cookies: bool) -> bool:
    """Whether one stripped line (outside any block, no menu entry) is chrome: metadata (its
    first two characters, lower-cased, rule out most lines before the tuple's sixty
    `startswith` comparisons and the regex) or a cookie banner."""
    head = s[:2].lower()  # lower-casing is per character: the first two of `s[:24].lower()`
    if (
        (head[:1] in _START_1 or head[:2] in _START_2)
        and s[:24].lower().startswith(_CHROME_START)
        and _META_LINE.match(s)
    ):
        return True
    return cookies and "cookie" in s.lower() and _COOKIE.search(s) is not None


def _has_cookies(lines: list[str]) -> bool:
    """Whether a page's text mentions cookies at all (else no line is a cookie banner)."""
    joined = "\n".join(lines)
    return any(w in joined for w in ("cookie", "Cookie", "COOKIE"))


def chrome_lines(lines: list[str]) -> list[bool]:
    """For each line of a page as text, whether it is chrome, not body: page metadata (a
    meta-tag / JSON-LD block a browser tool printed, `og:` / `twitter:` / viewport / robots
    lines, raw meta or script tags), a cookie banner, a navigation block or a lone menu entry.
    Real agents' pages carry such blocks at their top (issue 48: 30% of what purification kept
    of Who&When's pages), and they answer no question about the page's content."""
    return [kind == "chrome" for kind in line_kinds(lines, _has_cookies(lines))]


# --- what `extract` makes of each line of a page as text ------------------------------------

# Lines that say what the page is (kept verbatim wherever they are, cheap and useful).
# (possessive quantifiers: what they take they keep, so a long line that fails fails at once
# instead of backtracking through every split of it; they match exactly the same lines)
_HEAD_LINE = re.compile(
    r"^\s*+(?:#{1,3}\s|(?:title|url|source|address|link|date|published|author|page)\s*+:|"
    r"https?://\S++\s*+$)",
    re.IGNORECASE,
)
_HEAD_MAX = 300  # a "metadata" line longer than this is body text
# A short `label: value` line (a fact-table row as `strip_markup` writes it): always kept.
# A list item (`- Icon: Person`, `1. Board: ...`) is a line of its paragraph, not a table row:
# on real pages such lines are menus and results, and they took the rows' half of the budget.
_ROW_LINE = re.compile(r"^\s*+(?![-*•+>]\s|\d{1,3}[.)]\s)[^\s:\[][^:\n]{0,59}+:\s++\S.{0,79}+$")

LineKind = Literal["row", "head", "chrome", "body"]


def _plain_kind(line: str) -> LineKind:
    """A line that is no chrome: a `label: value` row, a heading / title / URL line, or a line
    of a body paragraph (the regexes only where a colon or a `#` could make them match)."""
    colon = ":" in line
    if colon and _ROW_LINE.match(line):
        return "row"
    if (colon or "#" in line) and _HEAD_LINE.match(line) and len(line) <= _HEAD_MAX:
        return "head"
    return "body"


def line_kinds(lines: list[str], cookies: bool) -> list[LineKind | None]:
    """Each line's kind, None for a blank one: "chrome" (`chrome_lines`), else a row, a heading
    or body (`_plain_kind`); `cookies`: whether the page mentions cookies at all. One pass
    over the lines tells chrome and the rest apart (issue 50: three passes, with a function
    call per line, cost a third of an 8,000-character page's purification); cookie banners
    are looked for after it, only on the lines that say "cookie" (`_cookie_lines`)."""
    out: list[LineKind | None] = []
    depth = 0  # brackets still open in a metadata block
    nav = False  # inside a navigation block (until a blank line)
    for line in lines:
        s = line.strip()
        if not s:
            nav = False
            out.append(None)
        elif depth > 0 or (s[0] in '"tT' and _META_BLOCK.match(s)):
            opens = line.count("{") + line.count("[") - line.count("}") - line.count("]")
            depth = max(0, depth + opens)
            out.append("chrome")
        elif nav:
            out.append("chrome")
        elif len(s) <= _NAV_MAX and (word := s.strip(_NAV_DECOR).lower()) in _NAV_ANY:
            nav = word in _NAV_LABELS
            out.append("chrome")
        elif (
            (s[0] in _START_1 or s[:2] in _START_2_RAW)  # `_chrome_line`'s metadata
            and s[:24].lower().startswith(_CHROME_START)
            and _META_LINE.match(s)
        ):
            out.append("chrome")
        elif ":" in line or "#" in line:
            out.append(_plain_kind(line))
        else:
            out.append("body")
    if cookies:
        for i in _cookie_lines(lines):
            if out[i] not in (None, "chrome") and _COOKIE.search(lines[i].strip()):
                out[i] = "chrome"
    return out


def _cookie_lines(lines: list[str]) -> list[int]:
    """The indices of the lines whose lower case says "cookie", from the whole text made
    ASCII (one byte per character, the Kelvin sign a "k": no other character lower-cases to a
    letter of "cookie") and lower-cased at C speed, line breaks kept."""
    low = "\n".join(lines).replace("\u212a", "k").encode("ascii", "replace").lower()
    out: list[int] = []
    at = low.find(b"cookie")
    line, last = 0, 0
    while at >= 0:
        line += low.count(b"\n", last, at)
        out.append(line)
        last = low.find(b"\n", at)
        if last < 0:
            break
        at = low.find(b"cookie", last)
    return out
