"""Numbers in what agents read and write, compared as tokens: which values a tool result
supports as the answer to a question (issue 48: after overseer closed its tools, a 0.5B agent
answered "1" after a tool that always failed, or "668" from "mentioned 668 times in older
accounts" on a page without the fact).

A value is supported when a tool result states it as a labelled fact (`Height: 55 m`, a table
row) or writes it in a sentence that names something the question names (a capitalised word
of the question that does not open a sentence, e.g. "Dunmo" or "Bridge" of "How long is the
Dunmo Bridge?"). An HTML page is read as the text it shows, each block a line and each cell
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
    r"(?:^|[\n;|>])\s*[A-Za-z][A-Za-z ()/%'-]{0,40}?\s*(?::|\|)\s*"
    r"[^\n;|<]{0,12}?(?<![\w.])(\d[\d,]*(?:\.\d+)?)"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+|\s*\|\s*")
_URL = re.compile(r"\S+://\S+")
_WORD = re.compile(r"[A-Za-z][\w'-]*")
_HTML = re.compile(r"<(?:p|div|td|th|tr|li|h[1-6]|table|span|a|br|main|nav)\b", re.I)
_SKIPPED = re.compile(r"<(script|style)\b.*?</\1\s*>", re.I | re.S)
_CELL_GAP = re.compile(r"</t[dh]\s*>\s*<t[dh]\b[^>]*>", re.I)
_BLOCK = re.compile(
    r"<br\s*/?>|</?(?:p|div|tr|li|h[1-6]|table|thead|tbody|section|article|header|footer|"
    r"nav|main|ul|ol|dl|dt|dd|figure|figcaption|caption|blockquote|pre|aside)\b[^>]*>",
    re.I,
)
_TAG = re.compile(r"<[^>]*>")


def numbers_in(text: str) -> set[str]:
    """The numbers written in `text`, without thousands separators."""
    return {v.replace(",", "") for v in NUMBER.findall(text or "")}


def fact_numbers(text: str) -> set[str]:
    """The numbers `text` states as labelled facts (`label: value`, `| label | value |`)."""
    return {n.replace(",", "") for n in FACT.findall(text or "")}


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
    names = question_names(question)
    if not names:  # nothing to tell the question's sentences from filler: all of them count
        return numbers_in(text)
    found = fact_numbers(text)
    for sentence in _SENTENCE_END.split(text):
        words = {w.lower() for w in _WORD.findall(sentence)}
        if words & names:
            found |= numbers_in(sentence)
    return found
