"""Numbers in what agents read and write, compared as tokens: which values a tool result
supports as the answer to a question (issue 48: after overseer closed its tools, a 0.5B agent
answered "1" after a tool that always failed, or "668" from "mentioned 668 times in older
accounts" on a page without the fact).

A value is supported when a tool result states it as a labelled fact (`Height: 55 m`, a table
row) or writes it in a sentence that names something the question names (a capitalised word
of the question that does not open a sentence, e.g. "Dunmo" or "Bridge" of "How long is the
Dunmo Bridge?"). Filler prose that names nothing of the question supports nothing; a question
that names nothing leaves every number read supported.
"""

from __future__ import annotations

import re

NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
#: a labelled fact: a short label, a colon or a table cell's edge, then the value
FACT = re.compile(
    r"(?:^|[\n;|>])\s*[A-Za-z][A-Za-z ()/%'-]{0,40}?\s*(?::|\|)\s*"
    r"[^\n;|<]{0,12}?(?<![\w.])(\d[\d,]*(?:\.\d+)?)"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_URL = re.compile(r"\S+://\S+")
_WORD = re.compile(r"[A-Za-z][\w'-]*")


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


def supported_numbers(text: str, question: str) -> set[str]:
    """The values tool result `text` supports as an answer to `question`: its labelled facts,
    and the numbers of its sentences that name something the question names (all of its
    numbers when the question names nothing)."""
    names = question_names(question)
    if not names:  # nothing to tell the question's sentences from filler: all of them count
        return numbers_in(text)
    found = fact_numbers(text)
    for sentence in _SENTENCE_END.split(text or ""):
        words = {w.lower() for w in _WORD.findall(sentence)}
        if words & names:
            found |= numbers_in(sentence)
    return found
