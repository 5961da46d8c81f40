"""Numbers in what agents read and write, compared as tokens: which values a tool result
supports as the answer to a question (issue 48: after overseer closed its tools, a 0.5B agent
answered "1" after a tool that always failed, or "668" from "mentioned 668 times in older
accounts" on a page without the fact).

A value is supported when a tool result states it as a labelled fact whose label is what the
question asks about (`Height: 55 m` for "How tall ...?", a table row), or writes it, outside a
fact of another label, in a sentence that names something the question names (a capitalised
word of the question that does not open a sentence, e.g. "Dunmo" or "Bridge" of "How long is
the Dunmo Bridge?"). A fact of another label ("Spans: 30" for "How long ...?") is a distractor,
not support. An HTML page is read as the text it shows, each block a line and each cell
a sentence of its own, so a page's title does not lend its name to the filler after it.
Filler prose that names nothing of the question supports nothing; a question that names
nothing leaves every number read supported.
"""

from __future__ import annotations

import html
import re

NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
#: a labelled fact: a short label, a colon or a table cell's edge, then the value
FACT = re.compile(
    r"(?:^|[\n;|>:])\s*(?P<label>[A-Za-z][A-Za-z ()/%'-]{0,40}?)\s*(?::|\|)\s*"
    r"[^\n;|<]{0,12}?(?<![\w.])(?P<value>\d[\d,]*(?:\.\d+)?)"
)
#: what a "how ADJECTIVE" question asks for, as a label names it
_ASKS = {
    "tall": ("height", "elevation"),
    "high": ("height", "elevation", "altitude"),
    "long": ("length",),
    "wide": ("width", "breadth"),
    "deep": ("depth",),
    "old": ("age",),
    "far": ("distance",),
    "heavy": ("weight", "mass"),
    "big": ("size", "area"),
    "large": ("size", "area"),
    "much": ("cost", "price", "amount"),
}
#: question words that say nothing of which fact is asked
_PLAIN = frozenset(
    re.findall(
        r"\w+",
        "what which who whom whose how many does did was were are the and for with from into "
        "its their this that there have has had hold holds held work works year",
    )
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+|\s*\|\s*")
#: a sentence that asks: from its start to its question mark
_QUESTION = re.compile(r"[^.!?\n]*\?")
_URL = re.compile(r"\S+://\S+")
_WORD = re.compile(r"[A-Za-z][\w'-]*")
_HTML = re.compile(r"<(?:p|div|td|th|tr|li|h[1-6]|table|span|a|br|main|nav)\b", re.I)
_SKIPPED = re.compile(r"<(script|style)\b.*?</\1\s*>", re.I | re.S)
_CELL_GAP = re.compile(r"</t[dh]\s*>\s*<t[dh]\b[^<>]*>", re.I)
_BLOCK = re.compile(
    r"<br\s*/?>|</?(?:p|div|tr|li|h[1-6]|table|thead|tbody|section|article|header|footer|"
    r"nav|main|ul|ol|dl|dt|dd|figure|figcaption|caption|blockquote|pre|aside)\b[^<>]*>",
    re.I,
)
#: a tag; one cut short ("<a class="nav-lin</nav>") is left as text, not read to the next ">"
_TAG = re.compile(r"<[^<>]*>")


def numbers_in(text: str) -> set[str]:
    """The numbers written in `text`, without thousands separators."""
    return {v.replace(",", "") for v in NUMBER.findall(text or "")}


def fact_numbers(text: str) -> set[str]:
    """The numbers `text` states as labelled facts (`label: value`, `| label | value |`)."""
    return {m["value"].replace(",", "") for m in FACT.finditer(text or "")}


def asked_words(question: str) -> set[str]:
    """What `question` asks about, as words a fact's label may use: the plain words of its
    sentences that end in "?" (all of it when none does; neither the names of `question_names`
    nor question words) and the nouns of a "how tall/long/..."."""
    text = _URL.sub(" ", question or "")
    asking = _QUESTION.findall(text)
    words = {w.lower() for w in _WORD.findall(" ".join(asking) if asking else text)}
    asked = {w for w in words - question_names(question) - _PLAIN if len(w) > 2}
    for w in words & _ASKS.keys():
        asked.update(_ASKS[w])
    return asked


def _same_word(a: str, b: str) -> bool:
    """Two words of one stem, crudely: equal, or one is the other's first 4+ letters plus an
    ending ("open" / "opened", "founded" / "founding")."""
    n = min(len(a), len(b))
    return a == b or (n >= 4 and a[:n] == b[:n] and max(len(a), len(b)) - n <= 3)


def label_asked(label: str, asked: set[str]) -> bool:
    """Whether a fact labelled `label` is what a question asking about `asked` asks for."""
    words = {w.lower() for w in _WORD.findall(label)}
    return any(_same_word(w, a) for w in words for a in asked)


def question_names(question: str) -> set[str]:
    """The lowercased capitalised words of `question` that do not open one of its sentences
    (addresses left out): what a sentence about the question's subject names."""
    names: set[str] = set()
    for sentence in _SENTENCE_END.split(_URL.sub(" ", question or "")):
        words = _WORD.findall(sentence)
        names.update(w.lower() for w in words[1:] if w[0].isupper() and len(w) > 2)
    return names


def page_text(text: str) -> str:
    """`text` as lines of text when it is HTML (a table row's cells joined by " | ", a block
    element a line, scripts, styles and tag attributes dropped), else `text` as it is: the
    values a page states are read from what it shows, not from its markup."""
    if not _HTML.search(text or ""):
        return text or ""
    t = _CELL_GAP.sub(" | ", _SKIPPED.sub(" ", text))
    return html.unescape(_TAG.sub(" ", _BLOCK.sub("\n", t)))


def supported_numbers(text: str, question: str) -> set[str]:
    """The values tool result `text` supports as an answer to `question`: its labelled facts,
    and the numbers of its sentences that name something the question names (all of its
    numbers when the question names nothing)."""
    text = page_text(text)
    names, asked = question_names(question), asked_words(question)
    if not names:  # nothing to tell the question's sentences from filler: all of them count
        return numbers_in(text)
    found: set[str] = set()

    def fact(m: re.Match[str]) -> str:  # an asked fact supports its value; another is blanked
        if not asked or label_asked(m["label"], asked):
            found.add(m["value"].replace(",", ""))
            return m[0]
        return m[0][: m.start("value") - m.start()]

    text = FACT.sub(fact, text)
    for sentence in _SENTENCE_END.split(text):
        words = {w.lower() for w in _WORD.findall(sentence)}
        if words & names:
            found |= numbers_in(sentence)
    return found
