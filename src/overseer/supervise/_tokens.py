"""Tokenising for purification's ranking, vectorised: the words of a text, lower-cased.

A word is what the pattern `(?u)\\b[^\\W_]+\\b` finds in the lower-cased text (scikit-learn's
token pattern, `_rank.TOKEN`): a run of word characters (`\\w`: letters, digits, `_`) that
holds no `_`. Here the text is lower-cased and every other character made a space in one
table pass (ASCII) or one numpy pass over its code points (`_Map`: `str.lower` over
non-ASCII text cost as much as the rest of the tokenising, issue 50); `str.split` then gives
the runs, and `_rank` drops those holding `_` with the stop words. (Numbering the words by a
vectorised hash instead of a dictionary was tried: slower below a million characters.)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

SEP = "\x01"  # between documents: kept as a word of its own, in no document's text
_SIGMA = 0x3A3  # the one letter `str.lower` lower-cases by its context (final or not)
_SPACE = 32


_AGAIN = 0xFFFFFFFF  # a character `str.lower` must lower-case in its text (`_lower_word`)
_PAGE = 8  # bits: the tables are built 256 code points at a time, when first met


def _lower_word(c: str) -> int:
    """A character lower-cased, if a word character (`\\w`, or `SEP`), else a space; `_AGAIN`
    when its lower case is more than one character or depends on the text (capital sigma)."""
    low = c.lower()
    if len(low) != 1 or ord(c) == _SIGMA:
        return _AGAIN
    return ord(low) if low.isalnum() or low in ("_", SEP) else _SPACE


def _word(c: str) -> int:
    """A word character (`\\w`, or `SEP`) as it is, anything else a space."""
    return ord(c) if c.isalnum() or c in ("_", SEP) else _SPACE


def _alnum(c: str) -> int:
    """A letter or a digit as it is, anything else a space."""
    return ord(c) if c.isalnum() else _SPACE


class _Map:
    """A table from each code point to the one `rule` makes of it, over all of Unicode, each
    page of 256 built the first time a text holds one of its characters (a text meets few
    pages; the untouched rest of the table is never written, so it takes no memory)."""

    def __init__(self, rule: Callable[[str], int]) -> None:
        self.rule = rule
        self.table = np.zeros(0x110000, dtype=np.uint32)
        self.built = np.zeros(0x110000 >> _PAGE, dtype=bool)

    def __call__(self, cp: np.ndarray) -> np.ndarray:
        """The code points `cp` mapped."""
        pages = cp >> _PAGE
        missing = ~self.built.take(pages)
        if missing.any():
            for page in np.unique(pages[missing]).tolist():
                first = page << _PAGE
                codes = range(first, first + (1 << _PAGE))
                self.table[first : first + (1 << _PAGE)] = [self.rule(chr(c)) for c in codes]
                self.built[page] = True
        return self.table.take(cp)


_LOWER_WORD, _WORD, _ALNUM = _Map(_lower_word), _Map(_word), _Map(_alnum)
# the same for ASCII text, by `str.translate` (C speed, no numpy); `_WORD`'s after `str.lower`
_WORD_SPACES = str.maketrans({c: " " for c in range(128) if _word(chr(c)) == _SPACE})
_ALNUM_SPACES = str.maketrans({c: " " for c in range(128) if _alnum(chr(c)) == _SPACE})


def _code_points(text: str) -> np.ndarray:
    """The code points of `text` (a lone surrogate too: it is no word character)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _text(codes: np.ndarray) -> str:
    return codes.tobytes().decode("utf-32-le")


def warm() -> None:
    """Build the tables' pages of ASCII and Latin-1 now, not on the first page read."""
    for table in (_LOWER_WORD, _WORD, _ALNUM):
        table(np.arange(256, dtype=np.uint32))


def lower_words(text: str) -> str:
    """`text` lower-cased (as `str.lower` does it) with every character that is not part of
    a word (nor `SEP`) made a space. ASCII text (most tool output) takes one C-speed table
    pass; other text one table pass over its code points (`str.lower` over it cost as much
    as the rest of the tokenising, issue 50), after `str.lower` only when a character's lower
    case is more than one character or depends on the text (a capital sigma)."""
    if text.isascii():
        return text.lower().translate(_WORD_SPACES)
    codes = _LOWER_WORD(_code_points(text))
    if (codes == _AGAIN).any():
        codes = _WORD(_code_points(text.lower()))
    return _text(codes)


def alnum_words(text: str) -> list[str]:
    """The runs of letters and digits of `text`, in order: what `re.findall(r"[^\\W_]+", text)`
    gives, by a table pass instead of a regex scan (about five times faster on a long page)."""
    if text.isascii():
        return text.translate(_ALNUM_SPACES).split()
    return _text(_ALNUM(_code_points(text))).split()
