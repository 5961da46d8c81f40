"""Tokenising for purification's ranking, in pure Python: the words of a text, lower-cased.

A word is what the pattern `(?u)\\b[^\\W_]+\\b` finds in the lower-cased text (scikit-learn's
token pattern, `_rank.TOKEN`): a run of word characters (`\\w`: letters, digits, `_`) that
holds no `_`. Here the text is lower-cased and every other character made a space by C-speed
passes only (`str.split` then gives the runs, and `_rank` drops those holding `_` with the stop
words): ASCII text (most tool output) by one `str.translate`; text with a little non-ASCII by
one `bytes.translate` over its UTF-8 (the ASCII bytes) and one `str.replace` per distinct
non-ASCII character that changes (a capital, a punctuation mark); text mostly non-ASCII by
`str.lower`, the same `bytes.translate` and one `str.replace` per distinct non-ASCII
punctuation mark. (A numpy table pass over the code points did it until issue 49, when numpy
left the core; a Python step per character or per word, as `str.translate` over non-ASCII
text or a regex match per word, cost five to ten times more on Who&When's pages.)
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable

SEP = "\x01"  # between documents: kept as a word of its own, in no document's text
_SIGMA = "\u03a3"  # the one letter `str.lower` lower-cases by its context (final or not)
_ASCII = bytes(range(128))
_DENSE = 4  # text whose UTF-8 is over 1/_DENSE non-ASCII bytes is lower-cased whole
_RUN_COST = 3000  # a run's error-handler call costs about this many characters of replace
_OTHERS_MAX = 64  # distinct punctuation marks of a dense text replaced one by one, at most
_OTHER = re.compile(r"[^\x00-\x7f\w]")  # a non-ASCII character that is no word character


def _word(c: str) -> bool:
    """A word character (`\\w`), or `SEP`."""
    return c.isalnum() or c in ("_", SEP)


def _alnum(c: str) -> bool:
    """A letter or a digit."""
    return c.isalnum()


class _Rule:
    """One way to make a text's words: which characters are kept (the rest become spaces) and
    whether the text is lower-cased first, with its tables (the non-ASCII part filled as
    characters are met) and its codec error handler (`_by_runs`)."""

    def __init__(self, name: str, keep: Callable[[str], bool], lower: bool) -> None:
        self.keep, self.lower = keep, lower
        self.ascii = str.maketrans({b: " " for b in range(128) if not keep(chr(b))})
        table = bytearray(range(256))  # ASCII bytes mapped, the bytes of the rest kept
        for b in range(128):
            c = chr(b).lower() if lower else chr(b)
            table[b] = ord(c) if keep(c) else 32
        self.bytes = bytes(table)
        self.swaps: dict[str, str | None] = {}  # non-ASCII character -> what it becomes
        self.table = _Table(self)
        self.errors = f"overseer.{name}"
        codecs.register_error(self.errors, self.run)

    def mapped(self, c: str) -> str:
        """What `c` becomes, alone: lower-cased (if the rule lowers), non-kept made spaces."""
        low = c.lower() if self.lower else c
        return "".join(x if self.keep(x) else " " for x in low)

    def swap(self, c: str) -> str | None:
        """What non-ASCII `c` becomes when replaced everywhere at once (None: it stays; "": it
        cannot be, as what it becomes would change again under a later replacement)."""
        if c not in self.swaps:
            new = self.mapped(c)
            safe = all(x.isascii() or self.mapped(x) == x for x in new)
            self.swaps[c] = (None if new == c else new) if safe else ""
        return self.swaps[c]

    def run(self, exc: UnicodeError) -> tuple[bytes, int]:
        """The codec error handler: a run of non-ASCII characters, mapped, as UTF-8."""
        assert isinstance(exc, UnicodeEncodeError)
        return exc.object[exc.start : exc.end].translate(self.table).encode(), exc.end


class _Table(dict[int, str]):
    """A rule's `str.translate` table for non-ASCII characters, filled as they are met."""

    def __init__(self, rule: _Rule) -> None:
        super().__init__()
        self.rule = rule

    def __missing__(self, code: int) -> str:
        self[code] = got = self.rule.mapped(chr(code))
        return got


_LOWER_WORD = _Rule("lower-words", _word, True)
_WORD = _Rule("words", _word, False)  # for text lower-cased already
_ALNUM = _Rule("alnum", _alnum, False)


def _mapped(text: str, rule: _Rule) -> str:
    """Non-ASCII `text` by `rule` (see the module): its ASCII by one `bytes.translate` of its
    UTF-8, then each distinct non-ASCII character that changes replaced everywhere (one
    `str.replace` of a character by one runs at C speed); by runs (`_by_runs`) when that
    would take many replacements over a long text, or on a lone surrogate; lower-cased whole
    (`_dense`) when most of it is non-ASCII, or when it holds a capital sigma."""
    if rule.lower and _SIGMA in text:
        return _dense(text, rule)
    try:
        data = text.encode().translate(rule.bytes)
    except UnicodeEncodeError:
        return _by_runs(text, rule)
    rest = data.translate(None, _ASCII).decode()
    if len(rest) * _DENSE > len(data):
        return _dense(text, rule)
    swaps: list[tuple[str, str]] = []
    known = rule.swaps
    for c in set(rest):
        new = known[c] if c in known else rule.swap(c)
        if new is not None:
            swaps.append((c, new))
    if "" in (new for _, new in swaps) or len(swaps) * len(text) > len(rest) * _RUN_COST:
        return _by_runs(text, rule)
    out = data.decode()
    for c, new in swaps:
        out = out.replace(c, new)
    return out


def _by_runs(text: str, rule: _Rule) -> str:
    """`text` by `rule` through its ASCII encoding, each run of non-ASCII characters handed
    to the rule's error handler (one call per run, not per character)."""
    return text.encode("ascii", rule.errors).translate(rule.bytes).decode()


def _dense(text: str, rule: _Rule) -> str:
    """`text` by `rule`, lower-cased whole (`str.lower`: a capital sigma by its context), its
    ASCII mapped by bytes, then each distinct non-ASCII character that is no word character
    made a space, found one after another by a regex search (not one match per occurrence);
    by runs after `_OTHERS_MAX` of them."""
    low = text.lower() if rule.lower else text
    raw = low.encode("utf-8", "surrogatepass").translate(rule.bytes)
    out = raw.decode("utf-8", "surrogatepass")
    at = _OTHER.search(out)
    for _ in range(_OTHERS_MAX):
        if at is None:
            return out
        out = out.replace(at.group(), " ")
        at = _OTHER.search(out, at.start())
    return out if at is None else _by_runs(out, _ALNUM if rule is _ALNUM else _WORD)


def warm() -> None:
    """Settle the Latin-1 characters' replacements now, not on the first page read."""
    for rule in (_LOWER_WORD, _ALNUM):
        for b in range(128, 256):
            rule.swap(chr(b))


def lower_words(text: str) -> str:
    """`text` lower-cased (as `str.lower` does it) with every character that is not part of
    a word (nor `SEP`) made a space: the same words, split at spaces, as a map of each
    character of `text.lower()` (runs of spaces may differ in length)."""
    if text.isascii():
        return text.lower().translate(_LOWER_WORD.ascii)
    return _mapped(text, _LOWER_WORD)


def alnum_words(text: str) -> list[str]:
    """The runs of letters and digits of `text`, in order: what `re.findall(r"[^\\W_]+", text)`
    gives, by a table pass instead of a regex scan (about five times faster on a long page)."""
    if text.isascii():
        return text.translate(_ALNUM.ascii).split()
    return _mapped(text, _ALNUM).split()
