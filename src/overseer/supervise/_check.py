"""LLM-free checks of what the LLM supervisor writes, and how long its reply may be.

A replacement observation written by a (small) model is accepted only if its links, numbers
and names are found in what it replaces (nothing invented) and it keeps enough of the source's
facts and words (not the supervisor's own instructions); the reply's token limit follows the
length of what the chosen context asks it to write.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_URL = re.compile(r"https?://[^\s<>\"')\]]+")
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
_NAME = re.compile(r"\b[A-Z][a-zA-Z]{2,}(?:\s+[A-Z][a-zA-Z]{2,})*")
_WORD = re.compile(r"[a-zA-Z]{4,}")
# Capitalised words a rewrite may add without inventing a fact.
_FREE_NAMES = frozenset(
    [
        "the",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "observation",
        "summary",
        "page",
        "result",
        "results",
        "note",
        "source",
        "sources",
        "title",
        "address",
        "link",
        "links",
        "section",
        "sections",
        "key",
        "main",
        "and",
        "but",
        "for",
        "with",
        "from",
        "about",
        "also",
        "other",
        "content",
        "contents",
        "details",
        "information",
        "overview",
    ]
)

CHARS_PER_TOKEN = 3.5  # a conservative estimate for English and code
REPLY_BASE = 160  # tokens for the analysis, the action and the JSON around them


def _urls(text: str) -> set[str]:
    return {u.rstrip(".,;:") for u in _URL.findall(text)}


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "").rstrip(".") for n in _NUMBER.findall(_URL.sub(" ", text))}


def _names(text: str) -> set[str]:
    """Capitalised word runs that are not just a sentence's first word (nor common words)."""
    flat = _URL.sub(" ", text)
    out = set()
    for m in _NAME.finditer(flat):
        words = m.group(0).split()
        before = flat[: m.start()].rstrip()
        if not before or before[-1] in ".!?:;\n-*#>|([\"'":
            words = words[1:]  # a sentence start is capitalised anyway
        words = [w for w in words if w.lower() not in _FREE_NAMES]
        if words:
            out.add(" ".join(words))
    return out


def rewrite_problem(rewrite: str, source: str, *, min_overlap: float = 0.6) -> str:
    """Why `rewrite` may not replace `source` (empty: it may). LLM-free and deterministic.

    Every link and number of the rewrite must occur in the source, and most of its names and
    words; when the source has several links and numbers, the rewrite keeps a quarter of them.
    """
    if not rewrite.strip():
        return "the rewrite is empty"
    low = source.lower()
    flat = low.replace(",", "")
    bad_urls = sorted(u for u in _urls(rewrite) if u.lower() not in low)
    if bad_urls:
        return f"links not in the original: {', '.join(bad_urls[:3])}"
    bad_nums = sorted(n for n in _numbers(rewrite) if n not in _numbers(source) and n not in flat)
    if bad_nums:
        return f"numbers not in the original: {', '.join(bad_nums[:5])}"
    names = _names(rewrite)
    missing = sorted(n for n in names if n.lower() not in low)
    if names and len(missing) > 0.2 * len(names):
        return f"names not in the original: {', '.join(missing[:5])}"
    words = [w.lower() for w in _WORD.findall(rewrite)]
    if words:
        found = sum(w in low for w in words) / len(words)
        if found < min_overlap:
            return f"only {found:.0%} of its words come from the original"
    facts = _urls(source) | _numbers(source)
    if len(facts) >= 3:
        kept = _urls(rewrite) | _numbers(rewrite)
        if not kept & facts:
            return f"keeps none of the original's {len(facts)} links and numbers"
    return ""


def reply_budget(allowed: Sequence[str], context: str, chars: int, cap: int) -> int:
    """Tokens a decision reply may use: what the permitted actions ask it to write, capped.

    A purification is asked to be about half as long as its source; an error correction about
    as long as the observation; guidance and a verification question are a few sentences.
    """
    need = 0
    if "correct_observation" in allowed:
        share = 1.0 if context == "error" else 0.5
        need = int(chars * share / CHARS_PER_TOKEN)
    if "provide_guidance" in allowed:
        need = max(need, 120)
    if "run_verification" in allowed:
        need = max(need, 80)
    return max(min(REPLY_BASE + need, cap), min(REPLY_BASE + 32, cap))
